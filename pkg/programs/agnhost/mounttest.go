package agnhost

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/minikubelet/minikubelet/pkg/programs"
	"github.com/minikubelet/minikubelet/pkg/shell"
	"github.com/minikubelet/minikubelet/pkg/vfs"
)

// mounttestFlags are mounttest's flags, with upstream's names and defaults.
type mounttestFlags struct {
	fsType, fileMode, filePerm, fileOwner string
	new0644, new0666, new0660, new0777    string
	fileContent, fileContentInLoop        string
	retryTime                             int
	breakOnExpectedContent                bool
}

// newMounttest is `agnhost mounttest`, which the emptyDir, hostPath, configMap, secret,
// projected and downwardAPI volume specs run: it reports on the paths its flags name,
// in a fixed order (fs type, new files, mode, perms, owner, content, content in a loop)
// that lets one run check a volume's type, write a file in it and read it back.
func newMounttest(r *run) *cobra.Command {
	f := &mounttestFlags{}
	cmd := &cobra.Command{
		Use:   "mounttest",
		Short: "Creates files with given permissions and outputs FS type, owner, mode, permissions, contents of files",
		Long:  "Creates files with specific file permissions, and outputs the filesystem type, owner, mode, permissions, content of the given files, if they exist.",
		Args:  cobra.MaximumNArgs(0),
		Run: func(cmd *cobra.Command, args []string) {
			r.p.Exit(mounttest(r.p, f))
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.fsType, "fs_type", "", "Path to print the fs type for")
	fl.StringVar(&f.fileMode, "file_mode", "", "Path to print the mode bits of")
	fl.StringVar(&f.filePerm, "file_perm", "", "Path to print the perms of")
	fl.StringVar(&f.fileOwner, "file_owner", "", "Path to print the owning UID and GID of")
	fl.StringVar(&f.new0644, "new_file_0644", "", "Path to write to and read from with perm 0644")
	fl.StringVar(&f.new0666, "new_file_0666", "", "Path to write to and read from with perm 0666")
	fl.StringVar(&f.new0660, "new_file_0660", "", "Path to write to and read from with perm 0660")
	fl.StringVar(&f.new0777, "new_file_0777", "", "Path to write to and read from with perm 0777")
	fl.StringVar(&f.fileContent, "file_content", "", "Path to read the file content from")
	fl.StringVar(&f.fileContentInLoop, "file_content_in_loop", "", "Path to read the file content in loop from")
	fl.IntVar(&f.retryTime, "retry_time", 180, "Retry time during the loop")
	fl.BoolVar(&f.breakOnExpectedContent, "break_on_expected_content", true, "Break out of loop on expected content, (use with --file_content_in_loop flag only)")
	return cmd
}

// initialContent is what mounttest writes to a new file.
const initialContent = "mount-tester new file\n"

// mounttest runs the checks in upstream's order (which specs rely on: a new file is
// written before its content is read) and returns the exit status: 1 if any failed.
func mounttest(p *shell.Proc, f *mounttestFlags) int {
	m := &mt{p: p}
	failed := false
	for _, step := range []func() error{
		func() error { return m.fsType(f.fsType) },
		func() error { return m.readWriteNewFile(f.new0644, 0o644) },
		func() error { return m.readWriteNewFile(f.new0666, 0o666) },
		func() error { return m.readWriteNewFile(f.new0660, 0o660) },
		func() error { return m.readWriteNewFile(f.new0777, 0o777) },
		func() error { return m.fileMode(f.fileMode) },
		func() error { return m.filePerm(f.filePerm) },
		func() error { return m.fileOwner(f.fileOwner) },
		func() error { return m.readFileContent(f.fileContent) },
		func() error {
			return m.readFileContentInLoop(f.fileContentInLoop, f.retryTime, f.breakOnExpectedContent)
		},
	} {
		if step() != nil {
			failed = true
		}
	}
	if failed {
		return 1
	}
	return 0
}

// mt is one mounttest run on a process's filesystem.
type mt struct{ p *shell.Proc }

func (m *mt) printf(format string, a ...any) { fmt.Fprintf(m.p.Stdout(), format, a...) }

// Filesystem magic numbers (linux/magic.h), which statfs reports and mounttest prints
// for any filesystem but tmpfs.
const (
	ext4Magic    = 0xEF53
	overlayMagic = 0x794c7630
)

var fsMagic = map[string]int64{
	"ext2": ext4Magic, "ext3": ext4Magic, "ext4": ext4Magic,
	"overlay":  overlayMagic,
	"xfs":      0x58465342,
	"btrfs":    0x9123683E,
	"proc":     0x9fa0,
	"sysfs":    0x62656572,
	"cgroup2":  0x63677270,
	"devpts":   0x1cd1,
	"mqueue":   0x19800202,
	"ramfs":    0x858458f6,
	"squashfs": 0x73717368,
	"nfs":      0x6969, "nfs4": 0x6969,
	"fuse": 0x65735546,
}

// fsType prints the filesystem type of path: "tmpfs" for a tmpfs (emptyDir with medium
// Memory, the service account token, projected volumes), else statfs's magic number. The
// type comes from /proc/mounts when the runtime provides it (the mount with the longest
// matching mount point); without it, a path under one of the container's mounts is on
// the node's disk (ext4) and any other path on the image's overlay.
func (m *mt) fsType(p string) error {
	if p == "" {
		return nil
	}
	abs := m.p.Abs(p)
	if _, err := m.p.FS().Stat(abs); err != nil {
		m.printf("error from statfs(%q): %v\n", p, goErrno(err))
		return err
	}
	typ := m.mountType(abs)
	if typ == "tmpfs" || typ == "devtmpfs" {
		m.printf("mount type of %q: tmpfs\n", p)
		return nil
	}
	magic, ok := fsMagic[typ]
	if !ok {
		magic = ext4Magic
	}
	m.printf("mount type of %q: %v\n", p, magic)
	return nil
}

// mountType is the type of the filesystem abs lies on.
func (m *mt) mountType(abs string) string {
	fsys := m.p.FS()
	if data, err := fsys.ReadFile("/proc/mounts"); err == nil {
		best, typ := "", ""
		for _, line := range strings.Split(string(data), "\n") {
			f := strings.Fields(line)
			if len(f) < 3 {
				continue
			}
			mp := programs.UnescapeMount(f[1])
			if under(abs, mp) && len(mp) > len(best) {
				best, typ = mp, f[2]
			}
		}
		if typ != "" {
			return typ
		}
	}
	for _, mp := range fsys.Mounts() {
		if under(abs, mp) {
			return "ext4"
		}
	}
	return "overlay"
}

// under reports whether p is mount point mp or below it.
func under(p, mp string) bool {
	return p == mp || mp == "/" || strings.HasPrefix(p, mp+"/")
}

// readWriteNewFile writes initialContent to p with perm (mounttest clears its umask, so
// the mode is exactly perm; an existing file keeps its mode) and reads it back.
func (m *mt) readWriteNewFile(p string, perm fs.FileMode) error {
	if p == "" {
		return nil
	}
	if err := m.writeFile(p, perm); err != nil {
		m.printf("error writing new file %q: %v\n", p, err)
		return err
	}
	return m.readFileContent(p)
}

// writeFile is ioutil.WriteFile as the kernel checks it: the directory must let the
// process create a file, an existing file must let it write; a file created in a setgid
// directory takes the directory's group (how fsGroup volumes give files their group).
func (m *mt) writeFile(p string, perm fs.FileMode) error {
	fsys, abs, id := m.p.FS(), m.p.Abs(p), m.p.Identity()
	gid := id.GID
	if info, err := fsys.Stat(abs); err == nil {
		if info.Mode.IsDir() {
			return pathError("open", p, vfs.EISDIR)
		}
		if !access(id, info, 2) {
			return pathError("open", p, vfs.EACCES)
		}
	} else if vfs.ErrnoOf(err) != vfs.ENOENT {
		return pathError("open", p, err)
	} else {
		dir, err := fsys.Stat(path.Dir(abs))
		if err != nil {
			return pathError("open", p, err)
		}
		if !access(id, dir, 3) {
			return pathError("open", p, vfs.EACCES)
		}
		if dir.Mode&fs.ModeSetgid != 0 {
			gid = dir.GID
		}
	}
	if err := fsys.WriteFile(abs, []byte(initialContent), perm, false, id.UID, gid); err != nil {
		return pathError("open", p, err)
	}
	return nil
}

// fileMode prints os.Stat's mode of p, as Go formats it ("dtrwxrwxrwx", "-rw-r--r--").
func (m *mt) fileMode(p string) error {
	if p == "" {
		return nil
	}
	info, err := m.p.FS().Stat(m.p.Abs(p))
	if err != nil {
		err = pathError("stat", p, err)
		m.printf("error from Stat(%q): %v\n", p, err)
		return err
	}
	m.printf("mode of file %q: %v\n", p, info.Mode)
	return nil
}

// filePerm prints the permission bits of p's mode ("-rwxrwxrwx").
func (m *mt) filePerm(p string) error {
	if p == "" {
		return nil
	}
	info, err := m.p.FS().Stat(m.p.Abs(p))
	if err != nil {
		err = pathError("stat", p, err)
		m.printf("error from Stat(%q): %v\n", p, err)
		return err
	}
	m.printf("perms of file %q: %v\n", p, info.Mode.Perm())
	return nil
}

// fileOwner prints p's owner and group ids.
func (m *mt) fileOwner(p string) error {
	if p == "" {
		return nil
	}
	info, err := m.p.FS().Stat(m.p.Abs(p))
	if err != nil {
		m.printf("error from stat(%q): %v\n", p, goErrno(err))
		return err
	}
	m.printf("owner UID of %q: %v\n", p, info.UID)
	m.printf("owner GID of %q: %v\n", p, info.GID)
	return nil
}

// readFileContent prints p's content (which keeps its own newline, so a blank line may
// follow, as upstream prints it).
func (m *mt) readFileContent(p string) error {
	if p == "" {
		return nil
	}
	data, err := m.readFile(p)
	if err != nil {
		m.printf("error reading file content for %q: %v\n", p, err)
		return err
	}
	m.printf("content of file %q: %v\n", p, string(data))
	return nil
}

// readFile is ioutil.ReadFile: the process must be allowed to read the file.
func (m *mt) readFile(p string) ([]byte, error) {
	fsys, abs := m.p.FS(), m.p.Abs(p)
	info, err := fsys.Stat(abs)
	if err != nil {
		return nil, pathError("open", p, err)
	}
	if !access(m.p.Identity(), info, 4) {
		return nil, pathError("open", p, vfs.EACCES)
	}
	if info.Mode.IsDir() {
		return nil, pathError("read", p, vfs.EISDIR)
	}
	data, err := fsys.ReadFile(abs)
	if err != nil {
		return nil, pathError("open", p, err)
	}
	return data, nil
}

// readFileContentInLoop reads p every 2s for retryTime seconds, printing what it reads;
// with breakOnExpected it stops once the content is mounttest's initial content. It
// returns the last read's error (none when the last read worked), as upstream does.
func (m *mt) readFileContentInLoop(p string, retryTime int, breakOnExpected bool) error {
	if p == "" {
		return nil
	}
	var err error
	retry := time.Second * time.Duration(retryTime)
	for start := m.p.Now(); m.p.Now().Sub(start) < retry; m.p.Sleep(2 * time.Second) {
		var data []byte
		data, err = m.readFile(p)
		if err != nil {
			m.printf("Error reading file %s: %v, retrying\n", p, err)
			continue
		}
		m.printf("content of file %q: %v\n", p, string(data))
		if breakOnExpected {
			if string(data) != initialContent {
				m.printf("Unexpected content. Expected: %s. Retrying", initialContent)
				continue
			}
			break
		}
	}
	return err
}

// access is id.May, by the name the callers here use.
func access(id shell.Identity, info vfs.Info, want uint32) bool { return id.May(info, want) }

// goErrnoText is how Go's syscall.Errno words the errors the filesystem gives (Go's own
// table, lowercase: not C's strerror, which busybox prints).
var goErrnoText = map[vfs.Errno]string{
	vfs.ENOENT:    "no such file or directory",
	vfs.EACCES:    "permission denied",
	vfs.EEXIST:    "file exists",
	vfs.ENOTDIR:   "not a directory",
	vfs.EISDIR:    "is a directory",
	vfs.EINVAL:    "invalid argument",
	vfs.EROFS:     "read-only file system",
	vfs.ENOTEMPTY: "directory not empty",
	vfs.ELOOP:     "too many levels of symbolic links",
	vfs.EBUSY:     "device or resource busy",
	vfs.EXDEV:     "invalid cross-device link",
}

// goErrno is err as a Go program prints a bare syscall error.
func goErrno(err error) error {
	if text, ok := goErrnoText[vfs.ErrnoOf(err)]; ok {
		return errors.New(text)
	}
	return err
}

// pathError is err as Go's *fs.PathError prints it: "open /x: no such file or directory".
func pathError(op, p string, err error) error {
	return &fs.PathError{Op: op, Path: p, Err: goErrno(err)}
}
