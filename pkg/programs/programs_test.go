package programs

import (
	"slices"
	"strings"
	"testing"
)

func TestNamesResolve(t *testing.T) {
	names := Names()
	if !slices.IsSorted(names) {
		t.Errorf("Names() is not sorted: %q", names)
	}
	if len(slices.Compact(slices.Clone(names))) != len(names) {
		t.Errorf("Names() has duplicates: %q", names)
	}
	for _, name := range names {
		if Lookup(name) == nil {
			t.Errorf("Lookup(%q) = nil", name)
		}
	}
	for _, name := range []string{"", "sh", "nosuch", "wget"} {
		if Lookup(name) != nil {
			t.Errorf("Lookup(%q) is a program", name)
		}
	}
}

func TestOptionsAndUsage(t *testing.T) {
	runCases(t, []tc{
		{name: "--help", argv: []string{"cat", "--help"}, stderr: usage("cat")},
		{name: "--help of test is an operand", argv: []string{"test", "--help"}},
		{name: "bundled options", argv: []string{"ls", "-1a", "/root"}, stdout: ".\n..\n"},
		{name: "options after operands", argv: []string{"ls", "/root", "-a"}, stdout: ".\n..\n"},
		{name: "-- ends options", argv: []string{"ls", "--", "-a"}, stderr: "ls: -a: No such file or directory\n", status: 1},
		{name: "argument attached", argv: []string{"head", "-n1", "/etc/group"}, stdout: "root:x:0:\n"},
		{name: "missing argument", argv: []string{"head", "-n"}, stderr: "head: option requires an argument -- 'n'\n" + usage("head"), status: 1},
		{name: "long option", argv: []string{"mkdir", "--mode=700", "/tmp/x"}, check: modeIs("/tmp/x", 0o700)},
		{name: "long option prefix", argv: []string{"uname", "--mach"}, stdout: "x86_64\n"},
		{name: "long option argument apart", argv: []string{"date", "--date", "@0", "+%s"}, stdout: "0\n"},
		{name: "unknown long option", argv: []string{"rm", "--force"}, stderr: "rm: unrecognized option '--force'\n" + usage("rm"), status: 1},
		{name: "long option without argument", argv: []string{"mkdir", "--parents=x"}, stderr: "mkdir: option '--parents' doesn't allow an argument\n" + usage("mkdir"), status: 1},
		{name: "long option missing argument", argv: []string{"date", "--date"}, stderr: "date: option '--date' requires an argument\n" + usage("date"), status: 1},
		{name: "commands stop options", argv: []string{"env", "ls", "-a", "/root"}, stdout: ".\n..\n"},
	})
}

// Every applet that shows a usage has busybox's text in usage.txt.
func TestUsageTexts(t *testing.T) {
	for _, name := range Names() {
		text, ok := usageTexts()[name]
		switch {
		case applets[name].noHelp || name == "busybox":
			if ok {
				t.Errorf("%s never shows a usage, yet usage.txt has a text for it", name)
			}
		case !ok:
			t.Errorf("%s: no text in usage.txt (go run ./hack/usagetext)", name)
		case !strings.HasPrefix(text, "\nUsage: "+name) && text != "\nNo help available":
			t.Errorf("%s: its text starts %q", name, text[:min(len(text), 30)])
		}
	}
	runCases(t, []tc{
		{name: "cat --help", argv: []string{"cat", "--help"}, stderr: banner + "\nUsage: cat [-nbvteA] [FILE]...\n\nPrint FILEs to stdout\n\n\t-n\tNumber output lines\n\t-b\tNumber nonempty lines\n\t-v\tShow nonprinting characters as ^x or M-x\n\t-t\t...and tabs as ^I\n\t-e\t...and end lines with $\n\t-A\tSame as -vte\n"},
		{name: "pwd bad option", argv: []string{"pwd", "-Z"}, stderr: "pwd: invalid option -- 'Z'\n" + banner + "\nUsage: pwd\n\nPrint the full filename of the current working directory\n", status: 1},
	})
}
