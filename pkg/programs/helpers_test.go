package programs

import (
	"bytes"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/minikubelet/minikubelet/pkg/shell"
	"github.com/minikubelet/minikubelet/pkg/simnet"
	"github.com/minikubelet/minikubelet/pkg/vfs"
)

// epoch is the simulated clock when every case starts, and every file's time.
var epoch = time.Date(2024, 3, 5, 14, 7, 9, 0, time.UTC)

const (
	passwd = "root:x:0:0:root:/root:/bin/sh\n" +
		"daemon:x:1:1:daemon:/usr/sbin:/bin/false\n" +
		"www-data:x:33:33:www-data:/var/www:/bin/false\n" +
		"nobody:x:65534:65534:nobody:/home:/bin/false\n"
	group = "root:x:0:\n" +
		"daemon:x:1:\n" +
		"wheel:x:10:root\n" +
		"www-data:x:33:\n" +
		"nogroup:x:65534:\n"
	hosts = "127.0.0.1\tlocalhost\n" +
		"# Kubernetes-managed hosts file.\n" +
		"::1\tlocalhost ip6-localhost\n" +
		"10.244.0.7\tpod-1.sub.ns.svc.cluster.local\tpod-1\n"
)

// newFS is a container's filesystem: every applet in /bin, users and groups in /etc,
// /tmp, and the given files (a path ending in "/" is a directory; "->" in the content
// makes a symbolic link: "-> target").
func newFS(t *testing.T, files map[string]string) *vfs.View {
	v, _ := newFSClock(t, files)
	return v
}

// newFSClock is newFS with a function that sets the time the filesystem stamps writes
// with.
func newFSClock(t *testing.T, files map[string]string) (*vfs.View, func(time.Time)) {
	t.Helper()
	clock := epoch
	v := vfs.New(func() time.Time { return clock })
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{"/bin", "/etc", "/tmp", "/root"} {
		must(v.MkdirAll(d, 0o755, 0, 0))
	}
	must(v.Chmod("/tmp", 0o777|fs.ModeSticky))
	for _, name := range Names() {
		must(v.WriteFile("/bin/"+name, nil, 0o755, false, 0, 0))
		must(v.SetProgram("/bin/"+name, name))
	}
	must(v.WriteFile("/etc/passwd", []byte(passwd), 0o644, false, 0, 0))
	must(v.WriteFile("/etc/group", []byte(group), 0o644, false, 0, 0))
	must(v.WriteFile("/etc/hosts", []byte(hosts), 0o644, false, 0, 0))
	for p, content := range files {
		switch {
		case strings.HasSuffix(p, "/"):
			must(v.MkdirAll(p, 0o755, 0, 0))
		case strings.HasPrefix(content, "-> "):
			must(v.MkdirAll(dirname(p), 0o755, 0, 0))
			must(v.Symlink(strings.TrimPrefix(content, "-> "), p))
		default:
			must(v.MkdirAll(dirname(p), 0o755, 0, 0))
			must(v.WriteFile(p, []byte(content), 0o644, false, 0, 0))
		}
	}
	return v, func(t time.Time) { clock = t }
}

// tc is one case: a command run on a machine with files, and what it must print and
// return.
type tc struct {
	name  string
	argv  []string
	stdin string
	files map[string]string
	env   []string
	dir   string
	id    shell.Identity
	// until stops a program that never ends (tail -f, yes) at this point of the clock
	// (from epoch): it must still run then, and its output so far is compared (its status
	// is the kill's, and is not).
	until time.Duration
	// steps changes the filesystem at clock offsets while the program runs.
	steps map[time.Duration]func(v *vfs.View)
	// signals are sent to the program (pid 1) at clock offsets.
	signals map[time.Duration]int
	// setup changes the filesystem before the program starts; what it writes gets the
	// time setClock last set.
	setup  func(v *vfs.View, setClock func(time.Time))
	stdout string
	stderr string
	status int
	// elapsed is how long (on the clock) the program ran.
	elapsed time.Duration
	// check looks at the filesystem afterwards.
	check func(t *testing.T, v *vfs.View)
	// network and ns are the network the machine reaches and its pod's namespace on it
	// (nil: none).
	network *simnet.Network
	ns      *simnet.Namespace
}

type result struct {
	Stdout, Stderr string
	Status         int
	Elapsed        time.Duration
	// Stopped: the program still ran at the case's until, and was killed there.
	Stopped bool
}

// runCase runs c on a fresh machine, stepping the clock to whatever is next due.
func runCase(t *testing.T, c tc) (result, *vfs.View) {
	t.Helper()
	v, setClock := newFSClock(t, c.files)
	if c.setup != nil {
		c.setup(v, setClock)
		setClock(epoch)
	}
	m := shell.NewMachine(shell.Config{FS: v, Programs: Lookup, Hostname: "pod-1", Seed: 1, Network: c.network, Net: c.ns})
	var stdout, stderr bytes.Buffer
	status := -1
	env := c.env
	if env == nil {
		env = []string{"PATH=/bin", "HOME=/root"}
	}
	var stdin *shell.Input
	if c.stdin != "" {
		stdin = shell.StaticInput([]byte(c.stdin))
	}
	if _, err := m.Start(shell.Spec{Argv: c.argv, Env: env, Dir: c.dir, Identity: c.id, Stdin: stdin,
		Stdout: &stdout, Stderr: &stderr, OnExit: func(s int) { status = s }}); err != nil {
		t.Fatalf("start %q: %v", c.argv, err)
	}
	now := epoch.UnixNano()
	end := epoch.Add(c.until).UnixNano()
	var pending []time.Duration
	for d := range c.steps {
		pending = append(pending, d)
	}
	for d := range c.signals {
		pending = append(pending, d)
	}
	for i := 0; status == -1; i++ {
		if i > 100000 {
			t.Fatalf("%q did not end", c.argv)
		}
		next := m.Step(now)
		if status != -1 {
			break
		}
		// Changes due before the next wake happen first.
		for _, d := range pending {
			at := epoch.Add(d).UnixNano()
			if at > now && (next == 0 || at <= next) {
				next = at
			}
		}
		if c.until > 0 && (next == 0 || next > end) {
			m.KillAll()
			return result{stdout.String(), stderr.String(), status, time.Duration(now - epoch.UnixNano()), true}, v
		}
		if next == 0 {
			t.Fatalf("%q blocked with nothing due", c.argv)
		}
		now = next
		for _, d := range pending {
			if epoch.Add(d).UnixNano() != now {
				continue
			}
			if f := c.steps[d]; f != nil {
				f(v)
			}
			if sig := c.signals[d]; sig != 0 {
				m.Signal(1, sig)
			}
		}
	}
	return result{stdout.String(), stderr.String(), status, time.Duration(now - epoch.UnixNano()), false}, v
}

// runCases runs a table of cases and compares each result exactly.
func runCases(t *testing.T, cases []tc) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, v := runCase(t, c)
			want := result{c.stdout, c.stderr, c.status, c.elapsed, c.until > 0}
			if c.until > 0 {
				// Stopped says it ran that long; the status is the kill's.
				got.Status, want.Status = 0, 0
				got.Elapsed, want.Elapsed = 0, 0
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%q (-want +got):\n%s", c.argv, diff)
			}
			if c.check != nil {
				c.check(t, v)
			}
		})
	}
}

// fileIs checks a file's content.
func fileIs(p, want string) func(t *testing.T, v *vfs.View) {
	return func(t *testing.T, v *vfs.View) {
		t.Helper()
		data, err := v.ReadFile(p)
		if err != nil {
			t.Fatalf("read %s: %v", p, err)
		}
		if diff := cmp.Diff(want, string(data)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", p, diff)
		}
	}
}

// missing checks that a path does not exist.
func missing(p string) func(t *testing.T, v *vfs.View) {
	return func(t *testing.T, v *vfs.View) {
		t.Helper()
		if _, err := v.Lstat(p); err == nil {
			t.Errorf("%s exists", p)
		}
	}
}

func checks(fs ...func(t *testing.T, v *vfs.View)) func(t *testing.T, v *vfs.View) {
	return func(t *testing.T, v *vfs.View) {
		t.Helper()
		for _, f := range fs {
			f(t, v)
		}
	}
}

// withSh puts the shell at /bin/sh: for cases that run a pipeline, or awk's pipes and
// system().
func withSh(v *vfs.View, _ func(time.Time)) {
	v.WriteFile("/bin/sh", nil, 0o755, false, 0, 0)
	v.SetProgram("/bin/sh", "sh")
}
