package programs

import "testing"

// comm prints what busybox 1.36.1's does (test/difftest's text-applets/comm-*).
func TestComm(t *testing.T) {
	files := map[string]string{"/x": "a\nb\nd\n", "/y": "b\nc\nd\ne"}
	runCases(t, []tc{
		{name: "columns", argv: []string{"comm", "/x", "/y"}, files: files, stdout: "a\n\t\tb\n\tc\n\t\td\n\te\n"},
		{name: "no first", argv: []string{"comm", "-1", "/x", "/y"}, files: files, stdout: "\tb\nc\n\td\ne\n"},
		{name: "common only", argv: []string{"comm", "-12", "/x", "/y"}, files: files, stdout: "b\nd\n"},
		{name: "no common", argv: []string{"comm", "-3", "/x", "/y"}, files: files, stdout: "a\n\tc\n\te\n"},
		{name: "stdin", argv: []string{"comm", "-", "/y"}, files: files, stdin: "c\n", stdout: "\tb\n\t\tc\n\td\n\te\n"},
		{name: "stdin twice", argv: []string{"comm", "-", "-"}, stdin: "a\nb\n", stdout: "a\n\tb\n"},
		{name: "missing file", argv: []string{"comm", "/x", "/nosuch"}, files: files, stderr: "comm: /nosuch: No such file or directory\n", status: 1},
		{name: "one file", argv: []string{"comm", "/x"}, files: files, stderr: banner + "\nUsage: comm [-123] FILE1 FILE2\n\nCompare FILE1 with FILE2\n\n\t-1\tSuppress lines unique to FILE1\n\t-2\tSuppress lines unique to FILE2\n\t-3\tSuppress lines common to both files\n", status: 1},
	})
}
