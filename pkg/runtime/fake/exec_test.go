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
// mounted file.
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
	cc.Files = map[string]string{"/etc/config/mode": "blue\n"}
	id, err := r.CreateContainer(context.Background(), sbID, cc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.StartContainer(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	return id
}

// TestExecSyncRunsTheCommandTable: output, exit code and the time a command takes come
// from the simulated command table, in the container's environment and files.
func TestExecSyncRunsTheCommandTable(t *testing.T) {
	tests := []struct {
		name             string
		cmd              []string
		wantOut, wantErr string
		wantCode         int32
		wantTook         time.Duration
	}{
		{"env and files", []string{"sh", "-c", "echo $GREETING; cat /etc/config/mode; hostname"}, "hello world\nblue\nweb-0\n", "", 0, 0},
		{"a missing file", []string{"cat", "/tmp/healthy"}, "", "cat: /tmp/healthy: No such file or directory\n", 1, 0},
		{"sleeps take clock time", []string{"sh", "-c", "sleep 2; date +%s"}, strconv.FormatInt(epoch.Unix()+2, 10) + "\n", "", 0, 2 * time.Second},
		{"unknown command", []string{"/bin/healthcheck"}, "", "/bin/healthcheck: command not found\n", 127, 0},
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
			t.Error(err)
		}
		done <- code
	}()
	if got := <-out; got != "a\n" {
		t.Fatalf("first output %q", got)
	}
	for !clk.HasWaiters() {
		select {
		case got := <-out:
			t.Fatalf("%q written before the sleep ended", got)
		default:
		}
	}
	clk.Step(5 * time.Second)
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
