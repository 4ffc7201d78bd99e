package pleg

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/types"

	"github.com/minikubelet/minikubelet/pkg/container"
	"github.com/minikubelet/minikubelet/pkg/metrics"
)

func TestTransitionTable(t *testing.T) {
	states := []plegState{stateRunning, stateExited, stateUnknown, stateNonExistent}
	// The kubelet's table: same -> none; -> running Started; -> exited Died; -> unknown
	// Changed; exited -> gone Removed; running/unknown -> gone Died then Removed.
	want := map[[2]plegState][]PodLifecycleEventType{
		{stateRunning, stateExited}:      {ContainerDied},
		{stateRunning, stateUnknown}:     {ContainerChanged},
		{stateRunning, stateNonExistent}: {ContainerDied, ContainerRemoved},
		{stateExited, stateRunning}:      {ContainerStarted},
		{stateExited, stateUnknown}:      {ContainerChanged},
		{stateExited, stateNonExistent}:  {ContainerRemoved},
		{stateUnknown, stateRunning}:     {ContainerStarted},
		{stateUnknown, stateExited}:      {ContainerDied},
		{stateUnknown, stateNonExistent}: {ContainerDied, ContainerRemoved},
		{stateNonExistent, stateRunning}: {ContainerStarted},
		{stateNonExistent, stateExited}:  {ContainerDied},
		{stateNonExistent, stateUnknown}: {ContainerChanged},
	}
	for _, from := range states {
		for _, to := range states {
			t.Run(from.String()+"->"+to.String(), func(t *testing.T) {
				evs := appendEvents(nil, "pod", "cid", from, to)
				var got []PodLifecycleEventType
				for _, e := range evs {
					if e.ID != "pod" || e.Data != "cid" {
						t.Fatalf("event %+v lost its pod or container", e)
					}
					got = append(got, e.Type)
				}
				if diff := cmp.Diff(want[[2]plegState{from, to}], got); diff != "" {
					t.Fatalf("events (-want +got):\n%s", diff)
				}
			})
		}
	}
}

func TestConvertState(t *testing.T) {
	for in, want := range map[container.State]plegState{running: stateRunning, exited: stateExited, created: stateUnknown, unknown: stateUnknown, "bogus": stateUnknown} {
		if got := convertState(in); got != want {
			t.Errorf("convertState(%q) = %v, want %v", in, got, want)
		}
	}
}

type relistStep struct {
	pods []*container.Pod
	want map[types.UID][]string
}

func TestRelistHistories(t *testing.T) {
	sb := func(id string, s container.State) *container.Container { return ctr(id, s) }
	tests := []struct {
		name  string
		steps []relistStep
	}{
		{
			name: "pod starts: every container and the sandbox",
			steps: []relistStep{{
				pods: []*container.Pod{pod("a", []*container.Container{ctr("c1", running), ctr("c2", running)}, sb("s1", running))},
				want: map[types.UID][]string{"a": {"ContainerStarted c1", "ContainerStarted c2", "ContainerStarted s1"}},
			}},
		},
		{
			name: "container dies, is restarted, old one removed",
			steps: []relistStep{
				{pods: []*container.Pod{pod("a", []*container.Container{ctr("c1", running)}, sb("s1", running))},
					want: map[types.UID][]string{"a": {"ContainerStarted c1", "ContainerStarted s1"}}},
				{pods: []*container.Pod{pod("a", []*container.Container{ctr("c1", exited)}, sb("s1", running))},
					want: map[types.UID][]string{"a": {"ContainerDied c1"}}},
				{pods: []*container.Pod{pod("a", []*container.Container{ctr("c2", running), ctr("c1", exited)}, sb("s1", running))},
					want: map[types.UID][]string{"a": {"ContainerStarted c2"}}},
				{pods: []*container.Pod{pod("a", []*container.Container{ctr("c2", running)}, sb("s1", running))},
					want: map[types.UID][]string{"a": {"ContainerRemoved c1"}}},
			},
		},
		{
			name: "running container vanishes: Died then Removed",
			steps: []relistStep{
				{pods: []*container.Pod{pod("a", []*container.Container{ctr("c1", running), ctr("c2", running)})},
					want: map[types.UID][]string{"a": {"ContainerStarted c1", "ContainerStarted c2"}}},
				{pods: []*container.Pod{pod("a", []*container.Container{ctr("c2", running)})},
					want: map[types.UID][]string{"a": {"ContainerDied c1", "ContainerRemoved c1"}}},
			},
		},
		{
			name: "whole pod vanishes while running",
			steps: []relistStep{
				{pods: []*container.Pod{pod("a", []*container.Container{ctr("c1", running)}, sb("s1", running)), pod("b", []*container.Container{ctr("c9", running)})},
					want: map[types.UID][]string{"a": {"ContainerStarted c1", "ContainerStarted s1"}, "b": {"ContainerStarted c9"}}},
				{pods: []*container.Pod{pod("b", []*container.Container{ctr("c9", running)})},
					want: map[types.UID][]string{"a": {"ContainerDied c1", "ContainerRemoved c1", "ContainerDied s1", "ContainerRemoved s1"}}},
				{pods: []*container.Pod{pod("b", []*container.Container{ctr("c9", running)})}, want: map[types.UID][]string{}},
			},
		},
		{
			name: "created and unknown states send nothing",
			steps: []relistStep{
				{pods: []*container.Pod{pod("a", []*container.Container{ctr("c1", created)})}, want: map[types.UID][]string{}},
				{pods: []*container.Pod{pod("a", []*container.Container{ctr("c1", running)})},
					want: map[types.UID][]string{"a": {"ContainerStarted c1"}}},
				{pods: []*container.Pod{pod("a", []*container.Container{ctr("c1", unknown)})}, want: map[types.UID][]string{}},
				{pods: []*container.Pod{pod("a", nil)}, want: map[types.UID][]string{"a": {"ContainerDied c1", "ContainerRemoved c1"}}},
			},
		},
		{
			name: "same containers listed in another order: no events",
			steps: []relistStep{
				{pods: []*container.Pod{pod("a", []*container.Container{ctr("c1", running), ctr("c2", exited)})},
					want: map[types.UID][]string{"a": {"ContainerStarted c1", "ContainerDied c2"}}},
				{pods: []*container.Pod{pod("a", []*container.Container{ctr("c2", exited), ctr("c1", running)})}, want: map[types.UID][]string{}},
				{pods: []*container.Pod{pod("a", []*container.Container{ctr("c2", exited), ctr("c1", exited)})},
					want: map[types.UID][]string{"a": {"ContainerDied c1"}}},
			},
		},
		{
			name: "pods reorder and one is added in the middle",
			steps: []relistStep{
				{pods: []*container.Pod{pod("a", []*container.Container{ctr("a1", running)}), pod("b", []*container.Container{ctr("b1", running)})},
					want: map[types.UID][]string{"a": {"ContainerStarted a1"}, "b": {"ContainerStarted b1"}}},
				{pods: []*container.Pod{pod("b", []*container.Container{ctr("b1", running)}), pod("n", []*container.Container{ctr("n1", exited)}), pod("a", []*container.Container{ctr("a1", exited)})},
					want: map[types.UID][]string{"n": {"ContainerDied n1"}, "a": {"ContainerDied a1"}}},
			},
		},
		{
			name: "a duplicate container id counts once",
			steps: []relistStep{
				{pods: []*container.Pod{pod("a", []*container.Container{ctr("c1", running), ctr("c1", running)})},
					want: map[types.UID][]string{"a": {"ContainerStarted c1"}}},
				{pods: []*container.Pod{pod("a", []*container.Container{ctr("c1", running)})}, want: map[types.UID][]string{}},
			},
		},
	}
	for _, tt := range tests {
		for _, share := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/shared=%v", tt.name, share), func(t *testing.T) {
				f := newFixture(t, nil)
				f.rt.share = share
				for i, s := range tt.steps {
					f.rt.set(s.pods...)
					f.clk.Step(time.Second)
					f.g.Relist(context.Background())
					got := byPod(drain(f.g.Watch()))
					if diff := cmp.Diff(s.want, got); diff != "" {
						t.Fatalf("relist %d events (-want +got):\n%s", i, diff)
					}
				}
			})
		}
	}
}

func TestRelistReadsStatusOnlyForPodsWithEvents(t *testing.T) {
	f := newFixture(t, nil)
	f.rt.set(pod("a", []*container.Container{ctr("a1", running)}), pod("b", []*container.Container{ctr("b1", running)}))
	f.g.Relist(context.Background())
	f.rt.set(pod("a", []*container.Container{ctr("a1", exited)}), pod("b", []*container.Container{ctr("b1", running)}))
	f.g.Relist(context.Background())
	f.g.Relist(context.Background())
	if a, b := f.rt.calls("a"), f.rt.calls("b"); a != 2 || b != 1 {
		t.Fatalf("status reads a=%d b=%d, want a=2 (start, death) and b=1 (start)", a, b)
	}
	st, err := f.cache.Get("a")
	if err != nil || len(st.ContainerStatuses) != 1 || st.ContainerStatuses[0].State != exited {
		t.Fatalf("cache for a = %+v, %v; want the exited container", st, err)
	}
}

func TestRelistUpdatesCache(t *testing.T) {
	f := newFixture(t, nil)
	f.rt.set(pod("a", []*container.Container{ctr("a1", running)}))
	f.rt.ips["a"] = []string{"10.0.0.1"}
	f.clk.Step(time.Second)
	relistAt := f.clk.Now()
	f.g.Relist(context.Background())

	// The global time is the relist's start: waiters for older data wake, even for unknown pods.
	if _, ok, _ := f.cache.GetIfNewerThan("unknown-pod", relistAt.Add(-time.Nanosecond)); !ok {
		t.Fatal("cache global time not bumped to the relist time")
	}
	if _, ok, _ := f.cache.GetIfNewerThan("unknown-pod", relistAt); ok {
		t.Fatal("cache global time is after the relist time")
	}
	// The IP survives a status without IPs once the sandbox is not ready.
	f.rt.ips["a"] = nil
	f.rt.set(pod("a", []*container.Container{ctr("a1", exited)}))
	f.g.Relist(context.Background())
	if st, _ := f.cache.Get("a"); len(st.IPs) != 1 || st.IPs[0] != "10.0.0.1" {
		t.Fatalf("IPs after teardown = %v, want the old IP kept", st.IPs)
	}
	// A vanished pod is deleted from the cache.
	f.rt.set()
	f.g.Relist(context.Background())
	if st, _ := f.cache.Get("a"); st.Name != "" || len(st.ContainerStatuses) != 0 {
		t.Fatalf("cache for vanished pod = %+v, want empty", st)
	}
	if n := len(f.g.records); n != 0 {
		t.Fatalf("%d pod records left after every pod vanished", n)
	}
}

func TestRelistReinspection(t *testing.T) {
	for _, share := range []bool{false, true} {
		t.Run(fmt.Sprintf("shared=%v", share), func(t *testing.T) { testRelistReinspection(t, share) })
	}
}

func testRelistReinspection(t *testing.T, share bool) {
	f := newFixture(t, nil)
	f.rt.share = share
	readErr := errors.New("runtime busy")
	f.rt.set(pod("a", []*container.Container{ctr("a1", running)}), pod("b", []*container.Container{ctr("b1", running)}))
	f.rt.statusErr["a"] = readErr

	f.g.Relist(context.Background())
	if got := byPod(drain(f.g.Watch())); len(got["a"]) != 0 || len(got["b"]) != 1 {
		t.Fatalf("events = %v; want a held back and b delivered", got)
	}
	if _, err := f.cache.Get("a"); !errors.Is(err, readErr) {
		t.Fatalf("cached error for a = %v, want the read error (pod workers see it)", err)
	}

	// Still failing, and the pod changed meanwhile: still nothing, but it was re-read.
	f.rt.set(pod("a", []*container.Container{ctr("a1", exited)}), pod("b", []*container.Container{ctr("b1", running)}))
	f.g.Relist(context.Background())
	if got := drain(f.g.Watch()); len(got) != 0 {
		t.Fatalf("events while the read fails = %v", got)
	}
	if n := f.rt.calls("a"); n != 2 {
		t.Fatalf("status reads of a = %d, want 2", n)
	}

	// The read succeeds: the change since the last delivered state arrives in one go.
	delete(f.rt.statusErr, "a")
	f.g.Relist(context.Background())
	if diff := cmp.Diff(map[types.UID][]string{"a": {"ContainerDied a1"}}, byPod(drain(f.g.Watch()))); diff != "" {
		t.Fatalf("events after recovery (-want +got):\n%s", diff)
	}
	if _, err := f.cache.Get("a"); err != nil {
		t.Fatalf("cached error after recovery = %v", err)
	}

	// Nothing left to reinspect: the next relist reads no status.
	f.g.Relist(context.Background())
	if n := f.rt.calls("a"); n != 3 {
		t.Fatalf("status reads of a = %d, want 3 (no reinspection after success)", n)
	}
}

func TestRelistReinspectsWithoutChanges(t *testing.T) {
	f := newFixture(t, nil)
	f.rt.set(pod("a", []*container.Container{ctr("a1", running)}))
	f.rt.statusErr["a"] = errors.New("boom")
	f.g.Relist(context.Background())
	delete(f.rt.statusErr, "a")
	// No change in the listing, but the failed read is retried and the held events sent.
	f.g.Relist(context.Background())
	if diff := cmp.Diff(map[types.UID][]string{"a": {"ContainerStarted a1"}}, byPod(drain(f.g.Watch()))); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}
}

func TestRelistChannelFull(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.ChannelCapacity = 2 })
	f.rt.set(pod("a", []*container.Container{ctr("a1", running), ctr("a2", running), ctr("a3", running), ctr("a4", running)}))
	var logs logRecorder
	f.g.Relist(logs.ctx())
	got := drain(f.g.Watch())
	if diff := cmp.Diff([]string{"ContainerStarted a1", "ContainerStarted a2"}, byPod(got)["a"]); diff != "" {
		t.Fatalf("delivered events (-want +got): the first ones up to the capacity\n%s", diff)
	}
	if n := testutil.ToFloat64(f.g.metrics.discardEvents); n != 2 {
		t.Fatalf("pleg_discard_events = %v, want 2", n)
	}
	// Upstream's exact message, once per discarded event, at the default verbosity.
	if n := logs.count(`"Event channel is full, discard this relist() cycle event"`); n != 2 {
		t.Fatalf("discard log lines = %d, want 2: %q", n, logs.lines)
	}
	// The record advanced: discarded events are lost, as upstream, not regenerated.
	f.g.Relist(context.Background())
	if got := drain(f.g.Watch()); len(got) != 0 {
		t.Fatalf("events after a discarding relist = %v, want none", got)
	}
}

func TestRelistListingErrorAndHealth(t *testing.T) {
	f := newFixture(t, nil)
	if ok, err := f.g.Healthy(); ok || err == nil || err.Error() != "pleg has yet to be successful" {
		t.Fatalf("Healthy before any relist = %v, %v", ok, err)
	}
	f.rt.listErr = errors.New("runtime down")
	var logs logRecorder
	f.g.Relist(logs.ctx())
	if ok, err := f.g.Healthy(); ok || err.Error() != "pleg has yet to be successful" {
		t.Fatalf("Healthy after a failed first relist = %v, %v", ok, err)
	}
	if n := logs.count(`"GenericPLEG: Unable to retrieve pods"`, `"runtime down"`); n != 1 {
		t.Fatalf("listing error log lines = %d: %q", n, logs.lines)
	}
	if _, ok, _ := f.cache.GetIfNewerThan("any", time.Time{}); ok {
		t.Fatal("a failed listing bumped the cache's global time")
	}

	f.rt.listErr = nil
	f.g.Relist(context.Background())
	last := f.clk.Now()
	if ok, err := f.g.Healthy(); !ok || err != nil {
		t.Fatalf("Healthy after a relist = %v, %v", ok, err)
	}
	if got := testutil.ToFloat64(f.g.metrics.lastSeen); got != float64(last.Unix()) {
		t.Fatalf("pleg_last_seen_seconds = %v, want %v", got, last.Unix())
	}

	f.rt.listErr = errors.New("runtime down")
	tests := []struct {
		after   time.Duration
		wantErr string
	}{
		{time.Minute, ""},
		{3 * time.Minute, ""}, // at the threshold exactly: still healthy
		{3*time.Minute + time.Second, "pleg was last seen active 3m1s ago; threshold is 3m0s"},
	}
	for _, tt := range tests {
		t.Run(tt.after.String(), func(t *testing.T) {
			f.clk.SetTime(last.Add(tt.after))
			f.g.Relist(context.Background()) // fails: the relist time must not move
			if got, _ := f.g.LastRelistTime(); !got.Equal(last) {
				t.Fatalf("relist time moved to %v on a failed listing", got)
			}
			ok, err := f.g.Healthy()
			if tt.wantErr == "" {
				if !ok || err != nil {
					t.Fatalf("Healthy = %v, %v; want healthy", ok, err)
				}
				return
			}
			if ok || err == nil || err.Error() != tt.wantErr {
				t.Fatalf("Healthy = %v, %v; want %q", ok, err, tt.wantErr)
			}
			if got := testutil.ToFloat64(f.g.metrics.lastSeen); got != float64(last.Unix()) {
				t.Fatalf("pleg_last_seen_seconds = %v, want the last success %v", got, last.Unix())
			}
		})
	}
	// Recovery.
	f.rt.listErr = nil
	f.g.Relist(context.Background())
	if ok, err := f.g.Healthy(); !ok {
		t.Fatalf("Healthy after recovery = %v", err)
	}
}

func TestRelistMetrics(t *testing.T) {
	f := newFixture(t, nil)
	f.g.Relist(context.Background())
	f.clk.Step(2 * time.Second)
	f.g.Relist(context.Background())
	if n := testutil.CollectAndCount(f.g.metrics.relistDuration); n != 1 {
		t.Fatalf("duration histogram series = %d", n)
	}
	want := `
# HELP pleg_relist_interval_seconds [ALPHA] Interval in seconds between relisting in PLEG.
# TYPE pleg_relist_interval_seconds histogram
pleg_relist_interval_seconds_bucket{le="0.005"} 0
pleg_relist_interval_seconds_bucket{le="0.01"} 0
pleg_relist_interval_seconds_bucket{le="0.025"} 0
pleg_relist_interval_seconds_bucket{le="0.05"} 0
pleg_relist_interval_seconds_bucket{le="0.1"} 0
pleg_relist_interval_seconds_bucket{le="0.25"} 0
pleg_relist_interval_seconds_bucket{le="0.5"} 0
pleg_relist_interval_seconds_bucket{le="1"} 0
pleg_relist_interval_seconds_bucket{le="2.5"} 1
pleg_relist_interval_seconds_bucket{le="5"} 1
pleg_relist_interval_seconds_bucket{le="10"} 1
pleg_relist_interval_seconds_bucket{le="+Inf"} 1
pleg_relist_interval_seconds_sum 2
pleg_relist_interval_seconds_count 1
# HELP pleg_relist_duration_seconds [ALPHA] Duration in seconds for relisting pods in PLEG.
# TYPE pleg_relist_duration_seconds histogram
pleg_relist_duration_seconds_bucket{le="0.005"} 2
pleg_relist_duration_seconds_bucket{le="0.01"} 2
pleg_relist_duration_seconds_bucket{le="0.025"} 2
pleg_relist_duration_seconds_bucket{le="0.05"} 2
pleg_relist_duration_seconds_bucket{le="0.1"} 2
pleg_relist_duration_seconds_bucket{le="0.25"} 2
pleg_relist_duration_seconds_bucket{le="0.5"} 2
pleg_relist_duration_seconds_bucket{le="1"} 2
pleg_relist_duration_seconds_bucket{le="2.5"} 2
pleg_relist_duration_seconds_bucket{le="5"} 2
pleg_relist_duration_seconds_bucket{le="10"} 2
pleg_relist_duration_seconds_bucket{le="+Inf"} 2
pleg_relist_duration_seconds_sum 0
pleg_relist_duration_seconds_count 2
`
	if err := testutil.GatherAndCompare(f.reg, strings.NewReader(want), "pleg_relist_interval_seconds", "pleg_relist_duration_seconds"); err != nil {
		t.Fatal(err)
	}
}

// With the kubelet_ prefix the names are the real kubelet's, so its dashboards and alerts
// (which join on kubelet_node_name) work unchanged.
func TestMetricNamesWithKubeletPrefix(t *testing.T) {
	reg := metrics.NewRegistry("kubelet_")
	reg.RegisterNodeName("node-1")
	g, err := NewGenericPLEG(Config{Runtime: newScripted(), Cache: nopCache{}, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewEventedPLEG(EventedConfig{Generic: g, Runtime: &scriptedStream{}}); err != nil {
		t.Fatal(err)
	}
	g.Relist(context.Background())
	g.Relist(context.Background())
	g.Healthy()
	g.metrics.connLatency.Observe(0.1)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, mf := range mfs {
		got = append(got, mf.GetName())
	}
	want := []string{ // the upstream kubelet's names, sorted
		"kubelet_evented_pleg_connection_error_count",
		"kubelet_evented_pleg_connection_latency_seconds",
		"kubelet_evented_pleg_connection_success_count",
		"kubelet_node_name",
		"kubelet_pleg_active", // simulator only
		"kubelet_pleg_discard_events",
		"kubelet_pleg_last_seen_seconds",
		"kubelet_pleg_relist_duration_seconds",
		"kubelet_pleg_relist_interval_seconds",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("metric names (-want +got):\n%s", diff)
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP kubelet_node_name The node's name. The count is always 1.
# TYPE kubelet_node_name gauge
kubelet_node_name{node="node-1"} 1
`), "kubelet_node_name"); err != nil {
		t.Fatal(err)
	}
}

func TestNewGenericPLEGValidates(t *testing.T) {
	rt := newScripted()
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"no runtime", Config{Cache: nopCache{}}, "runtime is required"},
		{"no cache", Config{Runtime: rt}, "cache is required"},
		{"negative period", Config{Runtime: rt, Cache: nopCache{}, RelistPeriod: -time.Second}, "relistPeriod must be positive, got -1s"},
		{"negative threshold", Config{Runtime: rt, Cache: nopCache{}, RelistThreshold: -time.Minute}, "relistThreshold must be positive, got -1m0s"},
		{"negative capacity", Config{Runtime: rt, Cache: nopCache{}, ChannelCapacity: -1}, "channelCapacity must not be negative, got -1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewGenericPLEG(tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
	g, err := NewGenericPLEG(Config{Runtime: rt, Cache: nopCache{}})
	if err != nil {
		t.Fatal(err)
	}
	if got := g.RelistDuration(); got != (RelistDuration{time.Second, 3 * time.Minute}) || cap(g.Watch()) != 1000 {
		t.Fatalf("defaults = %+v, capacity %d", got, cap(g.Watch()))
	}
	if g.Name() != "PLEG" {
		t.Fatalf("Name = %q", g.Name())
	}
}

// waitFor polls cond briefly: goroutines under test need a moment to park or finish.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func (f *scriptedRuntime) lists() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.listCalls
}

func TestStartStopRunsOnClock(t *testing.T) {
	base := runtime.NumGoroutine()
	f := newFixture(t, nil)
	ctx := context.Background()
	f.g.Start(ctx)
	f.g.Start(ctx) // no second loop
	waitFor(t, "first relist", func() bool { return f.rt.lists() == 1 && f.clk.HasWaiters() })
	f.clk.Step(time.Second)
	waitFor(t, "second relist", func() bool { return f.rt.lists() == 2 && f.clk.HasWaiters() })

	// A new period applies after the current wait.
	f.g.Update(RelistDuration{RelistPeriod: 10 * time.Second, RelistThreshold: time.Minute})
	f.clk.Step(time.Second)
	waitFor(t, "third relist", func() bool { return f.rt.lists() == 3 && f.clk.HasWaiters() })
	f.clk.Step(9 * time.Second)
	if n := f.rt.lists(); n != 3 {
		t.Fatalf("relisted %d times before the new 10s period passed", n)
	}
	f.clk.Step(time.Second)
	waitFor(t, "relist after 10s", func() bool { return f.rt.lists() == 4 })

	f.g.Stop()
	f.g.Stop()
	waitFor(t, "goroutines to end", func() bool { return runtime.NumGoroutine() <= base })
}

// nopCache is a cache that stores nothing, for tests that do not look at it.
type nopCache struct{}

func (nopCache) Get(uid types.UID) (*container.PodStatus, error) {
	return &container.PodStatus{ID: uid}, nil
}
func (nopCache) Set(types.UID, *container.PodStatus, error, time.Time) bool { return true }
func (nopCache) GetNewerThan(context.Context, types.UID, time.Time) (*container.PodStatus, error) {
	return nil, nil
}
func (nopCache) Delete(types.UID)     {}
func (nopCache) UpdateTime(time.Time) {}

func ptr(t time.Time) *time.Time { return &t }

// A relist forced from elsewhere (the evented PLEG on a stream error) that hangs in the
// runtime must not keep Stop from stopping the loop: the loop's relist, queued behind it,
// gives up when the loop's context ends.
func TestStopWhileAnotherRelistHangs(t *testing.T) {
	base := runtime.NumGoroutine()
	f := newFixture(t, nil)
	f.rt.listing = make(chan struct{}, 10)
	f.g.Start(context.Background())
	<-f.rt.listing
	waitFor(t, "loop parked", f.clk.HasWaiters)

	f.rt.mu.Lock()
	f.rt.hang = true
	f.rt.mu.Unlock()
	forcedCtx, cancelForced := context.WithCancel(context.Background())
	forced := make(chan struct{})
	go func() { defer close(forced); f.g.Relist(forcedCtx) }()
	<-f.rt.listing // the forced relist hangs in GetPods
	f.clk.Step(time.Second)
	time.Sleep(20 * time.Millisecond) // let the loop's relist queue up behind the hung one

	stopped := make(chan struct{})
	go func() { defer close(stopped); f.g.Stop() }()
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("Stop blocked behind a relist it does not own")
	}
	select {
	case <-f.rt.listing:
		t.Fatal("the loop relisted after Stop")
	default:
	}
	cancelForced()
	<-forced
	waitFor(t, "goroutines to end", func() bool { return runtime.NumGoroutine() <= base })
}
