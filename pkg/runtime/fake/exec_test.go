package fake

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/minikubelet/minikubelet/pkg/cri"
)

// execContainer runs a container whose pod has hostname web-0, an environment and a
// mounted file, whose main process writes /tmp/state and sleeps.
func execContainer(t *testing.T, r *Runtime) string {
	t.Helper()
	cfg := sandboxConfig("uid-exec", nil)
	cfg.Hostname = "web-0"
	sbID, err := r.RunPodSandbox(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	const image = "busybox:1.36"
	if _, err := r.PullImage(context.Background(), cri.ImageSpec{Image: image}, nil); err != nil {
		t.Fatal(err)
	}
	cc := containerConfig("app", "", image)
	cc.Envs = []cri.KeyValue{{Key: "PATH", Value: "/bin"}, {Key: "GREETING", Value: "hello world"}}
	cc.Command = []string{"sh", "-c", "echo ready > /tmp/state; exec sleep infinity"}
	const vol = "/var/lib/kubelet/pods/uid-exec/volumes/kubernetes.io~configmap/config"
	writeVolumeFile(t, r, vol, "mode", "blue\n")
	cc.Mounts = []cri.Mount{{ContainerPath: "/etc/config", HostPath: vol, Readonly: true}}
	id, err := r.CreateContainer(context.Background(), sbID, cc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.StartContainer(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	return id
}

// writeVolumeFile writes a file of a volume directory on the node, as the kubelet does
// before it mounts the volume.
func writeVolumeFile(t *testing.T, r *Runtime, dir, name, content string) {
	t.Helper()
	if err := r.nodeFS.MkdirAll(dir, 0o755, 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := r.nodeFS.WriteFile(dir+"/"+name, []byte(content), 0o644, false, 0, 0); err != nil {
		t.Fatal(err)
	}
}

// TestExecSyncRunsPrograms: output, exit code and the time a command takes are the
// program's, run beside the container's processes, in its environment and on its files.
func TestExecSyncRunsPrograms(t *testing.T) {
	tests := []struct {
		name             string
		cmd              []string
		wantOut, wantErr string
		wantCode         int32
		wantTook         time.Duration
	}{
		{"env and files", []string{"sh", "-c", "echo $GREETING; cat /etc/config/mode; hostname"}, "hello world\nblue\nweb-0\n", "", 0, 0},
		{"a missing file", []string{"cat", "/tmp/healthy"}, "", "cat: can't open '/tmp/healthy': No such file or directory\n", 1, 0},
		{"sleeps take clock time", []string{"sh", "-c", "sleep 2; date +%s"}, strconv.FormatInt(epoch.Unix()+2, 10) + "\n", "", 0, 2 * time.Second},
		{"what the main process wrote", []string{"cat", "/tmp/state"}, "ready\n", "", 0, 0},
		{"a read-only mount", []string{"sh", "-c", "echo x > /etc/config/mode"}, "", "sh: can't create /etc/config/mode: Read-only file system\n", 1, 0},
		{"a missing command in a shell", []string{"sh", "-c", "healthcheck"}, "", "sh: healthcheck: not found\n", 127, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, clk := newRuntime(t, Config{})
			id := execContainer(t, r)
			start := clk.Now()
			var resp *cri.ExecSyncResponse
			err := await(t, r, clk, time.Minute, func(ctx context.Context) error {
				var err error
				resp, err = r.ExecSync(ctx, id, tt.cmd, 0)
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			if string(resp.Stdout) != tt.wantOut || string(resp.Stderr) != tt.wantErr || resp.ExitCode != tt.wantCode {
				t.Errorf("got stdout %q stderr %q code %d, want %q %q %d", resp.Stdout, resp.Stderr, resp.ExitCode, tt.wantOut, tt.wantErr, tt.wantCode)
			}
			if took := clk.Since(start); took != tt.wantTook {
				t.Errorf("took %v, want %v", took, tt.wantTook)
			}
		})
	}
	t.Run("a missing program", func(t *testing.T) {
		r, clk := newRuntime(t, Config{})
		id := execContainer(t, r)
		err := await(t, r, clk, time.Minute, func(ctx context.Context) error {
			_, err := r.ExecSync(ctx, id, []string{"/bin/healthcheck"}, 0)
			return err
		})
		if err == nil || !strings.Contains(err.Error(), `exec: "/bin/healthcheck": No such file or directory`) {
			t.Errorf("error %v, want containerd's exec failure", err)
		}
	})
}

// chanWriter hands every write to the test.
type chanWriter chan string

func (c chanWriter) Write(b []byte) (int, error) { c <- string(b); return len(b), nil }

// TestExecStreams: a streaming exec writes each step's output as it comes, sleeps on the
// runtime's clock and returns the exit code; cat copies stdin.
func TestExecStreams(t *testing.T) {
	r, clk := newRuntime(t, Config{})
	id := execContainer(t, r)

	out := make(chanWriter, 10)
	done := make(chan int, 1)
	go func() {
		code, err := r.Exec(context.Background(), id, []string{"sh", "-c", "echo a; sleep 5; echo b; exit 3"}, nil, out, nil)
		if err != nil {
			out <- "error: " + err.Error()
		}
		done <- code
	}()
	if got := <-out; got != "a\n" {
		t.Fatalf("first output %q", got)
	}
	run(t, r, clk, 4*time.Second)
	select {
	case got := <-out:
		t.Fatalf("%q written before the sleep ended", got)
	default:
	}
	run(t, r, clk, time.Second)
	if got := <-out; got != "b\n" {
		t.Fatalf("output after the sleep %q", got)
	}
	if code := <-done; code != 3 {
		t.Errorf("exit code %d, want 3", code)
	}

	var stdout bytes.Buffer
	code, err := r.Exec(context.Background(), id, []string{"cat"}, strings.NewReader("typed in\n"), &stdout, io.Discard)
	if err != nil || code != 0 || stdout.String() != "typed in\n" {
		t.Errorf("cat with stdin: %q, %d, %v", stdout.String(), code, err)
	}

	if err := r.StopContainer(context.Background(), id, 0); err != nil {
		t.Fatal(err)
	}
	run(t, r, clk, time.Second)
	if _, err := r.Exec(context.Background(), id, []string{"true"}, nil, io.Discard, nil); !errors.Is(err, ErrNotRunning) {
		t.Errorf("exec in a stopped container: %v, want ErrNotRunning", err)
	}
}

// TestExecMakesTheMachine: a container whose program the simulator does not know runs no
// process, so its machine (filesystem view, /proc, environment) is made at its first exec,
// as it would have been at its create: its environment, hostname and mounts, the mounts
// being what they named at the create (a bind holds what it bound, as a bind mount holds
// the inode).
func TestExecMakesTheMachine(t *testing.T) {
	r, clk := newRuntime(t, Config{})
	cfg := sandboxConfig("uid-lazy", nil)
	cfg.Hostname = "web-1"
	sbID, err := r.RunPodSandbox(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.PullImage(context.Background(), cri.ImageSpec{Image: testImage}, nil); err != nil {
		t.Fatal(err)
	}
	const vol = "/var/lib/kubelet/pods/uid-lazy/volumes/kubernetes.io~configmap/config"
	writeVolumeFile(t, r, vol, "mode", "blue\n")
	cc := containerConfig("app", "", testImage)
	cc.Envs = []cri.KeyValue{{Key: "GREETING", Value: "hello"}}
	cc.Mounts = []cri.Mount{{ContainerPath: "/etc/config", HostPath: vol, Readonly: true}}
	id, err := r.CreateContainer(context.Background(), sbID, cc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.StartContainer(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	// The directory the kubelet mounted is replaced after the create.
	if err := r.nodeFS.Remove(vol, true); err != nil {
		t.Fatal(err)
	}
	writeVolumeFile(t, r, vol, "mode", "red\n")
	if c := r.containers[id]; c.m != nil {
		t.Fatal("the machine of a container running no process was made before an exec")
	}
	var resp *cri.ExecSyncResponse
	err = await(t, r, clk, time.Minute, func(ctx context.Context) error {
		var err error
		resp, err = r.ExecSync(ctx, id, []string{"sh", "-c", "echo $GREETING; cat /etc/config/mode; hostname; grep -c config /proc/mounts"}, 0)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := "hello\nblue\nweb-1\n1\n"; string(resp.Stdout) != want || resp.ExitCode != 0 {
		t.Errorf("got stdout %q stderr %q code %d, want %q", resp.Stdout, resp.Stderr, resp.ExitCode, want)
	}
}
