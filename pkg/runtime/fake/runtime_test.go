package fake

import (
	"context"
	"errors"
	testingclock "k8s.io/utils/clock/testing"
	"strings"
	"testing"
	"time"

	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/runtime/behavior"
	"github.com/minikubelet/minikubelet/pkg/runtime/fault"
	"github.com/minikubelet/minikubelet/pkg/task"
)

func TestNewValidatesConfig(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{name: "negative init duration", cfg: Config{InitContainerDuration: -time.Second}, wantErr: `config field "initContainerDuration": must not be negative, got -1s`},
		{name: "negative buffer", cfg: Config{EventBufferSize: -1}, wantErr: `config field "eventBufferSize"`},
		{name: "bad default behaviour", cfg: Config{DefaultBehavior: "runFor=soon"}, wantErr: `config field "defaultBehavior": key "runFor": bad value "soon"`},
		{name: "bad startup fault", cfg: Config{Faults: []fault.Spec{{Method: "ListPodSandbox", Type: "latency"}}}, wantErr: `config field "faults[0]": add runtime fault: fault field "delay"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Clock = testingclock.NewFakeClock(time.Unix(0, 0))
			_, err := New(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("New() error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestSandboxAndContainerLifecycle(t *testing.T) {
	r, clk := newRuntime(t, Config{})
	ctx := context.Background()
	sbID, sbCfg := runPod(t, r, "u1", nil)

	sst, err := r.PodSandboxStatus(ctx, sbID)
	if err != nil {
		t.Fatal(err)
	}
	if sst.State != cri.SandboxReady || sst.IP != "10.88.0.2" || sst.CreatedAt != ns(0) {
		t.Errorf("sandbox status = %+v, want ready, ip 10.88.0.2, created at epoch", sst)
	}
	for k, want := range map[string]string{cri.PodUIDLabel: "u1", cri.PodNameLabel: "pod-u1", cri.PodNamespaceLabel: "default"} {
		if sst.Labels[k] != want {
			t.Errorf("sandbox label %s = %q, want %q", k, sst.Labels[k], want)
		}
	}
	if _, err := r.RunPodSandbox(ctx, sbCfg); err == nil || !strings.Contains(err.Error(), "is reserved") {
		t.Errorf("second RunPodSandbox with the same name and attempt: error = %v, want name reserved", err)
	}

	clk.Step(time.Second)
	id := createContainer(t, r, sbID, sbCfg, "app", "")
	st := status(t, r, id)
	if st.State != cri.ContainerCreated || st.CreatedAt != ns(time.Second) || st.StartedAt != 0 {
		t.Errorf("created container status = %+v", st)
	}
	if st.Labels[cri.ContainerNameLabel] != "app" || st.Labels[cri.PodUIDLabel] != "u1" {
		t.Errorf("container labels = %v, want container name and pod uid", st.Labels)
	}
	if !strings.HasPrefix(st.ImageRef, "sha256:") {
		t.Errorf("ImageRef = %q, want the image id", st.ImageRef)
	}
	if _, err := r.CreateContainer(ctx, sbID, containerConfig("app", "", testImage), sbCfg); err == nil || !strings.Contains(err.Error(), `failed to reserve container name "app_`+sbID+`_0": name is reserved for "`+id+`"`) {
		t.Errorf("second CreateContainer with the same name and attempt: error = %v, want name app_%s_0 reserved", err, sbID)
	}
	// Removing a container frees its name.
	spare := createContainer(t, r, sbID, sbCfg, "spare", "")
	if err := r.RemoveContainer(ctx, spare); err != nil {
		t.Fatal(err)
	}
	if again := createContainer(t, r, sbID, sbCfg, "spare", ""); again == spare {
		t.Errorf("the name's second container has the first's ID %s", again)
	} else if err := r.RemoveContainer(ctx, again); err != nil {
		t.Fatal(err)
	}

	clk.Step(time.Second)
	if err := r.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := r.StartContainer(ctx, id); err == nil {
		t.Error("starting a running container succeeded, want an error")
	}
	clk.Step(time.Hour)
	st = status(t, r, id)
	if st.State != cri.ContainerRunning || st.StartedAt != ns(2*time.Second) {
		t.Errorf("an unscripted app container after an hour: %+v, want running since 2s", st)
	}

	if err := r.StopContainer(ctx, id, 30); err != nil {
		t.Fatal(err)
	}
	st = status(t, r, id)
	if st.State != cri.ContainerExited || st.ExitCode != 0 || st.Reason != ReasonCompleted || st.FinishedAt != ns(time.Hour+2*time.Second) {
		t.Errorf("stopped container = %+v, want exited 0 Completed at stop time", st)
	}
	if err := r.StopContainer(ctx, id, 30); err != nil {
		t.Errorf("stopping a stopped container: %v, want success", err)
	}

	if err := r.StopPodSandbox(ctx, sbID); err != nil {
		t.Fatal(err)
	}
	if sst, _ := r.PodSandboxStatus(ctx, sbID); sst.State != cri.SandboxNotReady {
		t.Errorf("sandbox after stop is %v", sst.State)
	}
	if _, err := r.CreateContainer(ctx, sbID, containerConfig("late", "", testImage), sbCfg); err == nil || !strings.Contains(err.Error(), "not ready") {
		t.Errorf("CreateContainer in a stopped sandbox: error = %v, want not ready", err)
	}
	if err := r.RemovePodSandbox(ctx, sbID); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ContainerStatus(ctx, id); !errors.Is(err, cri.ErrNotFound) {
		t.Errorf("ContainerStatus after sandbox removal: %v, want ErrNotFound", err)
	}
	if _, err := r.PodSandboxStatus(ctx, sbID); !errors.Is(err, cri.ErrNotFound) {
		t.Errorf("PodSandboxStatus after removal: %v, want ErrNotFound", err)
	}
	if err := r.RemovePodSandbox(ctx, sbID); err != nil {
		t.Errorf("removing a removed sandbox: %v, want success (CRI idempotence)", err)
	}
	if err := r.StopPodSandbox(ctx, sbID); err != nil {
		t.Errorf("stopping a removed sandbox: %v, want success", err)
	}
	if err := r.RemoveContainer(ctx, id); err != nil {
		t.Errorf("removing a removed container: %v, want success", err)
	}
	if err := r.StopContainer(ctx, id, 1); !errors.Is(err, cri.ErrNotFound) {
		t.Errorf("stopping an unknown container: %v, want ErrNotFound", err)
	}
	if pods, _ := r.GetPods(ctx, true); len(pods) != 0 {
		t.Errorf("GetPods after removal = %d pods", len(pods))
	}
	// The same pod may run again once its old sandbox is gone.
	if _, err := r.RunPodSandbox(ctx, sbCfg); err != nil {
		t.Errorf("RunPodSandbox after removal: %v", err)
	}
}

func TestCreateContainerNeedsImageAndSandbox(t *testing.T) {
	r, _ := newRuntime(t, Config{})
	ctx := context.Background()
	sbID, sbCfg := runPod(t, r, "u1", nil)
	if _, err := r.CreateContainer(ctx, sbID, containerConfig("a", "", "never-pulled"), sbCfg); !errors.Is(err, cri.ErrNotFound) || !strings.Contains(err.Error(), `image "never-pulled"`) {
		t.Errorf("CreateContainer without the image: %v, want image not found", err)
	}
	if _, err := r.CreateContainer(ctx, "nope", containerConfig("a", "", "x"), sbCfg); !errors.Is(err, cri.ErrNotFound) {
		t.Errorf("CreateContainer in an unknown sandbox: %v, want ErrNotFound", err)
	}
	if _, err := r.CreateContainer(ctx, sbID, containerConfig("a", "daemon", "x"), sbCfg); err == nil || !strings.Contains(err.Error(), `unknown container type "daemon"`) {
		t.Errorf("CreateContainer with a bad role: %v", err)
	}
}

func TestBadBehaviourAnnotation(t *testing.T) {
	r, _ := newRuntime(t, Config{})
	ctx := context.Background()
	sbID, sbCfg := runPod(t, r, "u1", annotate("main", "runFor=forever"))
	if _, err := r.PullImage(ctx, cri.ImageSpec{Image: testImage}, nil); err != nil {
		t.Fatal(err)
	}
	_, err := r.CreateContainer(ctx, sbID, containerConfig("main", "", testImage), sbCfg)
	if err == nil {
		t.Fatal("CreateContainer with a bad annotation succeeded")
	}
	for _, s := range []string{`create container "main"`, `annotation "minikubelet.io/behavior.main"`, `key "runFor"`, `bad value "forever"`} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not contain %q", err, s)
		}
	}
	var be *behavior.Error
	if !errors.As(err, &be) || be.Key != "runFor" {
		t.Errorf("error does not unwrap to the behavior.Error: %v", err)
	}
	cs, _ := r.ListContainers(ctx, nil)
	if len(cs) != 0 {
		t.Errorf("a container was created despite the error: %+v", cs)
	}
	// Other containers of the pod are unaffected.
	if _, err := r.CreateContainer(ctx, sbID, containerConfig("other", "", testImage), sbCfg); err != nil {
		t.Errorf("CreateContainer of an unscripted container: %v", err)
	}
}

// TestBehaviours covers every annotation key and the unscripted defaults: the container is
// started at t=0 and observed at the listed times.
func TestBehaviours(t *testing.T) {
	type obs struct {
		at       time.Duration
		state    cri.ContainerState
		exitCode int32
		reason   string
		finished time.Duration // FinishedAt, for exited
		started  time.Duration // StartedAt, for running/exited (-1: not started)
	}
	tests := []struct {
		name     string
		role     string
		value    string // annotation value; "-" means no annotation
		defaults string // Config.DefaultBehavior
		initDur  time.Duration
		want     []obs
	}{
		{name: "app runs until stopped", value: "-", want: []obs{{at: 24 * time.Hour, state: cri.ContainerRunning}}},
		{name: "sidecar runs until stopped", role: ContainerTypeSidecar, value: "-", want: []obs{{at: 24 * time.Hour, state: cri.ContainerRunning}}},
		{name: "init completes after 1s", role: ContainerTypeInit, value: "-", want: []obs{
			{at: 999 * time.Millisecond, state: cri.ContainerRunning},
			{at: time.Second, state: cri.ContainerExited, reason: ReasonCompleted, finished: time.Second},
		}},
		{name: "init duration is configurable", role: ContainerTypeInit, value: "-", initDur: 5 * time.Second, want: []obs{
			{at: 4 * time.Second, state: cri.ContainerRunning},
			{at: 5 * time.Second, state: cri.ContainerExited, reason: ReasonCompleted, finished: 5 * time.Second},
		}},
		{name: "init with exitCode fails after the init duration", role: ContainerTypeInit, value: "exitCode=2", want: []obs{
			{at: time.Second, state: cri.ContainerExited, exitCode: 2, reason: ReasonError, finished: time.Second},
		}},
		{name: "init with runFor", role: ContainerTypeInit, value: "runFor=10s", want: []obs{
			{at: 9 * time.Second, state: cri.ContainerRunning},
			{at: 10 * time.Second, state: cri.ContainerExited, reason: ReasonCompleted, finished: 10 * time.Second},
		}},
		{name: "runFor exits 0", value: "runFor=30s", want: []obs{
			{at: 29 * time.Second, state: cri.ContainerRunning},
			// Observed late: FinishedAt is still the scheduled time.
			{at: 45 * time.Second, state: cri.ContainerExited, reason: ReasonCompleted, finished: 30 * time.Second},
		}},
		{name: "runFor with exitCode", value: "runFor=10s,exitCode=1", want: []obs{
			{at: 10 * time.Second, state: cri.ContainerExited, exitCode: 1, reason: ReasonError, finished: 10 * time.Second},
		}},
		{name: "exitCode alone crashes at once", value: "exitCode=3", want: []obs{
			{at: 0, state: cri.ContainerExited, exitCode: 3, reason: ReasonError, finished: 0},
		}},
		{name: "runFor zero", value: "runFor=0s", want: []obs{
			{at: 0, state: cri.ContainerExited, reason: ReasonCompleted, finished: 0},
		}},
		{name: "startDelay keeps it created", value: "startDelay=2s", want: []obs{
			{at: 1999 * time.Millisecond, state: cri.ContainerCreated, started: -1},
			{at: 2 * time.Second, state: cri.ContainerRunning, started: 2 * time.Second},
		}},
		{name: "startDelay then runFor counts from the start", value: "startDelay=2s,runFor=3s", want: []obs{
			{at: 4 * time.Second, state: cri.ContainerRunning, started: 2 * time.Second},
			{at: 5 * time.Second, state: cri.ContainerExited, reason: ReasonCompleted, finished: 5 * time.Second, started: 2 * time.Second},
		}},
		{name: "oomAfter", value: "oomAfter=1m", want: []obs{
			{at: 59 * time.Second, state: cri.ContainerRunning},
			{at: time.Minute, state: cri.ContainerExited, exitCode: 137, reason: ReasonOOMKilled, finished: time.Minute},
		}},
		{name: "oomAfter before runFor wins", value: "runFor=2m,oomAfter=1m", want: []obs{
			{at: 2 * time.Minute, state: cri.ContainerExited, exitCode: 137, reason: ReasonOOMKilled, finished: time.Minute},
		}},
		{name: "runFor before oomAfter wins", value: "runFor=30s,oomAfter=1m", want: []obs{
			{at: 2 * time.Minute, state: cri.ContainerExited, reason: ReasonCompleted, finished: 30 * time.Second},
		}},
		{name: "init OOM before its duration", role: ContainerTypeInit, value: "oomAfter=500ms", want: []obs{
			{at: time.Second, state: cri.ContainerExited, exitCode: 137, reason: ReasonOOMKilled, finished: 500 * time.Millisecond},
		}},
		// The longest durations a behaviour can name end after the clock's last instant:
		// the container runs on, rather than the sum wrapping round to the past.
		{name: "runFor beyond the clock's range never ends", value: "runFor=2562047h", want: []obs{{at: 24 * time.Hour, state: cri.ContainerRunning}}},
		{name: "oomAfter beyond the clock's range never fires", value: "oomAfter=2562047h", want: []obs{{at: 24 * time.Hour, state: cri.ContainerRunning}}},
		{name: "startDelay beyond the clock's range never starts", value: "startDelay=2562047h", want: []obs{{at: 24 * time.Hour, state: cri.ContainerCreated, started: -1}}},
		{name: "default behaviour applies without annotation", value: "-", defaults: "runFor=5s,exitCode=4", want: []obs{
			{at: 5 * time.Second, state: cri.ContainerExited, exitCode: 4, reason: ReasonError, finished: 5 * time.Second},
		}},
		{name: "annotation replaces the default", value: "runFor=7s", defaults: "runFor=5s,exitCode=4", want: []obs{
			{at: 6 * time.Second, state: cri.ContainerRunning},
			{at: 7 * time.Second, state: cri.ContainerExited, reason: ReasonCompleted, finished: 7 * time.Second},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, clk := newRuntime(t, Config{DefaultBehavior: tc.defaults, InitContainerDuration: tc.initDur})
			var ann map[string]string
			if tc.value != "-" {
				ann = annotate("c", tc.value)
			}
			sbID, sbCfg := runPod(t, r, "u1", ann)
			id := startContainer(t, r, sbID, sbCfg, "c", tc.role)
			elapsed := time.Duration(0)
			for _, o := range tc.want {
				clk.Step(o.at - elapsed)
				elapsed = o.at
				st := status(t, r, id)
				if st.State != o.state || st.ExitCode != o.exitCode || st.Reason != o.reason {
					t.Fatalf("at %v: state %v exit %d reason %q, want %v %d %q", o.at, st.State, st.ExitCode, st.Reason, o.state, o.exitCode, o.reason)
				}
				if o.state == cri.ContainerExited && st.FinishedAt != ns(o.finished) {
					t.Errorf("at %v: FinishedAt = %v, want %v", o.at, time.Unix(0, st.FinishedAt).Sub(epoch), o.finished)
				}
				wantStarted := int64(0)
				if o.started >= 0 {
					wantStarted = ns(o.started)
				}
				if st.StartedAt != wantStarted {
					t.Errorf("at %v: StartedAt = %d, want %d", o.at, st.StartedAt, wantStarted)
				}
			}
		})
	}
}

func TestStopContainer(t *testing.T) {
	tests := []struct {
		name      string
		value     string
		timeout   int64
		wantAfter time.Duration // virtual time the stop takes
		wantCode  int32
		reason    string
	}{
		{name: "no stopDelay exits at once", value: "-", timeout: 30, wantAfter: 0, wantCode: 0, reason: ReasonCompleted},
		{name: "stopDelay within grace exits 0 after it", value: "stopDelay=3s", timeout: 30, wantAfter: 3 * time.Second, wantCode: 0, reason: ReasonCompleted},
		{name: "stopDelay equal to grace exits 0", value: "stopDelay=5s", timeout: 5, wantAfter: 5 * time.Second, wantCode: 0, reason: ReasonCompleted},
		{name: "stopDelay beyond grace is killed at grace", value: "stopDelay=1m", timeout: 2, wantAfter: 2 * time.Second, wantCode: 137, reason: ReasonError},
		{name: "zero grace kills at once", value: "stopDelay=3s", timeout: 0, wantAfter: 0, wantCode: 137, reason: ReasonError},
		{name: "own exit during grace wins", value: "runFor=10s,exitCode=5,stopDelay=1m", timeout: 30, wantAfter: 10 * time.Second, wantCode: 5, reason: ReasonError},
		// terminationGracePeriodSeconds has no upper bound: one longer than a time.Duration
		// (292 years) is that long, not a negative duration that kills at once.
		{name: "grace beyond the duration range still waits for stopDelay", value: "stopDelay=3s", timeout: 9223372037, wantAfter: 3 * time.Second, wantCode: 0, reason: ReasonCompleted},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, clk := newRuntime(t, Config{})
			var ann map[string]string
			if tc.value != "-" {
				ann = annotate("c", tc.value)
			}
			sbID, sbCfg := runPod(t, r, "u1", ann)
			id := startContainer(t, r, sbID, sbCfg, "c", "")
			// A stop is a pending operation that completes when the container exits.
			call := start(func(ctx context.Context) error { return r.StopContainer(ctx, id, tc.timeout) })
			if tc.wantAfter > 0 {
				run(t, r, clk, tc.wantAfter-time.Millisecond)
				if call.Poll() {
					t.Fatal("StopContainer returned before the container stopped")
				}
				if st := status(t, r, id); st.State != cri.ContainerRunning {
					t.Fatalf("container %v before its stop time", st.State)
				}
				run(t, r, clk, time.Millisecond)
			}
			if !call.Poll() {
				t.Fatal("StopContainer did not return once the container stopped")
			}
			if err := call.Err(); err != nil {
				t.Fatalf("StopContainer error: %v", err)
			}
			st := status(t, r, id)
			if st.State != cri.ContainerExited || st.ExitCode != tc.wantCode || st.Reason != tc.reason || st.FinishedAt != ns(tc.wantAfter) {
				t.Errorf("after stop: %v exit %d %q finished %v; want exit %d %q at %v", st.State, st.ExitCode, st.Reason, time.Unix(0, st.FinishedAt).Sub(epoch), tc.wantCode, tc.reason, tc.wantAfter)
			}
		})
	}
}

func TestStopShorterGraceWins(t *testing.T) {
	r, clk := newRuntime(t, Config{})
	sbID, sbCfg := runPod(t, r, "u1", annotate("c", "stopDelay=1m"))
	id := startContainer(t, r, sbID, sbCfg, "c", "")
	first := start(func(ctx context.Context) error { return r.StopContainer(ctx, id, 30) })
	run(t, r, clk, time.Second)
	second := start(func(ctx context.Context) error { return r.StopContainer(ctx, id, 2) })
	if next, _ := r.NextTransition(); !next.Equal(epoch.Add(3 * time.Second)) {
		t.Fatalf("next transition %v, want the second stop's kill at +3s", next)
	}
	run(t, r, clk, 2*time.Second)
	if !second.Poll() || second.Err() != nil {
		t.Fatalf("second stop: returned %t, err %v", second.Done(), second.Err())
	}
	if !first.Poll() || first.Err() != nil {
		t.Fatalf("first stop: returned %t, err %v; want it to return with the kill too", first.Done(), first.Err())
	}
	st := status(t, r, id)
	if st.ExitCode != 137 || st.FinishedAt != ns(3*time.Second) {
		t.Errorf("exit %d at %v, want 137 at 3s (the second stop's grace)", st.ExitCode, time.Unix(0, st.FinishedAt).Sub(epoch))
	}
}

// TestStopGoesOnAfterTheCallerGivesUp: a stop whose caller's deadline passes (the CRI client
// gives up) still kills the container at the end of the grace period, as a real runtime does.
func TestStopGoesOnAfterTheCallerGivesUp(t *testing.T) {
	r, clk := newRuntime(t, Config{})
	sbID, sbCfg := runPod(t, r, "u1", annotate("c", "stopDelay=1h"))
	id := startContainer(t, r, sbID, sbCfg, "c", "")
	call := start(func(ctx context.Context) error {
		return r.StopContainer(task.WithDeadline(ctx, clk.Now().Add(10*time.Second)), id, 30)
	})
	run(t, r, clk, 10*time.Second)
	if !call.Poll() || !errors.Is(call.Err(), cri.ErrDeadlineExceeded) {
		t.Fatalf("at the caller's deadline: returned %t, err %v", call.Done(), call.Err())
	}
	if st := status(t, r, id); st.State != cri.ContainerRunning {
		t.Fatalf("container %v when the caller gave up, want still running (its grace is 30s)", st.State)
	}
	run(t, r, clk, 20*time.Second)
	if st := status(t, r, id); st.State != cri.ContainerExited || st.ExitCode != ExitCodeKilled || st.FinishedAt != ns(30*time.Second) {
		t.Errorf("after the grace period: %+v, want killed at 30s", st)
	}
}

func TestStopStartingContainerKillsIt(t *testing.T) {
	r, _ := newRuntime(t, Config{})
	sbID, sbCfg := runPod(t, r, "u1", annotate("c", "startDelay=10s"))
	id := startContainer(t, r, sbID, sbCfg, "c", "")
	if err := r.StopContainer(context.Background(), id, 30); err != nil {
		t.Fatal(err)
	}
	st := status(t, r, id)
	if st.State != cri.ContainerExited || st.ExitCode != 137 || st.StartedAt != 0 {
		t.Errorf("stopped while starting: %+v, want exited 137, never started", st)
	}
}

func TestRemoveRunningContainerKillsIt(t *testing.T) {
	r, _ := newRuntime(t, Config{})
	ctx := context.Background()
	sbID, sbCfg := runPod(t, r, "u1", nil)
	id := startContainer(t, r, sbID, sbCfg, "c", "")
	s := subscribe(t, r)
	if err := r.RemoveContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	events := s.drain()
	want := []string{"CONTAINER_STOPPED_EVENT " + id, "CONTAINER_DELETED_EVENT " + id}
	if got := eventNames(events); strings.Join(got, ";") != strings.Join(want, ";") {
		t.Errorf("events = %v, want %v", got, want)
	}
	if _, err := r.ContainerStatus(ctx, id); !errors.Is(err, cri.ErrNotFound) {
		t.Errorf("status after removal: %v", err)
	}
}

func TestStopPodSandboxKillsContainers(t *testing.T) {
	r, _ := newRuntime(t, Config{})
	ctx := context.Background()
	sbID, sbCfg := runPod(t, r, "u1", annotate("a", "stopDelay=1h"))
	a := startContainer(t, r, sbID, sbCfg, "a", "")
	b := createContainer(t, r, sbID, sbCfg, "b", "")
	if err := r.StopPodSandbox(ctx, sbID); err != nil {
		t.Fatal(err)
	}
	if st := status(t, r, a); st.State != cri.ContainerExited || st.ExitCode != 137 {
		t.Errorf("running container after StopPodSandbox: %v exit %d, want killed (137)", st.State, st.ExitCode)
	}
	if st := status(t, r, b); st.State != cri.ContainerCreated {
		t.Errorf("created container after StopPodSandbox: %v, want still created (containerd skips it)", st.State)
	}
	if err := r.StartContainer(ctx, b); err == nil {
		t.Error("starting a container in a stopped sandbox succeeded")
	}
}

func TestPull(t *testing.T) {
	ctx := context.Background()
	forContainer := func(name string) cri.ImageSpec {
		return cri.ImageSpec{Image: "nginx:1.25", Annotations: map[string]string{cri.ContainerNameLabel: name}}
	}
	t.Run("pullDelay is a pending operation", func(t *testing.T) {
		r, clk := newRuntime(t, Config{})
		cfg := sandboxConfig("u1", annotate("web", "pullDelay=5s"))
		call := start(func(ctx context.Context) error { _, err := r.PullImage(ctx, forContainer("web"), cfg); return err })
		run(t, r, clk, 4*time.Second)
		if call.Poll() {
			t.Fatal("pull returned before its delay")
		}
		run(t, r, clk, time.Second)
		if !call.Poll() || call.Err() != nil {
			t.Fatalf("pull after 5s: returned %t, err %v", call.Done(), call.Err())
		}
		img, err := r.ImageStatus(ctx, cri.ImageSpec{Image: "nginx:1.25"})
		if err != nil || img == nil {
			t.Fatalf("ImageStatus after pull = %v, %v", img, err)
		}
	})
	t.Run("a pull given up by its caller records nothing", func(t *testing.T) {
		r, clk := newRuntime(t, Config{})
		cfg := sandboxConfig("u1", annotate("web", "pullDelay=5s"))
		call := start(func(ctx context.Context) error {
			_, err := r.PullImage(task.WithDeadline(ctx, clk.Now().Add(time.Second)), forContainer("web"), cfg)
			return err
		})
		run(t, r, clk, 10*time.Second)
		if !call.Poll() || !errors.Is(call.Err(), cri.ErrDeadlineExceeded) {
			t.Errorf("pull past its caller's deadline: returned %t, err %v", call.Done(), call.Err())
		}
		if imgs, _ := r.ListImages(ctx); len(imgs) != 0 {
			t.Errorf("a pull given up recorded the image: %v", imgs)
		}
	})
	t.Run("pullError fails with the reason", func(t *testing.T) {
		r, _ := newRuntime(t, Config{})
		cfg := sandboxConfig("u1", annotate("web", "pullError=ErrImagePull"))
		_, err := r.PullImage(ctx, forContainer("web"), cfg)
		var pe *PullError
		if !errors.As(err, &pe) || pe.Reason != "ErrImagePull" || pe.Image != "nginx:1.25" {
			t.Fatalf("PullImage error = %v, want a PullError with reason ErrImagePull", err)
		}
		if !strings.Contains(err.Error(), "minikubelet.io/behavior.web") {
			t.Errorf("error %q does not name the annotation", err)
		}
		// Another container of the same pod pulls fine.
		if _, err := r.PullImage(ctx, forContainer("sidecar"), cfg); err != nil {
			t.Errorf("pull for an unscripted container: %v", err)
		}
	})
	t.Run("unnamed pull uses the pod's pull scripts", func(t *testing.T) {
		r, _ := newRuntime(t, Config{})
		cfg := sandboxConfig("u1", map[string]string{
			behavior.AnnotationKey("b"): "pullError=ErrRegistryUnavailable",
			behavior.AnnotationKey("a"): "runFor=1s",
		})
		_, err := r.PullImage(ctx, cri.ImageSpec{Image: "x"}, cfg)
		var pe *PullError
		if !errors.As(err, &pe) || pe.Reason != "ErrRegistryUnavailable" {
			t.Fatalf("PullImage error = %v", err)
		}
	})
	t.Run("images are listed with stable ids and sizes", func(t *testing.T) {
		r1, _ := newRuntime(t, Config{Seed: 1})
		r2, _ := newRuntime(t, Config{Seed: 2})
		for _, r := range []*Runtime{r1, r2} {
			for _, img := range []string{"alpine:3.19", "busybox:1.36", "alpine:3.19"} {
				if _, err := r.PullImage(ctx, cri.ImageSpec{Image: img}, nil); err != nil {
					t.Fatal(err)
				}
			}
		}
		l1, _ := r1.ListImages(ctx)
		l2, _ := r2.ListImages(ctx)
		if len(l1) != 2 || l1[0].RepoTags[0] != "alpine:3.19" || l1[1].RepoTags[0] != "busybox:1.36" {
			t.Fatalf("ListImages = %+v, want a:1, b:2 once each", l1)
		}
		for i := range l1 {
			if l1[i].ID != l2[i].ID || l1[i].Size != l2[i].Size || l1[i].Size < 10<<20 {
				t.Errorf("image %d: %+v vs %+v, want the same id and a size >= 10MiB", i, l1[i], l2[i])
			}
		}
		if err := r1.RemoveImage(ctx, cri.ImageSpec{Image: "alpine:3.19"}); err != nil {
			t.Fatal(err)
		}
		if img, _ := r1.ImageStatus(ctx, cri.ImageSpec{Image: "alpine:3.19"}); img != nil {
			t.Errorf("image still present after RemoveImage: %+v", img)
		}
		if err := r1.RemoveImage(ctx, cri.ImageSpec{Image: "alpine:3.19"}); err != nil {
			t.Errorf("removing an absent image: %v", err)
		}
	})
}

func TestUsage(t *testing.T) {
	r, clk := newRuntime(t, Config{})
	sbID, sbCfg := runPod(t, r, "u1", map[string]string{
		behavior.AnnotationKey("a"): "memoryUsage=256Mi",
		behavior.AnnotationKey("b"): "memoryUsage=1Gi,runFor=10s",
		behavior.AnnotationKey("c"): "memoryUsage=64Mi,startDelay=5s",
	})
	a := startContainer(t, r, sbID, sbCfg, "a", "")
	startContainer(t, r, sbID, sbCfg, "b", "")
	startContainer(t, r, sbID, sbCfg, "c", "")
	r.SetMemoryUsage(100 << 20)
	r.SetDiskUsage(5 << 30)
	r.SetPIDUsage(4000)
	steps := []struct {
		at   time.Duration
		want int64
	}{
		{0, (100 + 256 + 1024) << 20},
		{5 * time.Second, (100 + 256 + 1024 + 64) << 20},
		{10 * time.Second, (100 + 256 + 64) << 20},
	}
	elapsed := time.Duration(0)
	for _, s := range steps {
		clk.Step(s.at - elapsed)
		elapsed = s.at
		u := r.Usage()
		if wantDisk := 5<<30 + imageAndLogBytes(t, r); u.MemoryBytes != s.want || u.DiskBytes != wantDisk || u.PIDs != 4000 {
			t.Errorf("at %v: Usage() = %+v, want memory %d, disk %d (5Gi, images and logs), 4000 pids", s.at, u, s.want, wantDisk)
		}
	}
	if m, err := r.ContainerMemoryUsage(a); err != nil || m != 256<<20 {
		t.Errorf("ContainerMemoryUsage = %d, %v", m, err)
	}
	if err := r.StopContainer(context.Background(), a, 0); err != nil {
		t.Fatal(err)
	}
	if m, _ := r.ContainerMemoryUsage(a); m != 0 {
		t.Errorf("ContainerMemoryUsage of an exited container = %d, want 0", m)
	}
	if _, err := r.ContainerMemoryUsage("nope"); !errors.Is(err, cri.ErrNotFound) {
		t.Errorf("ContainerMemoryUsage(unknown): %v", err)
	}
}

func TestListFilters(t *testing.T) {
	r, _ := newRuntime(t, Config{})
	ctx := context.Background()
	sb1, cfg1 := runPod(t, r, "u1", nil)
	sb2, cfg2 := runPod(t, r, "u2", nil)
	a := startContainer(t, r, sb1, cfg1, "a", "")
	b := createContainer(t, r, sb1, cfg1, "b", "")
	c := startContainer(t, r, sb2, cfg2, "c", "")
	if err := r.StopPodSandbox(ctx, sb2); err != nil {
		t.Fatal(err)
	}
	ready, running, exited := cri.SandboxReady, cri.ContainerRunning, cri.ContainerExited
	sbTests := []struct {
		name   string
		filter *cri.PodSandboxFilter
		want   []string
	}{
		{"nil", nil, []string{sb1, sb2}},
		{"id", &cri.PodSandboxFilter{ID: sb2}, []string{sb2}},
		{"unknown id", &cri.PodSandboxFilter{ID: "x"}, nil},
		{"ready", &cri.PodSandboxFilter{State: &ready}, []string{sb1}},
		{"pod uid", &cri.PodSandboxFilter{LabelSelector: map[string]string{cri.PodUIDLabel: "u2"}}, []string{sb2}},
		{"pod name", &cri.PodSandboxFilter{LabelSelector: map[string]string{cri.PodNameLabel: "pod-u1"}}, []string{sb1}},
		{"uid and state", &cri.PodSandboxFilter{State: &ready, LabelSelector: map[string]string{cri.PodUIDLabel: "u2"}}, nil},
	}
	for _, tc := range sbTests {
		t.Run("sandboxes/"+tc.name, func(t *testing.T) {
			got, err := r.ListPodSandbox(ctx, tc.filter)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, s := range got {
				ids = append(ids, s.ID)
			}
			if strings.Join(ids, ",") != strings.Join(tc.want, ",") {
				t.Errorf("ListPodSandbox = %v, want %v", ids, tc.want)
			}
		})
	}
	cTests := []struct {
		name   string
		filter *cri.ContainerFilter
		want   []string
	}{
		{"nil", nil, []string{a, b, c}},
		{"id", &cri.ContainerFilter{ID: b}, []string{b}},
		{"sandbox", &cri.ContainerFilter{PodSandboxID: sb1}, []string{a, b}},
		{"running", &cri.ContainerFilter{State: &running}, []string{a}},
		{"exited", &cri.ContainerFilter{State: &exited}, []string{c}},
		{"pod uid", &cri.ContainerFilter{LabelSelector: map[string]string{cri.PodUIDLabel: "u1"}}, []string{a, b}},
		{"container name", &cri.ContainerFilter{LabelSelector: map[string]string{cri.ContainerNameLabel: "c"}}, []string{c}},
		{"sandbox and state", &cri.ContainerFilter{PodSandboxID: sb1, State: &exited}, nil},
	}
	for _, tc := range cTests {
		t.Run("containers/"+tc.name, func(t *testing.T) {
			got, err := r.ListContainers(ctx, tc.filter)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, c := range got {
				ids = append(ids, c.ID)
			}
			if strings.Join(ids, ",") != strings.Join(tc.want, ",") {
				t.Errorf("ListContainers = %v, want %v", ids, tc.want)
			}
		})
	}
}

func TestCancelledContextFailsEveryCall(t *testing.T) {
	r, _ := newRuntime(t, Config{})
	sbID, sbCfg := runPod(t, r, "u1", nil)
	id := startContainer(t, r, sbID, sbCfg, "c", "")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	img := cri.ImageSpec{Image: testImage}
	calls := map[string]func() error{
		"RunPodSandbox":    func() error { _, err := r.RunPodSandbox(ctx, sandboxConfig("u2", nil)); return err },
		"StopPodSandbox":   func() error { return r.StopPodSandbox(ctx, sbID) },
		"RemovePodSandbox": func() error { return r.RemovePodSandbox(ctx, sbID) },
		"PodSandboxStatus": func() error { _, err := r.PodSandboxStatus(ctx, sbID); return err },
		"ListPodSandbox":   func() error { _, err := r.ListPodSandbox(ctx, nil); return err },
		"CreateContainer": func() error {
			_, err := r.CreateContainer(ctx, sbID, containerConfig("d", "", img.Image), sbCfg)
			return err
		},
		"StartContainer":     func() error { return r.StartContainer(ctx, id) },
		"StopContainer":      func() error { return r.StopContainer(ctx, id, 0) },
		"RemoveContainer":    func() error { return r.RemoveContainer(ctx, id) },
		"ListContainers":     func() error { _, err := r.ListContainers(ctx, nil); return err },
		"ContainerStatus":    func() error { _, err := r.ContainerStatus(ctx, id); return err },
		"Status":             func() error { _, err := r.Status(ctx); return err },
		"GetContainerEvents": func() error { _, err := r.GetContainerEvents(ctx, nil); return err },
		"PullImage":          func() error { _, err := r.PullImage(ctx, img, nil); return err },
		"ImageStatus":        func() error { _, err := r.ImageStatus(ctx, img); return err },
		"ListImages":         func() error { _, err := r.ListImages(ctx); return err },
		"RemoveImage":        func() error { return r.RemoveImage(ctx, img) },
		"GetPods":            func() error { _, err := r.GetPods(ctx, true); return err },
		"GetPodStatus":       func() error { _, err := r.GetPodStatus(ctx, "u1", "pod-u1", "default"); return err },
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			if err := call(); !errors.Is(err, context.Canceled) {
				t.Errorf("%s with a cancelled context: %v, want context.Canceled", name, err)
			}
		})
	}
	// Nothing changed.
	if st := status(t, r, id); st.State != cri.ContainerRunning {
		t.Errorf("container state after cancelled calls: %v", st.State)
	}
}

// TestScheduleStaysBounded: containers with far-off scripted exits that are removed long
// before do not pile up in the schedule.
func TestScheduleStaysBounded(t *testing.T) {
	r, _ := newRuntime(t, Config{})
	ctx := context.Background()
	sbID, sbCfg := runPod(t, r, "u1", annotate("c", "oomAfter=24h"))
	for i := 0; i < 1000; i++ {
		id := startContainer(t, r, sbID, sbCfg, "c", "")
		if err := r.RemoveContainer(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	r.mu.Lock()
	n := len(r.queue)
	r.mu.Unlock()
	if n > 64 {
		t.Errorf("schedule holds %d entries for no live container", n)
	}
	if _, ok := r.NextTransition(); ok {
		t.Error("a removed container still has a transition")
	}
}
