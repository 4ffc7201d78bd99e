package programs

import "testing"

// diff prints the hunks busybox 1.35's does (test/difftest's archive-applets.txtar, and
// 2,000 random pairs of files compared by hand with Debian's busybox).
func TestDiff(t *testing.T) {
	abc := map[string]string{"/x": "a\nb\nc\n", "/y": "a\nB\nc\n", "/n": "a\nb", "/e": "",
		"/m": "1\n2\n3\n4\n5\n6\n7\n8\n", "/o": "5\n6\n7\n1\n2\n3\n4\n8\n", "/w": "a  b\n", "/v": "a b\n"}
	runCases(t, []tc{
		{name: "change", argv: []string{"diff", "/x", "/y"}, files: abc,
			stdout: "--- /x\n+++ /y\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n", status: 1},
		{name: "same", argv: []string{"diff", "/x", "/x"}, files: abc},
		{name: "no newline", argv: []string{"diff", "/x", "/n"}, files: abc,
			stdout: "--- /x\n+++ /n\n@@ -1,3 +1,2 @@\n a\n-b\n-c\n+b\n\\ No newline at end of file\n", status: 1},
		{name: "from empty", argv: []string{"diff", "-U0", "/e", "/x"}, files: abc,
			stdout: "--- /e\n+++ /x\n@@ -0,0 +1,3 @@\n+a\n+b\n+c\n", status: 1},
		{name: "moved block", argv: []string{"diff", "/m", "/o"}, files: abc,
			stdout: "--- /m\n+++ /o\n@@ -1,8 +1,8 @@\n+5\n+6\n+7\n 1\n 2\n 3\n 4\n-5\n-6\n-7\n 8\n", status: 1},
		{name: "ignore space", argv: []string{"diff", "-b", "/w", "/v"}, files: abc},
		{name: "brief", argv: []string{"diff", "-q", "/x", "/y"}, files: abc, stdout: "Files /x and /y differ\n", status: 1},
		{name: "labels", argv: []string{"diff", "-L", "old", "-L", "new", "/x", "/y"}, files: abc,
			stdout: "--- old\n+++ new\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n", status: 1},
		{name: "missing", argv: []string{"diff", "/x", "/nosuch"}, files: abc,
			stderr: "diff: can't stat '/nosuch': No such file or directory\n", status: 2},
		{name: "binary", argv: []string{"diff", "/p", "/q"}, files: map[string]string{"/p": "a\x00b", "/q": "a\x00c"},
			stdout: "Files /p and /q differ\n", status: 1},
		{name: "directories", argv: []string{"diff", "/a", "/b"},
			files:  map[string]string{"/a/f": "1\n", "/b/f": "2\n", "/a/g": "o\n", "/a/s/": "", "/b/s/": ""},
			stdout: "--- /a/f\n+++ /b/f\n@@ -1 +1 @@\n-1\n+2\nOnly in /a: g\nCommon subdirectories: /a/s and /b/s\n", status: 1},
	})
}
