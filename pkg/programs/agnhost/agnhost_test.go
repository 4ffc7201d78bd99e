package agnhost

import (
	"bytes"
	"fmt"
	"io/fs"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/minikubelet/minikubelet/pkg/images"
	"github.com/minikubelet/minikubelet/pkg/programs"
	"github.com/minikubelet/minikubelet/pkg/shell"
	"github.com/minikubelet/minikubelet/pkg/vfs"
)

// container is an agnhost container: the catalogue's agnhost image on a fresh node disk,
// with setup applied to its filesystem (volumes, /proc/mounts) before the process starts.
type container struct {
	node *vfs.View
	fs   *vfs.View
	m    *shell.Machine
}

func newContainer(t *testing.T, readOnlyRoot bool, setup func(node, fs *vfs.View)) *container {
	t.Helper()
	img, ok := images.Lookup("registry.k8s.io/e2e-test-images/agnhost:2.47")
	if !ok {
		t.Fatal("agnhost is not catalogued")
	}
	node := vfs.New(nil)
	fsys := vfs.NewView(node, img.Tree(), readOnlyRoot)
	if setup != nil {
		setup(node, fsys)
	}
	m := shell.NewMachine(shell.Config{FS: fsys, Seed: 1, Programs: func(name string) shell.Program {
		if name == "agnhost" {
			return Program
		}
		return programs.Lookup(name)
	}})
	return &container{node: node, fs: fsys, m: m}
}

// result is what a process printed and how it ended.
type result struct {
	Stdout, Stderr string
	Exited         bool
	Status         int
	At             time.Duration // when it exited, on the machine's clock
}

// run starts argv as id and steps the machine until the process exits or until is
// reached; signal, when set, is sent at signalAt.
func (c *container) run(t *testing.T, id shell.Identity, argv []string, until time.Duration, signal int, signalAt time.Duration) result {
	t.Helper()
	var out, errb bytes.Buffer
	res := result{}
	pid, err := c.m.Start(shell.Spec{Argv: argv, Identity: id, Stdout: &out, Stderr: &errb, OnExit: func(s int) {
		res.Exited, res.Status = true, s
	}})
	if err != nil {
		t.Fatalf("start %v: %v", argv, err)
	}
	now := int64(0)
	signalled := false
	for !res.Exited {
		next := c.m.Step(now)
		res.At = time.Duration(now)
		if res.Exited {
			break
		}
		if signal != 0 && !signalled && (next == 0 || next > int64(signalAt)) {
			now = int64(signalAt)
			c.m.Signal(pid, signal)
			signalled = true
			continue
		}
		if next == 0 || next > int64(until) {
			break
		}
		now = next
	}
	res.Stdout, res.Stderr = out.String(), errb.String()
	return res
}

// volume makes a directory of the node's disk with mode, owner and group, and binds it
// at target in the container, as the kubelet and the runtime do for an emptyDir.
func volume(node, fsys *vfs.View, target string, mode fs.FileMode, gid int64) {
	src := "/var/lib/kubelet/pods/uid/volumes/kubernetes.io~empty-dir" + target
	must(node.MkdirAll(src, 0o755, 0, 0))
	must(node.Chmod(src, mode))
	must(node.Chown(src, 0, gid))
	must(fsys.Bind(target, node, src, false))
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

func TestAgnhost(t *testing.T) {
	const loopWarning = "Unexpected content. Expected: mount-tester new file\n. Retrying"
	nonRoot := shell.Identity{UID: 1001, GID: 1001, Groups: []int64{1001, 123}}
	tests := []struct {
		name         string
		readOnlyRoot bool
		setup        func(node, fsys *vfs.View)
		id           shell.Identity
		argv         []string
		signal       int
		signalAt     time.Duration
		until        time.Duration // default 1h
		want         result
	}{
		{
			name: "entrypoint-tester prints its whole argv",
			argv: []string{"/agnhost", "entrypoint-tester", "override", "arguments"},
			want: result{Stdout: "[/agnhost entrypoint-tester override arguments]\n", Exited: true},
		},
		{
			name: "etc-hosts prints the kubelet's hosts file",
			setup: func(_, fsys *vfs.View) {
				must(fsys.MkdirAll("/etc", 0o755, 0, 0))
				must(fsys.WriteFile("/etc/hosts", []byte("# Entries added by HostAliases.\n123.45.67.89\tfoo\tbar\n"), 0o644, false, 0, 0))
				must(fsys.WriteFile("/etc/resolv.conf", []byte("search ns.svc.cluster.local svc.cluster.local\nnameserver 10.96.0.10\n"), 0o644, false, 0, 0))
			},
			argv: []string{"/agnhost", "etc-hosts"},
			want: result{Stdout: "# Entries added by HostAliases.\n123.45.67.89\tfoo\tbar\n", Exited: true},
		},
		{
			name: "dns-suffix prints the search list",
			setup: func(_, fsys *vfs.View) {
				must(fsys.MkdirAll("/etc", 0o755, 0, 0))
				must(fsys.WriteFile("/etc/resolv.conf", []byte("search ns.svc.cluster.local svc.cluster.local\nnameserver 10.96.0.10\n"), 0o644, false, 0, 0))
			},
			argv: []string{"/agnhost", "dns-suffix"},
			want: result{Stdout: "ns.svc.cluster.local,svc.cluster.local", Exited: true},
		},
		{
			name: "entrypoint-tester run through the agnhost-2 link",
			argv: []string{"/agnhost-2", "entrypoint-tester"},
			want: result{Stdout: "[/agnhost-2 entrypoint-tester]\n", Exited: true},
		},
		{
			name:     "pause exits 2 on SIGTERM",
			argv:     []string{"/agnhost", "pause"},
			signal:   shell.SIGTERM,
			signalAt: 30 * time.Second,
			want:     result{Stdout: "Paused\n", Exited: true, Status: 2, At: 30 * time.Second},
		},
		{
			name:     "pause exits 1 on SIGINT",
			argv:     []string{"/agnhost", "pause"},
			signal:   shell.SIGINT,
			signalAt: time.Minute,
			want:     result{Stdout: "Paused\n", Exited: true, Status: 1, At: time.Minute},
		},
		{
			name:     "pause dies of SIGKILL",
			argv:     []string{"/agnhost", "pause"},
			signal:   shell.SIGKILL,
			signalAt: time.Second,
			want:     result{Stdout: "Paused\n", Exited: true, Status: 137, At: time.Second},
		},
		{
			name:  "pause runs until it is stopped",
			argv:  []string{"/agnhost", "pause"},
			until: 72 * time.Hour,
			want:  result{Stdout: "Paused\n", At: 72 * time.Hour},
		},
		{
			name: "mounttest: an emptyDir of medium Memory is tmpfs",
			setup: func(node, fsys *vfs.View) {
				volume(node, fsys, "/test-volume", 0o777|fs.ModeSticky, 0)
				must(fsys.WriteFile("/proc/mounts", []byte("overlay / overlay rw 0 0\ntmpfs /test-volume tmpfs rw,relatime 0 0\n"), 0o444, false, 0, 0))
			},
			argv: []string{"/agnhost", "mounttest", "--fs_type=/test-volume", "--file_mode=/test-volume"},
			want: result{Stdout: "mount type of \"/test-volume\": tmpfs\nmode of file \"/test-volume\": dtrwxrwxrwx\n", Exited: true},
		},
		{
			name:  "mounttest: a volume on the node's disk is ext4 when there is no /proc/mounts",
			setup: func(node, fsys *vfs.View) { volume(node, fsys, "/test-volume", 0o777, 0) },
			argv:  []string{"/agnhost", "mounttest", "--fs-type=/test-volume"},
			want:  result{Stdout: "mount type of \"/test-volume\": 61267\n", Exited: true},
		},
		{
			name: "mounttest: the image's own filesystem is overlay",
			argv: []string{"/agnhost", "mounttest", "--fs_type=/etc"},
			want: result{Stdout: "mount type of \"/etc\": 2035054128\n", Exited: true},
		},
		{
			name:  "mounttest: a new file as root, its perms and owner",
			setup: func(node, fsys *vfs.View) { volume(node, fsys, "/test-volume", 0o777, 0) },
			argv:  []string{"/agnhost", "mounttest", "--new_file_0644=/test-volume/test-file", "--file_perm=/test-volume/test-file", "--file_owner=/test-volume/test-file"},
			want: result{Stdout: "content of file \"/test-volume/test-file\": mount-tester new file\n\n" +
				"perms of file \"/test-volume/test-file\": -rw-r--r--\n" +
				"owner UID of \"/test-volume/test-file\": 0\nowner GID of \"/test-volume/test-file\": 0\n", Exited: true},
		},
		{
			name:  "mounttest: a new file in a setgid fsGroup volume takes its group",
			setup: func(node, fsys *vfs.View) { volume(node, fsys, "/test-volume", 0o777|fs.ModeSetgid, 123) },
			id:    nonRoot,
			argv:  []string{"/agnhost", "mounttest", "--new_file_0660=/test-volume/test-file", "--file_perm=/test-volume/test-file", "--file_owner=/test-volume/test-file"},
			want: result{Stdout: "content of file \"/test-volume/test-file\": mount-tester new file\n\n" +
				"perms of file \"/test-volume/test-file\": -rw-rw----\n" +
				"owner UID of \"/test-volume/test-file\": 1001\nowner GID of \"/test-volume/test-file\": 123\n", Exited: true},
		},
		{
			name:  "mounttest: the mode of a 0777 file",
			setup: func(node, fsys *vfs.View) { volume(node, fsys, "/test-volume", 0o777, 0) },
			argv:  []string{"/agnhost", "mounttest", "--new_file_0777=/test-volume/f", "--file_mode=/test-volume/f"},
			want:  result{Stdout: "content of file \"/test-volume/f\": mount-tester new file\n\nmode of file \"/test-volume/f\": -rwxrwxrwx\n", Exited: true},
		},
		{
			name: "mounttest: the content of a configMap key",
			setup: func(node, fsys *vfs.View) {
				must(fsys.MkdirAll("/etc/configmap-volume", 0o755, 0, 0))
				must(fsys.WriteFile("/etc/configmap-volume/data-1", []byte("value-1"), 0o644, false, 0, 0))
			},
			argv: []string{"/agnhost", "mounttest", "--file_content=/etc/configmap-volume/data-1"},
			want: result{Stdout: "content of file \"/etc/configmap-volume/data-1\": value-1\n", Exited: true},
		},
		{
			name: "mounttest: a missing file fails",
			argv: []string{"/agnhost", "mounttest", "--file_content=/nope", "--file_mode=/nope", "--file_owner=/nope", "--fs_type=/nope"},
			want: result{Stdout: "error from statfs(\"/nope\"): no such file or directory\n" +
				"error from Stat(\"/nope\"): stat /nope: no such file or directory\n" +
				"error from stat(\"/nope\"): no such file or directory\n" +
				"error reading file content for \"/nope\": open /nope: no such file or directory\n", Exited: true, Status: 1},
		},
		{
			name:  "mounttest: a file the user may not read",
			setup: func(node, fsys *vfs.View) { must(fsys.WriteFile("/secret", []byte("s"), 0o600, false, 0, 0)) },
			id:    nonRoot,
			argv:  []string{"/agnhost", "mounttest", "--file_content=/secret"},
			want:  result{Stdout: "error reading file content for \"/secret\": open /secret: permission denied\n", Exited: true, Status: 1},
		},
		{
			name: "mounttest: a directory the user may not write to",
			id:   nonRoot,
			argv: []string{"/agnhost", "mounttest", "--new_file_0644=/etc/f"},
			want: result{Stdout: "error writing new file \"/etc/f\": open /etc/f: permission denied\n", Exited: true, Status: 1},
		},
		{
			name:         "mounttest: a read-only root filesystem",
			readOnlyRoot: true,
			argv:         []string{"/agnhost", "mounttest", "--new_file_0644=/f"},
			want:         result{Stdout: "error writing new file \"/f\": open /f: read-only file system\n", Exited: true, Status: 1},
		},
		{
			name: "mounttest: reading a directory",
			argv: []string{"/agnhost", "mounttest", "--file_content=/etc"},
			want: result{Stdout: "error reading file content for \"/etc\": read /etc: is a directory\n", Exited: true, Status: 1},
		},
		{
			name:  "mounttest: the loop retries until its time is up on unexpected content",
			setup: func(node, fsys *vfs.View) { must(fsys.WriteFile("/f", []byte("other\n"), 0o644, false, 0, 0)) },
			argv:  []string{"/agnhost", "mounttest", "--file_content_in_loop=/f", "--retry_time=5"},
			want: result{Stdout: strings.Repeat("content of file \"/f\": other\n\n"+loopWarning, 3),
				Exited: true, At: 6 * time.Second},
		},
		{
			name:  "mounttest: the loop stops at the expected content",
			setup: func(node, fsys *vfs.View) { must(fsys.WriteFile("/f", []byte(initialContent), 0o644, false, 0, 0)) },
			argv:  []string{"/agnhost", "mounttest", "--file_content_in_loop=/f"},
			want:  result{Stdout: "content of file \"/f\": mount-tester new file\n\n", Exited: true},
		},
		{
			name:  "mounttest: the loop without break prints every read",
			setup: func(node, fsys *vfs.View) { must(fsys.WriteFile("/f", []byte(initialContent), 0o644, false, 0, 0)) },
			argv:  []string{"/agnhost", "mounttest", "--file_content_in_loop=/f", "--retry_time=3", "--break_on_expected_content=false"},
			want:  result{Stdout: strings.Repeat("content of file \"/f\": mount-tester new file\n\n", 2), Exited: true, At: 4 * time.Second},
		},
		{
			name: "mounttest: the loop fails when the file never appears",
			argv: []string{"/agnhost", "mounttest", "--file_content_in_loop=/f", "--retry_time=3"},
			want: result{Stdout: strings.Repeat("Error reading file /f: open /f: no such file or directory, retrying\n", 2),
				Exited: true, Status: 1, At: 4 * time.Second},
		},
		{
			name: "mounttest takes no arguments",
			argv: []string{"/agnhost", "mounttest", "x"},
			want: result{Stderr: "Error: accepts at most 0 arg(s), received 1\n", Exited: true, Status: 1},
		},
		{
			name: "an unknown flag",
			argv: []string{"/agnhost", "mounttest", "--nope"},
			want: result{Stderr: "Error: unknown flag: --nope\n", Exited: true, Status: 1},
		},
		{
			name: "a bad flag value",
			argv: []string{"/agnhost", "mounttest", "--retry_time=soon"},
			want: result{Stderr: "Error: invalid argument \"soon\" for \"--retry-time\" flag: strconv.ParseInt: parsing \"soon\": invalid syntax\n", Exited: true, Status: 1},
		},
		{
			name: "an unknown subcommand",
			argv: []string{"/agnhost", "foo"},
			want: result{Stderr: "Error: unknown command \"foo\" for \"app\"\n", Exited: true, Status: 1},
		},
		{
			name: "--version",
			argv: []string{"/agnhost", "--version"},
			want: result{Stdout: "app version 2.66.1\n", Exited: true},
		},
		{
			name: "logs-generator without its flags",
			argv: []string{"/agnhost", "logs-generator"},
			want: result{Stderr: "F0101 00:00:00.000000       1 logs_generator.go:64] Invalid total number of lines: 0\n", Exited: true, Status: 255},
		},
		{
			name:     "a server nobody simulates waits to be stopped",
			argv:     []string{"/agnhost", "guestbook", "--http-port=8080"},
			signal:   shell.SIGTERM,
			signalAt: 2 * time.Hour,
			want:     result{Stderr: "minikubelet: agnhost guestbook is not simulated; it waits to be stopped\n", Exited: true, Status: 143, At: 2 * time.Hour},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newContainer(t, tt.readOnlyRoot, tt.setup)
			until := tt.until
			if until == 0 {
				until = time.Hour
			}
			got := c.run(t, tt.id, tt.argv, until, tt.signal, tt.signalAt)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("%v (-want +got):\n%s", tt.argv, diff)
			}
		})
	}
}

// TestHelp: agnhost without a subcommand prints cobra's help, listing every subcommand.
func TestHelp(t *testing.T) {
	got := newContainer(t, false, nil).run(t, shell.Identity{}, []string{"/agnhost"}, time.Hour, 0, 0)
	if !got.Exited || got.Status != 0 || got.Stderr != "" {
		t.Fatalf("agnhost without arguments: %+v, want help and exit 0", got)
	}
	if !strings.HasPrefix(got.Stdout, "Usage:\n  app [command]\n\nAvailable Commands:\n") {
		t.Errorf("help does not start with the usage:\n%s", got.Stdout)
	}
	for _, s := range subcommands {
		if !strings.Contains(got.Stdout, "\n  "+s.name()+" ") {
			t.Errorf("help does not list %s:\n%s", s.name(), got.Stdout)
		}
	}
}

// TestLogsGenerator: the lines come evenly over the run, in klog's format, and a replay
// with the same seed logs the same lines.
func TestLogsGenerator(t *testing.T) {
	argv := []string{"/agnhost", "logs-generator", "--log-lines-total", "4", "--run-duration", "2s"}
	first := newContainer(t, false, nil).run(t, shell.Identity{}, argv, time.Hour, 0, 0)
	if !first.Exited || first.Status != 0 || first.At != 2*time.Second || first.Stdout != "" {
		t.Fatalf("logs-generator: %+v, want exit 0 after 2s with nothing on stdout", first)
	}
	line := regexp.MustCompile(`^I0101 (\d\d:\d\d:\d\d\.\d{6})       1 logs_generator\.go:76\] (\d) (GET|POST|PUT) /api/v1/namespaces/(kube-system|default|ns)/pods/[bcdfghjklmnpqrstvwxz2456789]{3,4} [2-5]\d\d$`)
	lines := strings.Split(strings.TrimSuffix(first.Stderr, "\n"), "\n")
	if len(lines) != 4 {
		t.Fatalf("got %d lines, want 4:\n%s", len(lines), first.Stderr)
	}
	for i, l := range lines {
		at := time.Unix(0, 0).UTC().Add(time.Duration(i) * 500 * time.Millisecond).Format("15:04:05.000000")
		if m := line.FindStringSubmatch(l); m == nil || m[1] != at || m[2] != fmt.Sprint(i) {
			t.Errorf("line %d = %q, want line %d at %s", i, l, i, at)
		}
	}
	again := newContainer(t, false, nil).run(t, shell.Identity{}, argv, time.Hour, 0, 0)
	if again.Stderr != first.Stderr {
		t.Errorf("a replay differs:\n%s\nvs\n%s", first.Stderr, again.Stderr)
	}
}

func TestSimulated(t *testing.T) {
	for name, want := range map[string]bool{"pause": true, "mounttest": true, "entrypoint-tester": true, "logs-generator": true, "netexec": true, "connect": true, "serve-hostname": true, "guestbook": false, "nope": false} {
		if got := Simulated(name); got != want {
			t.Errorf("Simulated(%q) = %t, want %t", name, got, want)
		}
	}
}
