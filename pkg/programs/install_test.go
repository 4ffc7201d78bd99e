package programs

import "testing"

// install does what busybox 1.36.1's does (Debian's busybox has no install: checked
// against busybox 1.36.1 built from its source, with test/difftest's
// text-applets/install-*).
func TestInstall(t *testing.T) {
	files := map[string]string{"/src": "hi\n", "/dir/": ""}
	runCases(t, []tc{
		{name: "file", argv: []string{"install", "/src", "/dst"}, files: files, check: checks(fileIs("/dst", "hi\n"), modeIs("/dst", 0o755))},
		{name: "mode", argv: []string{"install", "-m", "640", "/src", "/dst"}, files: files, check: modeIs("/dst", 0o640)},
		{name: "bad mode", argv: []string{"install", "-m", "bad", "/src", "/dst"}, files: files, check: modeIs("/dst", 0o7777)},
		{name: "into a directory", argv: []string{"install", "/src", "/dir"}, files: files, check: fileIs("/dir/src", "hi\n")},
		{name: "target directory", argv: []string{"install", "-t", "/dir", "/src"}, files: files, check: fileIs("/dir/src", "hi\n")},
		{name: "directories", argv: []string{"install", "-d", "-m", "700", "/a/b", "/c"}, check: checks(modeIs("/a", 0o755), modeIs("/a/b", 0o700), modeIs("/c", 0o700))},
		{name: "leading directories", argv: []string{"install", "-D", "/src", "/x/y/z"}, files: files, check: checks(fileIs("/x/y/z", "hi\n"), modeIs("/x/y", 0o755))},
		{name: "owner", argv: []string{"install", "-o", "www-data", "-g", "1", "/src", "/dst"}, files: files, check: ownerIs("/dst", 33, 1)},
		{name: "verbose", argv: []string{"install", "-v", "/src", "/dst"}, files: files, stdout: "'/src' -> '/dst'\n"},
		{name: "unknown user", argv: []string{"install", "-o", "nouser", "/src", "/dst"}, files: files, stderr: "install: unknown user nouser\n", status: 1, check: missing("/dst")},
		{name: "missing source", argv: []string{"install", "/nosuch", "/dst"}, stderr: "install: can't stat '/nosuch': No such file or directory\n", status: 1},
		{name: "directory source", argv: []string{"install", "/dir", "/dst"}, files: files, stderr: "install: omitting directory '/dir'\n", status: 1},
		{name: "same file", argv: []string{"install", "/src", "/src"}, files: files, stderr: "install: '/src' and '/src' are the same file\n", status: 1},
	})
}
