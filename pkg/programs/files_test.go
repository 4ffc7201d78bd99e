package programs

import (
	"fmt"
	"io/fs"
	"regexp"
	"testing"
	"time"

	"github.com/minikubelet/minikubelet/pkg/shell"
	"github.com/minikubelet/minikubelet/pkg/vfs"
)

// tree is a directory most file cases work on.
var tree = map[string]string{
	"/d/a.txt":   "hello",
	"/d/b":       "",
	"/d/.hidden": "x",
	"/d/sub/":    "",
	"/d/link":    "-> a.txt",
}

// modeIs checks a path's permission bits (as chmod speaks them).
func modeIs(p string, want uint32) func(t *testing.T, v *vfs.View) {
	return func(t *testing.T, v *vfs.View) {
		t.Helper()
		info, err := v.Lstat(p)
		if err != nil {
			t.Fatalf("stat %s: %v", p, err)
		}
		if got := unixMode(info.Mode); got != want {
			t.Errorf("%s: mode %04o, want %04o", p, got, want)
		}
	}
}

// ownerIs checks a path's owner and group.
func ownerIs(p string, uid, gid int64) func(t *testing.T, v *vfs.View) {
	return func(t *testing.T, v *vfs.View) {
		t.Helper()
		info, err := v.Lstat(p)
		if err != nil {
			t.Fatalf("stat %s: %v", p, err)
		}
		if info.UID != uid || info.GID != gid {
			t.Errorf("%s: owner %d:%d, want %d:%d", p, info.UID, info.GID, uid, gid)
		}
	}
}

// isDir checks that p is a directory.
func isDir(p string) func(t *testing.T, v *vfs.View) {
	return func(t *testing.T, v *vfs.View) {
		t.Helper()
		info, err := v.Lstat(p)
		if err != nil || !info.Mode.IsDir() {
			t.Errorf("%s is no directory (%v)", p, err)
		}
	}
}

// linksTo checks that p is a symbolic link to target.
func linksTo(p, target string) func(t *testing.T, v *vfs.View) {
	return func(t *testing.T, v *vfs.View) {
		t.Helper()
		info, err := v.Lstat(p)
		if err != nil || info.Mode&fs.ModeSymlink == 0 || info.Target != target {
			t.Errorf("%s: %v %v %q, want a link to %q", p, err, info.Mode, info.Target, target)
		}
	}
}

func TestCat(t *testing.T) {
	files := map[string]string{"/a": "1\n", "/b": "2", "/c": "a\n\nb", "/v": "a\tb\x01\xe9\n"}
	runCases(t, []tc{
		{name: "files", argv: []string{"cat", "/a", "/b"}, files: files, stdout: "1\n2"},
		{name: "missing goes on", argv: []string{"cat", "/a", "/nope", "/b"}, files: files, stdout: "1\n2",
			stderr: "cat: can't open '/nope': No such file or directory\n", status: 1},
		{name: "stdin", argv: []string{"cat"}, stdin: "x\ny\n", stdout: "x\ny\n"},
		{name: "dash and relative", argv: []string{"cat", "-", "a"}, dir: "/", files: files, stdin: "s\n", stdout: "s\n1\n"},
		{name: "directory", argv: []string{"cat", "/etc"}, stderr: "cat: read error: Is a directory\n", status: 1},
		{name: "-n numbers across files", argv: []string{"cat", "-n", "/c", "/a"}, files: files, stdout: "     1\ta\n     2\t\n     3\tb\n     4\t1\n"},
		{name: "-b", argv: []string{"cat", "-b", "/c"}, files: files, stdout: "     1\ta\n\n     2\tb\n"},
		{name: "-n missing", argv: []string{"cat", "-n", "/nope"}, stderr: "cat: /nope: No such file or directory\n", status: 1},
		{name: "-A", argv: []string{"cat", "-A", "/v"}, files: files, stdout: "a^Ib^AM-i$\n"},
		{name: "-v", argv: []string{"cat", "-v", "/v"}, files: files, stdout: "a\tb^AM-i\n"},
		{name: "-vn", argv: []string{"cat", "-vn", "/c"}, files: files, stdout: "     1  a\n     2  \n     3  b"},
		{name: "bad option", argv: []string{"cat", "-z"}, stderr: "cat: invalid option -- 'z'\n" + usage("cat"), status: 1},
	})
}

func TestTouchRmMkdir(t *testing.T) {
	runCases(t, []tc{
		{name: "touch creates", argv: []string{"touch", "/tmp/new"}, check: checks(fileIs("/tmp/new", ""), modeIs("/tmp/new", 0o644))},
		{name: "touch keeps content", argv: []string{"touch", "/d/a.txt"}, files: tree, check: fileIs("/d/a.txt", "hello")},
		{name: "touch -c", argv: []string{"touch", "-c", "/tmp/new"}, check: missing("/tmp/new")},
		{name: "touch owner", argv: []string{"touch", "/tmp/mine"}, id: shell.Identity{UID: 33, GID: 33}, check: ownerIs("/tmp/mine", 33, 33)},
		{name: "touch missing dir", argv: []string{"touch", "/nope/x"}, stderr: "touch: /nope/x: No such file or directory\n", status: 1},
		{name: "touch bad date", argv: []string{"touch", "-d", "x", "/tmp/a"}, stderr: "touch: invalid date 'x'\n", status: 1},
		{name: "touch nothing", argv: []string{"touch"}, stderr: usage("touch"), status: 1},
		{name: "touch -d sets the time", argv: []string{"sh", "-c", "touch -d '2020-01-02 03:04:05' /tmp/a; touch -r /tmp/a /tmp/b; stat -c %Y /tmp/a /tmp/b"},
			setup: withSh, stdout: "1577934245\n1577934245\n"},
		{name: "rm", argv: []string{"rm", "/d/a.txt", "/d/link"}, files: tree, check: checks(missing("/d/a.txt"), missing("/d/link"))},
		{name: "rm missing", argv: []string{"rm", "/nope"}, stderr: "rm: can't remove '/nope': No such file or directory\n", status: 1},
		{name: "rm -f missing", argv: []string{"rm", "-f", "/nope"}},
		{name: "rm directory", argv: []string{"rm", "/d"}, files: tree, stderr: "rm: '/d' is a directory\n", status: 1, check: isDir("/d")},
		{name: "rm -rf", argv: []string{"rm", "-rf", "/d", "/nope"}, files: tree, check: missing("/d")},
		{name: "rm -r dot", argv: []string{"rm", "-r", "/d/."}, files: tree, stderr: "rm: can't remove '.' or '..'\n", status: 1},
		{name: "rm -v", argv: []string{"rm", "-rv", "/d/sub", "/d/b"}, files: tree, stdout: "removed directory: '/d/sub'\nremoved '/d/b'\n"},
		{name: "rm nothing", argv: []string{"rm"}, stderr: usage("rm"), status: 1},
		{name: "rm -f nothing", argv: []string{"rm", "-f"}},
		{name: "rmdir", argv: []string{"rmdir", "/d/sub"}, files: tree, check: missing("/d/sub")},
		{name: "rmdir not empty", argv: []string{"rmdir", "/d"}, files: tree, stderr: "rmdir: '/d': Directory not empty\n", status: 1},
		{name: "rmdir file", argv: []string{"rmdir", "/d/b"}, files: tree, stderr: "rmdir: '/d/b': Not a directory\n", status: 1},
		{name: "rmdir -p", argv: []string{"rmdir", "-p", "/x/y/z"}, files: map[string]string{"/x/y/z/": ""}, check: missing("/x")},
		{name: "mkdir", argv: []string{"mkdir", "/tmp/x"}, check: checks(isDir("/tmp/x"), modeIs("/tmp/x", 0o755))},
		{name: "mkdir exists", argv: []string{"mkdir", "/tmp"}, stderr: "mkdir: can't create directory '/tmp': File exists\n", status: 1},
		{name: "mkdir no parent", argv: []string{"mkdir", "/a/b"}, stderr: "mkdir: can't create directory '/a/b': No such file or directory\n", status: 1},
		{name: "mkdir -p", argv: []string{"mkdir", "-p", "/a/b/c", "/tmp"}, check: isDir("/a/b/c")},
		{name: "mkdir -p through a file", argv: []string{"mkdir", "-p", "/d/b/c"}, files: tree,
			stderr: "mkdir: can't create directory '/d/b/': File exists\n", status: 1},
		{name: "mkdir -m", argv: []string{"mkdir", "-m", "700", "/tmp/x"}, check: modeIs("/tmp/x", 0o700)},
		{name: "mkdir -m symbolic", argv: []string{"mkdir", "-m", "u=rwx,g=rx,o=", "/tmp/x"}, check: modeIs("/tmp/x", 0o750)},
		{name: "mkdir bad mode", argv: []string{"mkdir", "-m", "bad", "/tmp/x"}, stderr: "mkdir: invalid mode 'bad'\n", status: 1},
		{name: "mkdir relative", argv: []string{"mkdir", "x"}, dir: "/tmp", check: isDir("/tmp/x")},
	})
}

func TestCpMvLn(t *testing.T) {
	runCases(t, []tc{
		{name: "cp", argv: []string{"cp", "/d/a.txt", "/tmp/c"}, files: tree, check: checks(fileIs("/tmp/c", "hello"), modeIs("/tmp/c", 0o644))},
		{name: "cp into dir", argv: []string{"cp", "/d/a.txt", "/d/b", "/tmp"}, files: tree, check: checks(fileIs("/tmp/a.txt", "hello"), fileIs("/tmp/b", ""))},
		{name: "cp follows links", argv: []string{"cp", "/d/link", "/tmp/l"}, files: tree, check: fileIs("/tmp/l", "hello")},
		{name: "cp missing", argv: []string{"cp", "/nope", "/tmp/x"}, stderr: "cp: can't stat '/nope': No such file or directory\n", status: 1},
		{name: "cp directory", argv: []string{"cp", "/d", "/tmp/e"}, files: tree, stderr: "cp: omitting directory '/d'\n", status: 1},
		{name: "cp -r", argv: []string{"cp", "-r", "/d", "/tmp/e"}, files: tree,
			check: checks(fileIs("/tmp/e/a.txt", "hello"), fileIs("/tmp/e/.hidden", "x"), isDir("/tmp/e/sub"), linksTo("/tmp/e/link", "a.txt"))},
		{name: "cp -r into existing", argv: []string{"cp", "-r", "/d", "/tmp"}, files: tree, check: fileIs("/tmp/d/a.txt", "hello")},
		{name: "cp -v", argv: []string{"cp", "-v", "/d/a.txt", "/d/link", "/tmp"}, files: tree, stdout: "'/d/a.txt' -> '/tmp/a.txt'\n'/d/link' -> '/tmp/link'\n"},
		{name: "cp -v names a directory after its contents", argv: []string{"cp", "-rv", "/d/sub", "/tmp/s"},
			files: map[string]string{"/d/sub/c": "c"}, stdout: "'/d/sub/c' -> '/tmp/s/c'\n'/d/sub' -> '/tmp/s'\n"},
		{name: "cp --no is ambiguous", argv: []string{"cp", "--no", "/d/a.txt", "/tmp"}, files: tree, status: 1,
			stderr: "cp: option '--no' is ambiguous; possibilities: '--no-clobber' '--no-dereference' '--no-target-directory'\n" + usage("cp")},
		{name: "cp same file", argv: []string{"cp", "/d/a.txt", "/d/a.txt"}, files: tree, stderr: "cp: '/d/a.txt' and '/d/a.txt' are the same file\n", status: 1},
		{name: "cp to non-directory", argv: []string{"cp", "/d/a.txt", "/d/b", "/etc/passwd"}, files: tree,
			stderr: "cp: can't stat '/etc/passwd/a.txt': Not a directory\ncp: can't stat '/etc/passwd/b': Not a directory\n", status: 1},
		{name: "cp -p", argv: []string{"cp", "-p", "/d/a.txt", "/tmp/p"}, files: tree, id: shell.Identity{UID: 33, GID: 33},
			setup: func(v *vfs.View, _ func(time.Time)) { v.Chmod("/d/a.txt", 0o600); v.Chown("/d/a.txt", 1, 1) },
			check: checks(modeIs("/tmp/p", 0o600), ownerIs("/tmp/p", 1, 1))},
		{name: "cp keeps executables", argv: []string{"cp", "/bin/cat", "/tmp/mycat"}, check: func(t *testing.T, v *vfs.View) {
			if info, err := v.Stat("/tmp/mycat"); err != nil || info.Program != "cat" || unixMode(info.Mode) != 0o755 {
				t.Errorf("/tmp/mycat: %+v %v", info, err)
			}
		}},
		{name: "cp -t", argv: []string{"cp", "-t", "/tmp", "/d/a.txt", "/d/b"}, files: tree, check: checks(fileIs("/tmp/a.txt", "hello"), fileIs("/tmp/b", ""))},
		{name: "mv -t", argv: []string{"mv", "-t", "/tmp", "/d/a.txt"}, files: tree, check: fileIs("/tmp/a.txt", "hello")},
		{name: "cp too few", argv: []string{"cp", "/d/a.txt"}, files: tree, stderr: usage("cp"), status: 1},
		{name: "mv", argv: []string{"mv", "/d/a.txt", "/tmp/m"}, files: tree, check: checks(fileIs("/tmp/m", "hello"), missing("/d/a.txt"))},
		{name: "mv into dir", argv: []string{"mv", "/d/a.txt", "/d/sub"}, files: tree, check: fileIs("/d/sub/a.txt", "hello")},
		{name: "mv directory", argv: []string{"mv", "/d", "/tmp/e"}, files: tree, check: checks(fileIs("/tmp/e/a.txt", "hello"), missing("/d"))},
		{name: "mv missing", argv: []string{"mv", "/nope", "/tmp/x"}, stderr: "mv: can't rename '/nope': No such file or directory\n", status: 1},
		{name: "mv several to missing dir", argv: []string{"mv", "/d/a.txt", "/d/b", "/nope"}, files: tree,
			stderr: "mv: can't rename '/d/a.txt': No such file or directory\nmv: can't rename '/d/b': No such file or directory\n", status: 1},
		{name: "mv into itself", argv: []string{"mv", "/d", "/d/sub/x"}, files: tree, stderr: "mv: can't rename '/d': Invalid argument\n", status: 1},
		{name: "mv -n", argv: []string{"mv", "-n", "/d/a.txt", "/d/b"}, files: tree, check: fileIs("/d/b", "")},
		{name: "ln -s", argv: []string{"ln", "-s", "/d/a.txt", "/tmp/l"}, files: tree, check: linksTo("/tmp/l", "/d/a.txt")},
		{name: "ln -s exists", argv: []string{"ln", "-s", "x", "/d/b"}, files: tree, stderr: "ln: /d/b: File exists\n", status: 1},
		{name: "ln -sf", argv: []string{"ln", "-sf", "x", "/d/b"}, files: tree, check: linksTo("/d/b", "x")},
		{name: "ln -s into dir", argv: []string{"ln", "-s", "/d/a.txt", "/tmp"}, files: tree, check: linksTo("/tmp/a.txt", "/d/a.txt")},
		{name: "ln -s one operand", argv: []string{"ln", "-s", "/d/a.txt"}, dir: "/tmp", files: tree, check: linksTo("/tmp/a.txt", "/d/a.txt")},
		{name: "ln hard", argv: []string{"ln", "/d/a.txt", "/tmp/h"}, files: tree, check: fileIs("/tmp/h", "hello")},
		{name: "ln hard missing", argv: []string{"ln", "/nope", "/tmp/h"}, stderr: "ln: /nope: No such file or directory\n", status: 1},
	})
}

func TestChmodChown(t *testing.T) {
	runCases(t, []tc{
		{name: "octal", argv: []string{"chmod", "755", "/d/a.txt"}, files: tree, check: modeIs("/d/a.txt", 0o755)},
		{name: "symbolic", argv: []string{"chmod", "u+x,go-r", "/d/a.txt"}, files: tree, check: modeIs("/d/a.txt", 0o700)},
		{name: "=", argv: []string{"chmod", "a=r", "/d/a.txt"}, files: tree, check: modeIs("/d/a.txt", 0o444)},
		{name: "copy class", argv: []string{"chmod", "g=u", "/d/a.txt"}, files: tree, check: modeIs("/d/a.txt", 0o664)},
		{name: "no who uses umask", argv: []string{"chmod", "+w", "/d/a.txt"}, files: tree, check: modeIs("/d/a.txt", 0o644)},
		{name: "option-like mode", argv: []string{"chmod", "-r", "/d/a.txt"}, files: tree, check: modeIs("/d/a.txt", 0o200)},
		{name: "setuid sticky", argv: []string{"chmod", "4755", "/d/a.txt"}, files: tree, check: modeIs("/d/a.txt", 0o4755)},
		{name: "X", argv: []string{"chmod", "-R", "a+X", "/d"}, files: tree, check: checks(modeIs("/d/sub", 0o755), modeIs("/d/a.txt", 0o644))},
		{name: "-R", argv: []string{"chmod", "-R", "700", "/d"}, files: tree, check: checks(modeIs("/d", 0o700), modeIs("/d/sub", 0o700), modeIs("/d/a.txt", 0o700), linksTo("/d/link", "a.txt"))},
		{name: "follows a link operand", argv: []string{"chmod", "600", "/d/link"}, files: tree, check: modeIs("/d/a.txt", 0o600)},
		{name: "-v", argv: []string{"chmod", "-v", "640", "/d/a.txt"}, files: tree, stdout: "mode of '/d/a.txt' changed to 0640 (rw-r-----)\n"},
		{name: "bad mode", argv: []string{"chmod", "bad", "/d/a.txt"}, files: tree, stderr: "chmod: invalid mode 'bad'\n", status: 1},
		{name: "missing", argv: []string{"chmod", "644", "/nope", "/d/b"}, files: tree, stderr: "chmod: /nope: No such file or directory\n", status: 1},
		{name: "too few", argv: []string{"chmod", "644"}, stderr: usage("chmod"), status: 1},
		{name: "chown numbers", argv: []string{"chown", "33:33", "/d/a.txt"}, files: tree, check: ownerIs("/d/a.txt", 33, 33)},
		{name: "chown name", argv: []string{"chown", "www-data", "/d/a.txt"}, files: tree, check: ownerIs("/d/a.txt", 33, 0)},
		{name: "chown names", argv: []string{"chown", "nobody:wheel", "/d/a.txt"}, files: tree, check: ownerIs("/d/a.txt", 65534, 10)},
		{name: "chown group only", argv: []string{"chown", ":wheel", "/d/a.txt"}, files: tree, check: ownerIs("/d/a.txt", 0, 10)},
		{name: "chown -R", argv: []string{"chown", "-R", "1000:1000", "/d"}, files: tree, check: checks(ownerIs("/d", 1000, 1000), ownerIs("/d/sub", 1000, 1000), ownerIs("/d/a.txt", 1000, 1000))},
		{name: "chown unknown user", argv: []string{"chown", "nosuch", "/d/a.txt"}, files: tree, stderr: "chown: unknown user nosuch\n", status: 1},
		{name: "chown unknown group", argv: []string{"chown", "root:nosuch", "/d/a.txt"}, files: tree, stderr: "chown: unknown group nosuch\n", status: 1},
		{name: "chown missing", argv: []string{"chown", "0", "/nope"}, stderr: "chown: /nope: No such file or directory\n", status: 1},
		{name: "chgrp", argv: []string{"chgrp", "wheel", "/d/a.txt"}, files: tree, check: ownerIs("/d/a.txt", 0, 10)},
		{name: "chgrp unknown", argv: []string{"chgrp", "nosuch", "/d/a.txt"}, files: tree, stderr: "chgrp: unknown group nosuch\n", status: 1},
	})
}

func TestPaths(t *testing.T) {
	runCases(t, []tc{
		{name: "readlink", argv: []string{"readlink", "/d/link"}, files: tree, stdout: "a.txt\n"},
		{name: "readlink not a link", argv: []string{"readlink", "/d/a.txt"}, files: tree, status: 1},
		{name: "readlink -v", argv: []string{"readlink", "-v", "/d/a.txt"}, files: tree, stderr: "readlink: /d/a.txt: Invalid argument\n", status: 1},
		{name: "readlink -f", argv: []string{"readlink", "-f", "/d/sub/../link"}, files: tree, stdout: "/d/a.txt\n"},
		{name: "readlink -f missing last", argv: []string{"readlink", "-f", "/d/new"}, files: tree, stdout: "/d/new\n"},
		{name: "readlink -f missing dir", argv: []string{"readlink", "-f", "/nope/x"}, status: 1},
		{name: "readlink -n", argv: []string{"readlink", "-n", "/d/link"}, files: tree, stdout: "a.txt"},
		{name: "realpath", argv: []string{"realpath", "/d/link", "../d/sub"}, dir: "/tmp", files: tree, stdout: "/d/a.txt\n/d/sub\n"},
		{name: "realpath relative missing", argv: []string{"realpath", "nope", "./new"}, dir: "/tmp",
			stdout: "/tmp/new\n", stderr: "realpath: nope: No such file or directory\n", status: 1},
		{name: "realpath absolute missing", argv: []string{"realpath", "/nope"}, stdout: "/nope\n"},
		{name: "basename", argv: []string{"basename", "/a/b.txt", ".txt"}, stdout: "b\n"},
		{name: "basename slash", argv: []string{"basename", "/a/b/"}, stdout: "b\n"},
		{name: "basename root", argv: []string{"basename", "/"}, stdout: "/\n"},
		{name: "basename whole suffix", argv: []string{"basename", ".txt", ".txt"}, stdout: ".txt\n"},
		{name: "basename -a", argv: []string{"basename", "-a", "/x/a", "/y/b"}, stdout: "a\nb\n"},
		{name: "basename -s", argv: []string{"basename", "-s", ".c", "a.c", "b.c"}, stdout: "a\nb\n"},
		{name: "basename nothing", argv: []string{"basename"}, stderr: usage("basename"), status: 1},
		{name: "dirname", argv: []string{"dirname", "/a/b/"}, stdout: "/a\n"},
		{name: "dirname relative", argv: []string{"dirname", "a"}, stdout: ".\n"},
		{name: "dirname root", argv: []string{"dirname", "/a"}, stdout: "/\n"},
		{name: "dirname slashes", argv: []string{"dirname", "//a//b//"}, stdout: "//a\n"},
		{name: "mktemp bad template", argv: []string{"mktemp", "/tmp/fooXXX"}, stderr: "mktemp: Invalid argument\n", status: 1},
		{name: "mktemp missing dir", argv: []string{"mktemp", "/nope/aXXXXXX"}, stderr: "mktemp: No such file or directory\n", status: 1},
		{name: "mktemp -q", argv: []string{"mktemp", "-q", "/nope/aXXXXXX"}, status: 1},
	})
}

func TestMktemp(t *testing.T) {
	for _, c := range []struct {
		argv []string
		env  []string
		re   string
		dir  bool
	}{
		{argv: []string{"mktemp"}, re: `^/tmp/tmp\.[A-Za-z0-9]{6}$`},
		{argv: []string{"mktemp", "-d"}, re: `^/tmp/tmp\.[A-Za-z0-9]{6}$`, dir: true},
		{argv: []string{"mktemp", "-t", "x.XXXXXX"}, env: []string{"TMPDIR=/root"}, re: `^/root/x\.[A-Za-z0-9]{6}$`},
		{argv: []string{"mktemp", "-p", "/root", "yXXXXXX"}, re: `^/root/y[A-Za-z0-9]{6}$`},
		{argv: []string{"mktemp", "/tmp/zXXXXXX"}, re: `^/tmp/z[A-Za-z0-9]{6}$`},
	} {
		t.Run(fmt.Sprint(c.argv), func(t *testing.T) {
			got, v := runCase(t, tc{argv: c.argv, env: c.env})
			name := stringsTrimNL(got.Stdout)
			if got.Status != 0 || got.Stderr != "" || !regexp.MustCompile(c.re).MatchString(name) {
				t.Fatalf("%q: %+v, want a name matching %s", c.argv, got, c.re)
			}
			info, err := v.Stat(name)
			if err != nil || info.Mode.IsDir() != c.dir {
				t.Errorf("%s: %v %v", name, info.Mode, err)
			}
		})
	}
}

func stringsTrimNL(s string) string {
	if len(s) > 0 && s[len(s)-1] == '\n' {
		return s[:len(s)-1]
	}
	return s
}

func TestLs(t *testing.T) {
	old := func(v *vfs.View, setClock func(time.Time)) {
		setClock(epoch.AddDate(-1, 0, 0))
		v.WriteFile("/d/old", []byte("o"), 0o644, false, 33, 1234)
		setClock(epoch.Add(-time.Hour))
		v.WriteFile("/d/recent", []byte("r"), 0o755, false, 0, 0)
	}
	runCases(t, []tc{
		{name: "names", argv: []string{"ls", "/d"}, files: tree, stdout: "a.txt\nb\nlink\nsub\n"},
		{name: "cwd", argv: []string{"ls"}, dir: "/d", files: tree, stdout: "a.txt\nb\nlink\nsub\n"},
		{name: "-a", argv: []string{"ls", "-a", "/d"}, files: tree, stdout: ".\n..\n.hidden\na.txt\nb\nlink\nsub\n"},
		{name: "-A", argv: []string{"ls", "-A", "/d"}, files: tree, stdout: ".hidden\na.txt\nb\nlink\nsub\n"},
		{name: "-l", argv: []string{"ls", "-l", "/d"}, files: tree, stdout: "total 8\n" +
			"-rw-r--r--    1 root     root             5 Mar  5 14:07 a.txt\n" +
			"-rw-r--r--    1 root     root             0 Mar  5 14:07 b\n" +
			"lrwxrwxrwx    1 root     root             5 Mar  5 14:07 link -> a.txt\n" +
			"drwxr-xr-x    2 root     root          4096 Mar  5 14:07 sub\n"},
		{name: "-l owners and old dates", argv: []string{"ls", "-l", "/d/old", "/d/recent"}, files: tree, setup: old, stdout: "" +
			"-rw-r--r--    1 www-data 1234             1 Mar  5  2023 /d/old\n" +
			"-rwxr-xr-x    1 root     root             1 Mar  5 13:07 /d/recent\n"},
		{name: "-ln", argv: []string{"ls", "-ln", "/d/old"}, files: tree, setup: old,
			stdout: "-rw-r--r--    1 33       1234             1 Mar  5  2023 /d/old\n"},
		{name: "-t", argv: []string{"ls", "-t", "/d/old", "/d/recent", "/d/b"}, files: tree, setup: old, stdout: "/d/b\n/d/recent\n/d/old\n"},
		{name: "-r", argv: []string{"ls", "-r", "/d"}, files: tree, stdout: "sub\nlink\nb\na.txt\n"},
		{name: "-S", argv: []string{"ls", "-S", "/d"}, files: tree, stdout: "sub\na.txt\nlink\nb\n"},
		{name: "-ld", argv: []string{"ls", "-ld", "/d"}, files: tree, stdout: "drwxr-xr-x    3 root     root          4096 Mar  5 14:07 /d\n"},
		{name: "-d", argv: []string{"ls", "-d", "/d", "/d/sub"}, files: tree, stdout: "/d\n/d/sub\n"},
		{name: "missing", argv: []string{"ls", "/nope", "/d/b"}, files: tree, stdout: "/d/b\n", stderr: "ls: /nope: No such file or directory\n", status: 1},
		{name: "files then dirs", argv: []string{"ls", "-1", "/d/sub", "/d/b", "/d/a.txt"}, files: tree, stdout: "/d/a.txt\n/d/b\n\n/d/sub:\n"},
		{name: "two dirs", argv: []string{"ls", "/d/sub", "/tmp"}, files: tree, stdout: "/d/sub:\n\n/tmp:\n"},
		{name: "-R", argv: []string{"ls", "-R", "/d"}, files: tree, stdout: "/d:\na.txt\nb\nlink\nsub\n\n/d/sub:\n"},
		{name: "-F", argv: []string{"ls", "-F", "/d", "/bin/ls"}, files: tree, stdout: "/bin/ls*\n\n/d:\na.txt\nb\nlink@\nsub/\n"},
		{name: "-p", argv: []string{"ls", "-p", "/d"}, files: tree, stdout: "a.txt\nb\nlink\nsub/\n"},
		{name: "link operand followed", argv: []string{"ls", "/d/link"}, files: tree, stdout: "/d/link\n"},
		{name: "-s", argv: []string{"ls", "-s", "/d"}, files: tree, stdout: "total 8\n     4 a.txt\n     0 b\n     0 link\n     4 sub\n"},
		{name: "-i", argv: []string{"ls", "-i", "/d/b"}, files: tree, stdout: fmt.Sprintf("%7d /d/b\n", inode("/d/b"))},
		{name: "-lh", argv: []string{"ls", "-lh", "/big"}, files: map[string]string{"/big": string(make([]byte, 1536))},
			stdout: "-rw-r--r--    1 root     root        1.5K Mar  5 14:07 /big\n"},
		{name: "--full-time", argv: []string{"ls", "--full-time", "/d/b"}, files: tree,
			stdout: "-rw-r--r--    1 root     root             0 2024-03-05 14:07:09 +0000 /d/b\n"},
		{name: "bad option", argv: []string{"ls", "-y"}, stderr: "ls: invalid option -- 'y'\n" + usage("ls"), status: 1},
	})
}

func TestStatDu(t *testing.T) {
	runCases(t, []tc{
		{name: "format", argv: []string{"stat", "-c", "%a %A %u %g %U %G %s %n %F %Y", "/d/a.txt"}, files: tree,
			stdout: fmt.Sprintf("644 -rw-r--r-- 0 0 root root 5 /d/a.txt regular file %d\n", epoch.Unix())},
		{name: "widths", argv: []string{"stat", "-c", "[%5s|%-4u|%04a]", "/d/a.txt"}, files: tree, stdout: "[    5|0   |0644]\n"},
		{name: "link", argv: []string{"stat", "-c", "%N %F", "/d/link"}, files: tree, stdout: "'/d/link' -> 'a.txt' symbolic link\n"},
		{name: "-L", argv: []string{"stat", "-L", "-c", "%F %s", "/d/link"}, files: tree, stdout: "regular file 5\n"},
		{name: "empty and dir", argv: []string{"stat", "-c", "%F", "/d/b", "/d"}, files: tree, stdout: "regular empty file\ndirectory\n"},
		{name: "unknown owner", argv: []string{"stat", "-c", "%U:%G", "/d/a.txt"}, files: tree,
			setup: func(v *vfs.View, _ func(time.Time)) { v.Chown("/d/a.txt", 4321, 4321) }, stdout: "UNKNOWN:UNKNOWN\n"},
		{name: "default", argv: []string{"stat", "/d/a.txt"}, files: tree, stdout: fmt.Sprintf(""+
			"  File: /d/a.txt\n"+
			"  Size: 5         \tBlocks: 8          IO Block: 4096   regular file\n"+
			"Device: 2bh/43d\tInode: %-10d  Links: 1\n"+
			"Access: (0644/-rw-r--r--)  Uid: (    0/    root)   Gid: (    0/    root)\n"+
			"Access: 2024-03-05 14:07:09.000000000 +0000\n"+
			"Modify: 2024-03-05 14:07:09.000000000 +0000\n"+
			"Change: 2024-03-05 14:07:09.000000000 +0000\n", inode("/d/a.txt"))},
		{name: "missing", argv: []string{"stat", "-c", "%F", "/nope", "/d/b"}, files: tree, stdout: "regular empty file\n", status: 1,
			stderr: "stat: can't stat '/nope': No such file or directory\n"},
		{name: "du", argv: []string{"du", "/d"}, files: tree, stdout: "4\t/d/sub\n16\t/d\n"},
		{name: "du -s", argv: []string{"du", "-s", "/d"}, files: tree, stdout: "16\t/d\n"},
		{name: "du -a", argv: []string{"du", "-a", "/d"}, files: tree, stdout: "4\t/d/.hidden\n4\t/d/a.txt\n0\t/d/b\n0\t/d/link\n4\t/d/sub\n16\t/d\n"},
		{name: "du -sh", argv: []string{"du", "-sh", "/d"}, files: tree, stdout: "16.0K\t/d\n"},
		{name: "du -c", argv: []string{"du", "-c", "/d/a.txt", "/d/b"}, files: tree, stdout: "4\t/d/a.txt\n0\t/d/b\n4\ttotal\n"},
		{name: "du cwd", argv: []string{"du"}, dir: "/d/sub", files: tree, stdout: "4\t.\n"},
		{name: "du missing", argv: []string{"du", "/nope"}, stderr: "du: /nope: No such file or directory\n", status: 1},
	})
}

func TestFind(t *testing.T) {
	runCases(t, []tc{
		{name: "all", argv: []string{"find", "/d"}, files: tree, stdout: "/d\n/d/.hidden\n/d/a.txt\n/d/b\n/d/link\n/d/sub\n"},
		{name: "cwd", argv: []string{"find"}, dir: "/d/sub", files: tree, stdout: ".\n"},
		{name: "-name", argv: []string{"find", "/d", "-name", "*.txt"}, files: tree, stdout: "/d/a.txt\n"},
		{name: "-iname", argv: []string{"find", "/d", "-iname", "A*"}, files: tree, stdout: "/d/a.txt\n"},
		{name: "-type d", argv: []string{"find", "/d", "-type", "d"}, files: tree, stdout: "/d\n/d/sub\n"},
		{name: "-type l", argv: []string{"find", "/d", "-type", "l"}, files: tree, stdout: "/d/link\n"},
		{name: "-maxdepth 0", argv: []string{"find", "/d", "-maxdepth", "0"}, files: tree, stdout: "/d\n"},
		{name: "depths", argv: []string{"find", "/d", "-mindepth", "1", "-maxdepth", "1", "-type", "f"}, files: tree, stdout: "/d/.hidden\n/d/a.txt\n/d/b\n"},
		{name: "-empty", argv: []string{"find", "/d", "-empty"}, files: tree, stdout: "/d/b\n/d/sub\n"},
		{name: "-o", argv: []string{"find", "/d", "-name", "a*", "-o", "-name", "b"}, files: tree, stdout: "/d/a.txt\n/d/b\n"},
		{name: "!", argv: []string{"find", "/d", "!", "-type", "d"}, files: tree, stdout: "/d/.hidden\n/d/a.txt\n/d/b\n/d/link\n"},
		{name: "parens", argv: []string{"find", "/d", "(", "-name", "b", "-o", "-name", "sub", ")", "-print"}, files: tree, stdout: "/d/b\n/d/sub\n"},
		{name: "-path", argv: []string{"find", "/d", "-path", "/d/s*"}, files: tree, stdout: "/d/sub\n"},
		{name: "-prune", argv: []string{"find", "/d", "-name", "sub", "-prune", "-o", "-type", "d", "-print"}, files: map[string]string{"/d/sub/x/": ""}, stdout: "/d\n"},
		{name: "-size", argv: []string{"find", "/d", "-type", "f", "-size", "+0c"}, files: tree, stdout: "/d/.hidden\n/d/a.txt\n"},
		{name: "-exec ;", argv: []string{"find", "/d", "-type", "f", "-exec", "cat", "{}", ";"}, files: tree, stdout: "xhello"},
		{name: "-exec +", argv: []string{"find", "/d", "-type", "f", "-exec", "echo", "{}", "+"}, files: tree, stdout: "/d/.hidden /d/a.txt /d/b\n"},
		{name: "-exec as test", argv: []string{"find", "/d", "-type", "f", "-exec", "grep", "-q", "hello", "{}", ";", "-print"}, files: tree, stdout: "/d/a.txt\n"},
		{name: "-delete", argv: []string{"find", "/d", "-name", "*.txt", "-delete"}, files: tree, check: missing("/d/a.txt")},
		{name: "-newer", argv: []string{"find", "/d", "-newer", "/d/b"}, files: tree,
			setup: func(v *vfs.View, setClock func(time.Time)) {
				setClock(epoch.Add(time.Minute))
				v.WriteFile("/d/new", nil, 0o644, false, 0, 0)
			},
			// The filesystem leaves a directory's time alone when a file is added to it.
			stdout: "/d/new\n"},
		{name: "-mmin", argv: []string{"find", "/d", "-mmin", "+30"}, files: tree,
			setup: func(v *vfs.View, setClock func(time.Time)) {
				setClock(epoch.Add(-time.Hour))
				v.WriteFile("/d/old", nil, 0o644, false, 0, 0)
			},
			stdout: "/d/old\n"},
		{name: "-user", argv: []string{"find", "/d", "-user", "www-data"}, files: tree,
			setup: func(v *vfs.View, _ func(time.Time)) { v.Chown("/d/b", 33, 33) }, stdout: "/d/b\n"},
		{name: "-perm", argv: []string{"find", "/bin", "-name", "ls", "-perm", "-111"}, stdout: "/bin/ls\n"},
		{name: "missing", argv: []string{"find", "/nope", "/d/sub"}, files: tree, stdout: "/d/sub\n", stderr: "find: /nope: No such file or directory\n", status: 1},
		{name: "unrecognized", argv: []string{"find", "/d", "-foo"}, files: tree, stderr: "find: unrecognized: -foo\n" + usage("find"), status: 1},
		{name: "missing argument", argv: []string{"find", "/d", "-name"}, files: tree, stderr: "find: -name requires an argument\n", status: 1},
		{name: "bad type", argv: []string{"find", "/d", "-type", "x"}, files: tree, stderr: "find: invalid argument 'x' to '-type'\n", status: 1},
		{name: "-exec unterminated", argv: []string{"find", "/d", "-exec", "echo"}, files: tree, stderr: "find: -exec requires an argument\n", status: 1},
	})
}
