package fake

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/minikubelet/minikubelet/pkg/cri"
)

// startProgram starts a container running command in a fresh pod.
func startProgram(t *testing.T, r *Runtime, command ...string) string {
	t.Helper()
	return startBusybox(t, r, "u-prog", func(cc *cri.ContainerConfig) {
		cc.Command = command
		cc.Envs = []cri.KeyValue{{Key: "PATH", Value: "/bin"}, {Key: "NAME", Value: "world"}}
	})
}

// startBusybox starts a busybox container "main" in a fresh pod uid, its config as edit
// sets it, and returns its id.
func startBusybox(t *testing.T, r *Runtime, uid string, edit func(cc *cri.ContainerConfig)) string {
	t.Helper()
	sb, cfg := runPod(t, r, uid, nil)
	ctx := context.Background()
	if _, err := r.PullImage(ctx, cri.ImageSpec{Image: "busybox:1.36"}, nil); err != nil {
		t.Fatal(err)
	}
	cc := containerConfig("main", "", "busybox:1.36")
	edit(cc)
	id, err := r.CreateContainer(ctx, sb, cc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	return id
}

func logText(t *testing.T, r *Runtime, id string) string {
	t.Helper()
	lines, err := r.ContainerLog(id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, l := range lines {
		fmt.Fprintf(&b, "%v %s %s\n", time.Unix(0, l.Time).Sub(epoch), l.Stream, l.Text)
	}
	return b.String()
}

// TestProgramsDecideExits: the container's command runs; what it prints is its log, with
// the instants it printed at, and its exit is the container's.
func TestProgramsDecideExits(t *testing.T) {
	tests := []struct {
		name     string
		command  []string
		run      time.Duration
		state    cri.ContainerState
		code     int32
		reason   string
		finished time.Duration
		log      string
	}{
		{name: "prints and completes", command: []string{"sh", "-c", "echo hello $NAME; sleep 2; echo bye >&2"}, run: 5 * time.Second,
			state: cri.ContainerExited, reason: ReasonCompleted, finished: 2 * time.Second, log: "0s stdout hello world\n2s stderr bye\n"},
		{name: "fails", command: []string{"sh", "-c", "echo dying; exit 1"}, run: time.Second,
			state: cri.ContainerExited, code: 1, reason: ReasonError, log: "0s stdout dying\n"},
		{name: "keeps running", command: []string{"sh", "-c", "while true; do echo tick; sleep 5; done"}, run: 12 * time.Second,
			state: cri.ContainerRunning, log: "0s stdout tick\n5s stdout tick\n10s stdout tick\n"},
		{name: "a syntax error", command: []string{"sh", "-c", "if then"}, run: time.Second,
			state: cri.ContainerExited, code: 2, reason: ReasonError, log: "0s stderr sh: line 1: syntax error: `if` must be followed by a statement list\n"},
		{name: "a missing program in a shell", command: []string{"sh", "-c", "nosuch"}, run: time.Second,
			state: cri.ContainerExited, code: 127, reason: ReasonError, log: "0s stderr sh: nosuch: not found\n"},
		{name: "an unterminated last line", command: []string{"sh", "-c", "printf partial"}, run: time.Second,
			state: cri.ContainerExited, reason: ReasonCompleted, log: "0s stdout partial\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, clk := newRuntime(t, Config{})
			id := startProgram(t, r, tt.command...)
			run(t, r, clk, tt.run)
			st := status(t, r, id)
			if st.State != tt.state || st.ExitCode != tt.code || st.Reason != tt.reason {
				t.Errorf("state %v code %d reason %q, want %v %d %q", st.State, st.ExitCode, st.Reason, tt.state, tt.code, tt.reason)
			}
			if tt.state == cri.ContainerExited && st.FinishedAt != ns(tt.finished) {
				t.Errorf("finished at %v, want %v", time.Unix(0, st.FinishedAt).Sub(epoch), tt.finished)
			}
			if got := logText(t, r, id); got != tt.log {
				t.Errorf("log:\n%s\nwant:\n%s", got, tt.log)
			}
		})
	}
}

// TestStopSignalsTheProgram: a stop sends SIGTERM to the main process: a shell without a
// trap dies of it (143), one with a trap runs it and exits as it says, and one that
// ignores it is killed when the grace period ends (137).
func TestStopSignalsTheProgram(t *testing.T) {
	tests := []struct {
		name   string
		script string
		took   time.Duration
		code   int32
		reason string
	}{
		{"no trap", "sleep 1000", 0, 143, ReasonError},
		{"a trap that exits", "trap 'echo bye; exit 0' TERM; while true; do sleep 1; done", time.Second, 0, ReasonCompleted},
		{"a trap that ignores", "trap '' TERM; while true; do sleep 1; done", 10 * time.Second, ExitCodeKilled, ReasonError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, clk := newRuntime(t, Config{})
			id := startProgram(t, r, "sh", "-c", tt.script)
			run(t, r, clk, 500*time.Millisecond)
			start := clk.Now()
			if err := await(t, r, clk, time.Minute, func(ctx context.Context) error { return r.StopContainer(ctx, id, 10) }); err != nil {
				t.Fatal(err)
			}
			st := status(t, r, id)
			if took := time.Unix(0, st.FinishedAt).Sub(start); st.State != cri.ContainerExited || st.ExitCode != tt.code || st.Reason != tt.reason || took > tt.took {
				t.Errorf("state %v code %d reason %q after %v, want exited %d %q within %v", st.State, st.ExitCode, st.Reason, took, tt.code, tt.reason, tt.took)
			}
		})
	}
}

// TestNotSimulatedImage: an image nobody catalogued, run with its own entrypoint, runs
// until stopped and says so once in its log.
func TestNotSimulatedImage(t *testing.T) {
	r, clk := newRuntime(t, Config{})
	sb, cfg := runPod(t, r, "u1", nil)
	id := startContainer(t, r, sb, cfg, "app", "")
	run(t, r, clk, time.Hour)
	if st := status(t, r, id); st.State != cri.ContainerRunning {
		t.Fatalf("state %v, want running", st.State)
	}
	want := "0s stderr minikubelet: the entrypoint of image " + testImage + " is not simulated; the container runs until it is stopped\n"
	if got := logText(t, r, id); got != want {
		t.Errorf("log %q, want %q", got, want)
	}
}

// TestProcMounts: a container's /proc/mounts lists its root and its mounts with their
// types and modes as they are when it is read (a tmpfs the kubelet mounted shows as one,
// and so does a directory inside it bound as a subPath).
func TestProcMounts(t *testing.T) {
	r, clk := newRuntime(t, Config{})
	ctx := context.Background()
	node := r.NodeFS()
	for _, dir := range []string{"/var/lib/kubelet/pods/u1/volumes/cache/sub", "/var/lib/kubelet/pods/u1/volumes/config"} {
		if err := node.MkdirAll(dir, 0o755, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := node.SetFSType("/var/lib/kubelet/pods/u1/volumes/cache", "tmpfs"); err != nil {
		t.Fatal(err)
	}
	sb, cfg := runPod(t, r, "u1", nil)
	if _, err := r.PullImage(ctx, cri.ImageSpec{Image: "busybox:1.36"}, nil); err != nil {
		t.Fatal(err)
	}
	cc := containerConfig("main", "", "busybox:1.36")
	cc.Command = []string{"sh", "-c", "sleep 1; cat /proc/mounts"}
	cc.Mounts = []cri.Mount{
		{ContainerPath: "/cache", HostPath: "/var/lib/kubelet/pods/u1/volumes/cache"},
		{ContainerPath: "/etc/my config", HostPath: "/var/lib/kubelet/pods/u1/volumes/config", Readonly: true},
		{ContainerPath: "/sub", HostPath: "/var/lib/kubelet/pods/u1/volumes/cache/sub"},
	}
	id, err := r.CreateContainer(ctx, sb, cc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	run(t, r, clk, 2*time.Second)
	// Without lists from the kubelet, containerd's default masked and read-only paths (of
	// those the simulated kernel has), mounted after the rest.
	want := "1s stdout overlay / overlay rw,relatime 0 0\n" +
		"1s stdout proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0\n" +
		"1s stdout cgroup /sys/fs/cgroup cgroup2 ro,nosuid,nodev,noexec,relatime 0 0\n" +
		"1s stdout tmpfs /cache tmpfs rw,relatime 0 0\n" +
		"1s stdout /dev/vda1 /etc/my\\040config ext4 ro,relatime 0 0\n" +
		"1s stdout tmpfs /sub tmpfs rw,relatime 0 0\n" +
		"1s stdout proc /proc/bus proc ro,nosuid,nodev,noexec,relatime 0 0\n" +
		"1s stdout proc /proc/fs proc ro,nosuid,nodev,noexec,relatime 0 0\n" +
		"1s stdout proc /proc/irq proc ro,nosuid,nodev,noexec,relatime 0 0\n" +
		"1s stdout proc /proc/sys proc ro,nosuid,nodev,noexec,relatime 0 0\n" +
		"1s stdout proc /proc/sysrq-trigger proc ro,nosuid,nodev,noexec,relatime 0 0\n" +
		"1s stdout tmpfs /proc/acpi tmpfs ro,relatime 0 0\n" +
		"1s stdout tmpfs /proc/kcore tmpfs rw,nosuid,size=65536k,mode=755 0 0\n" +
		"1s stdout tmpfs /proc/keys tmpfs rw,nosuid,size=65536k,mode=755 0 0\n" +
		"1s stdout tmpfs /proc/timer_list tmpfs rw,nosuid,size=65536k,mode=755 0 0\n" +
		"1s stdout tmpfs /proc/scsi tmpfs ro,relatime 0 0\n"
	if got := logText(t, r, id); got != want {
		t.Errorf("log:\n%s\nwant:\n%s", got, want)
	}
}
