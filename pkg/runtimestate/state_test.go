package runtimestate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/pkg/cri"
)

type fakeRuntime struct {
	mu     sync.Mutex
	status *cri.RuntimeStatus
	err    error
	calls  int
}

func (f *fakeRuntime) Status(context.Context) (*cri.RuntimeStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	return f.status, f.err
}

func (f *fakeRuntime) set(st *cri.RuntimeStatus, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.status, f.err = st, err
}

func (f *fakeRuntime) callCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

func ready() *cri.RuntimeStatus {
	return &cri.RuntimeStatus{Conditions: []cri.RuntimeCondition{
		{Type: cri.RuntimeReady, Status: true},
		{Type: cri.NetworkReady, Status: true},
	}}
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

func newState(t *testing.T, rt StatusGetter) (*State, *clocktesting.FakeClock) {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	s, err := New(Config{Clock: clk, Runtime: rt})
	if err != nil {
		t.Fatal(err)
	}
	return s, clk
}

func TestNewValidates(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"no clock", Config{Runtime: &fakeRuntime{}}, "Config.Clock is required"},
		{"no runtime", Config{Clock: clk}, "Config.Runtime is required"},
		{"negative threshold", Config{Clock: clk, Runtime: &fakeRuntime{}, SyncThreshold: -time.Second}, "SyncThreshold must not be negative, got -1s"},
		{"negative period", Config{Clock: clk, Runtime: &fakeRuntime{}, Period: -time.Second}, "Period must not be negative, got -1s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New() error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
	s, err := New(Config{Clock: clk, Runtime: &fakeRuntime{}})
	if err != nil {
		t.Fatal(err)
	}
	if s.threshold != DefaultSyncThreshold || s.Period() != DefaultPeriod {
		t.Errorf("defaults: threshold %v period %v", s.threshold, s.Period())
	}
}

func TestErrorsBeforeFirstCheck(t *testing.T) {
	s, _ := newState(t, &fakeRuntime{})
	if got, want := errString(s.RuntimeErrors()), "container runtime status check may not have completed yet"; got != want {
		t.Errorf("RuntimeErrors() = %q, want %q", got, want)
	}
	if got, want := errString(s.NetworkErrors()), "network state unknown"; got != want {
		t.Errorf("NetworkErrors() = %q, want %q", got, want)
	}
	if err := s.StorageErrors(); err != nil {
		t.Errorf("StorageErrors() = %v, want nil", err)
	}
}

func TestUpdateRuntimeUp(t *testing.T) {
	for _, tc := range []struct {
		name        string
		status      *cri.RuntimeStatus
		statusErr   error
		wantErr     string
		wantRuntime string
		wantNetwork string
	}{
		{
			name:        "ready",
			status:      ready(),
			wantRuntime: "<nil>",
			wantNetwork: "<nil>",
		},
		{
			name: "runtime not ready",
			status: &cri.RuntimeStatus{Conditions: []cri.RuntimeCondition{
				{Type: cri.RuntimeReady, Status: false, Reason: "InjectedFault", Message: "runtime is broken"},
				{Type: cri.NetworkReady, Status: true},
			}},
			// no successful sync yet, so both the "not completed" and the condition show
			wantRuntime: "[container runtime status check may not have completed yet, container runtime not ready: RuntimeReady=false reason:InjectedFault message:runtime is broken]",
			wantNetwork: "<nil>",
		},
		{
			name: "network not ready",
			status: &cri.RuntimeStatus{Conditions: []cri.RuntimeCondition{
				{Type: cri.RuntimeReady, Status: true},
				{Type: cri.NetworkReady, Status: false, Reason: "NetworkPluginNotReady", Message: "cni config uninitialized"},
			}},
			wantRuntime: "<nil>",
			wantNetwork: "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:cni config uninitialized",
		},
		{
			name:        "conditions missing",
			status:      &cri.RuntimeStatus{},
			wantRuntime: "[container runtime status check may not have completed yet, container runtime not ready: <nil>]",
			wantNetwork: "container runtime network not ready: <nil>",
		},
		{
			name:        "status call fails",
			statusErr:   errors.New("rpc error: deadline exceeded"),
			wantErr:     "container runtime sanity check failed: rpc error: deadline exceeded",
			wantRuntime: "container runtime status check may not have completed yet",
			wantNetwork: "network state unknown",
		},
		{
			name:        "nil status",
			wantErr:     "container runtime status is nil",
			wantRuntime: "container runtime status check may not have completed yet",
			wantNetwork: "network state unknown",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := &fakeRuntime{status: tc.status, err: tc.statusErr}
			s, _ := newState(t, rt)
			err := s.UpdateRuntimeUp(context.Background())
			if got := errString(err); (tc.wantErr == "" && err != nil) || (tc.wantErr != "" && got != tc.wantErr) {
				t.Fatalf("UpdateRuntimeUp() = %q, want %q", got, tc.wantErr)
			}
			if got := errString(s.RuntimeErrors()); got != tc.wantRuntime {
				t.Errorf("RuntimeErrors() = %q, want %q", got, tc.wantRuntime)
			}
			if got := errString(s.NetworkErrors()); got != tc.wantNetwork {
				t.Errorf("NetworkErrors() = %q, want %q", got, tc.wantNetwork)
			}
		})
	}
}

func TestFailedCheckKeepsPreviousState(t *testing.T) {
	rt := &fakeRuntime{status: ready()}
	s, clk := newState(t, rt)
	ctx := context.Background()
	if err := s.UpdateRuntimeUp(ctx); err != nil {
		t.Fatal(err)
	}
	synced := s.LastSync()
	rt.set(nil, errors.New("boom"))
	clk.Step(5 * time.Second)
	if err := s.UpdateRuntimeUp(ctx); err == nil {
		t.Fatal("UpdateRuntimeUp() = nil, want the Status() error")
	}
	if !s.LastSync().Equal(synced) {
		t.Errorf("LastSync moved on a failed check: %v -> %v", synced, s.LastSync())
	}
	if err := s.RuntimeErrors(); err != nil {
		t.Errorf("RuntimeErrors() = %v, want nil (old state kept within the threshold)", err)
	}
	if err := s.NetworkErrors(); err != nil {
		t.Errorf("NetworkErrors() = %v, want nil (old state kept)", err)
	}
}

func TestRuntimeDownAfterThreshold(t *testing.T) {
	rt := &fakeRuntime{status: ready()}
	s, clk := newState(t, rt)
	ctx := context.Background()
	if err := s.UpdateRuntimeUp(ctx); err != nil {
		t.Fatal(err)
	}
	rt.set(nil, errors.New("hung"))
	clk.Step(DefaultSyncThreshold - time.Nanosecond)
	if err := s.RuntimeErrors(); err != nil {
		t.Fatalf("just before the threshold: RuntimeErrors() = %v, want nil", err)
	}
	clk.Step(time.Nanosecond)
	if got, want := errString(s.RuntimeErrors()), "container runtime is down"; got != want {
		t.Fatalf("at the threshold: RuntimeErrors() = %q, want %q", got, want)
	}
	// a runtime that answers but is not ready does not count as a successful sync either
	rt.set(&cri.RuntimeStatus{Conditions: []cri.RuntimeCondition{{Type: cri.RuntimeReady, Reason: "R", Message: "M"}, {Type: cri.NetworkReady, Status: true}}}, nil)
	_ = s.UpdateRuntimeUp(ctx)
	if got, want := errString(s.RuntimeErrors()), "[container runtime is down, container runtime not ready: RuntimeReady=false reason:R message:M]"; got != want {
		t.Fatalf("RuntimeErrors() = %q, want %q", got, want)
	}
	rt.set(ready(), nil)
	if err := s.UpdateRuntimeUp(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.RuntimeErrors(); err != nil {
		t.Fatalf("after recovery: RuntimeErrors() = %v, want nil", err)
	}
}

func TestHealthChecks(t *testing.T) {
	s, clk := newState(t, &fakeRuntime{status: ready()})
	if err := s.UpdateRuntimeUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	lastRelist := clk.Now()
	threshold := 3 * time.Minute
	// a PLEG-like check: healthy until the last relist is older than the threshold
	s.AddHealthCheck("PLEG", func() (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		if elapsed := clk.Since(lastRelist); elapsed > threshold {
			return false, fmt.Errorf("pleg was last seen active %v ago; threshold is %v", elapsed, threshold)
		}
		return true, nil
	})
	s.AddHealthCheck("EventedPLEG", func() (bool, error) { return true, nil })
	if err := s.RuntimeErrors(); err != nil {
		t.Fatalf("RuntimeErrors() = %v, want nil", err)
	}
	clk.Step(3*time.Minute + 10*time.Second)
	// the runtime itself is still fine (keep it synced)
	if err := s.UpdateRuntimeUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, want := errString(s.RuntimeErrors()), "PLEG is not healthy: pleg was last seen active 3m10s ago; threshold is 3m0s"; got != want {
		t.Fatalf("RuntimeErrors() = %q, want %q", got, want)
	}
	mu.Lock()
	lastRelist = clk.Now()
	mu.Unlock()
	if err := s.RuntimeErrors(); err != nil {
		t.Fatalf("after the PLEG recovered: RuntimeErrors() = %v, want nil", err)
	}
}

func TestPollLoopPollsEveryPeriod(t *testing.T) {
	rt := &fakeRuntime{status: ready()}
	s, clk := newState(t, rt)
	ctx := context.Background()
	if !s.Due(clk.Now()).Equal(clk.Now()) {
		t.Fatal("the first poll is due at once")
	}
	for i := 1; i <= 4; i++ {
		now := clk.Now()
		if due := s.Due(now); !due.Equal(now) {
			t.Fatalf("poll %d due at %v, want %v", i, due, now)
		}
		s.Step(ctx)
		if got := rt.callCount(); got != i {
			t.Fatalf("calls = %d, want %d", got, i)
		}
		if due := s.Due(now); !due.Equal(now.Add(DefaultPeriod)) {
			t.Fatalf("next poll due at %v, want a period later", due)
		}
		clk.Step(DefaultPeriod)
	}
}

// TestSyncErrorsLeaveOutReportOnlyChecks: a report-only check (the evented PLEG's full event
// channel) makes the node NotReady through RuntimeErrors but does not stop the sync loop,
// which gates on SyncErrors and is the one that drains the channel; a regular check gates
// both.
func TestSyncErrorsLeaveOutReportOnlyChecks(t *testing.T) {
	failing := func() (bool, error) { return false, errors.New("channel full") }
	tests := []struct {
		name       string
		reportOnly bool
		wantSync   string
	}{
		{"regular check", false, "EventedPLEG is not healthy: channel full"},
		{"report-only check", true, "<nil>"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := newState(t, &fakeRuntime{status: ready()})
			if err := s.UpdateRuntimeUp(context.Background()); err != nil {
				t.Fatal(err)
			}
			if tc.reportOnly {
				s.AddReportOnlyHealthCheck("EventedPLEG", failing)
			} else {
				s.AddHealthCheck("EventedPLEG", failing)
			}
			if got, want := errString(s.RuntimeErrors()), "EventedPLEG is not healthy: channel full"; got != want {
				t.Errorf("RuntimeErrors() = %q, want %q", got, want)
			}
			if got := errString(s.SyncErrors()); got != tc.wantSync {
				t.Errorf("SyncErrors() = %q, want %q", got, tc.wantSync)
			}
		})
	}
}

// TestFeaturesFromReadyStatus: the features (and handlers) are those of the last Status that reported the
// runtime ready (upstream sets them only past the RuntimeReady check); a failed call or a
// not-ready runtime keeps the previous ones.
func TestFeaturesFromReadyStatus(t *testing.T) {
	withFeatures := func(st *cri.RuntimeStatus, sgp bool) *cri.RuntimeStatus {
		st.Features = &cri.RuntimeFeatures{SupplementalGroupsPolicy: sgp}
		st.Handlers = []cri.RuntimeHandler{{Name: "", UserNamespaces: sgp}}
		return st
	}
	notReady := &cri.RuntimeStatus{Conditions: []cri.RuntimeCondition{{Type: cri.RuntimeReady, Status: false}}}
	steps := []struct {
		name   string
		status *cri.RuntimeStatus
		err    error
		want   *cri.RuntimeFeatures // nil: none known
	}{
		{name: "a runtime without features", status: ready(), want: nil},
		{name: "ready with the policy", status: withFeatures(ready(), true), want: &cri.RuntimeFeatures{SupplementalGroupsPolicy: true}},
		{name: "a failed call keeps them", err: errors.New("rpc error"), want: &cri.RuntimeFeatures{SupplementalGroupsPolicy: true}},
		{name: "not ready keeps them", status: withFeatures(notReady, false), want: &cri.RuntimeFeatures{SupplementalGroupsPolicy: true}},
		{name: "ready without the policy", status: withFeatures(ready(), false), want: &cri.RuntimeFeatures{}},
	}
	rt := &fakeRuntime{}
	s, clk := newState(t, rt)
	if s.Features() != nil {
		t.Fatalf("features %+v before the first check", s.Features())
	}
	for _, step := range steps {
		rt.set(step.status, step.err)
		clk.Step(time.Second)
		_ = s.UpdateRuntimeUp(context.Background())
		got := s.Features()
		if (got == nil) != (step.want == nil) || got != nil && *got != *step.want {
			t.Errorf("%s: Features() = %+v, want %+v", step.name, got, step.want)
		}
		// The handlers come with the features, from the same ready status.
		if hs := s.Handlers(); (len(hs) == 0) != (got == nil) || len(hs) == 1 && hs[0].UserNamespaces != got.SupplementalGroupsPolicy {
			t.Errorf("%s: Handlers() = %+v with features %+v", step.name, hs, got)
		}
	}
}
