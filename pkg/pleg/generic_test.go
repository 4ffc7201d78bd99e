package pleg

import (
	"context"
	"errors"
	"fmt"
	testingclock "k8s.io/utils/clock/testing"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/types"

	"github.com/minikubelet/minikubelet/pkg/container"
	"github.com/minikubelet/minikubelet/pkg/metrics"
	"github.com/minikubelet/minikubelet/pkg/task"
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
	if err := testutil.GatherAndCompare(f.reg, strings.NewReader(`
# HELP pleg_discard_events [ALPHA] The number of discard events in PLEG.
# TYPE pleg_discard_events counter
pleg_discard_events 2
`), "pleg_discard_events"); err != nil {
		t.Fatal(err)
	}
	if n := f.g.DiscardedEvents(); n != 2 {
		t.Fatalf("DiscardedEvents = %d, want 2 (pleg_discard_events without a scrape)", n)
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
// (which join on kubelet_node_name) work unchanged; the per-pod relist's histogram is
// there from v1.36 on (PodRelistMetric).
func TestMetricNamesWithKubeletPrefix(t *testing.T) {
	for _, podRelist := range []bool{true, false} {
		reg := metrics.NewRegistry("kubelet_")
		reg.RegisterNodeName("node-1")
		g, err := NewGenericPLEG(Config{Clock: testingclock.NewFakeClock(time.Unix(0, 0)), Runtime: newScripted(), Cache: nopCache{},
			Registry: reg, PodRelistMetric: podRelist})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := NewLegacyEventedPLEG(LegacyEventedConfig{Generic: g, Runtime: &scriptedStream{}}); err != nil {
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
			"kubelet_pleg_pod_relist_duration_seconds", // v1.36's per-pod relist
			"kubelet_pleg_relist_duration_seconds",
			"kubelet_pleg_relist_interval_seconds",
		}
		if !podRelist {
			want = append(want[:7], want[8:]...)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("PodRelistMetric %t: metric names (-want +got):\n%s", podRelist, diff)
		}
		if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP kubelet_node_name The node's name. The count is always 1.
# TYPE kubelet_node_name gauge
kubelet_node_name{node="node-1"} 1
`), "kubelet_node_name"); err != nil {
			t.Fatal(err)
		}
	}
}

func TestNewGenericPLEGValidates(t *testing.T) {
	rt := newScripted()
	clk := testingclock.NewFakeClock(time.Unix(0, 0))
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"no runtime", Config{Cache: nopCache{}}, "runtime is required"},
		{"no cache", Config{Clock: clk, Runtime: rt}, "cache is required"},
		{"negative period", Config{Clock: clk, Runtime: rt, Cache: nopCache{}, RelistPeriod: -time.Second}, "relistPeriod must be positive, got -1s"},
		{"negative threshold", Config{Clock: clk, Runtime: rt, Cache: nopCache{}, RelistThreshold: -time.Minute}, "relistThreshold must be positive, got -1m0s"},
		{"negative capacity", Config{Clock: clk, Runtime: rt, Cache: nopCache{}, ChannelCapacity: -1}, "channelCapacity must not be negative, got -1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewGenericPLEG(tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
	g, err := NewGenericPLEG(Config{Clock: clk, Runtime: rt, Cache: nopCache{}})
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

// The relist loop relists at once, then relistPeriod after the END of each relist
// (upstream's wait.Until), and Due says when: the loop table sleeps until then.
func TestGenericLoopSchedule(t *testing.T) {
	f := newFixture(t, nil)
	loop := genericLoop(f.g)
	steps := []struct {
		name      string
		act       func()
		run       time.Duration
		wantLists int
		wantDue   time.Duration // after start
	}{
		{"first relist is due at once", func() {}, 0, 1, time.Second},
		{"nothing before the period passed", func() {}, 999 * time.Millisecond, 1, time.Second},
		{"the period passed", func() {}, time.Millisecond, 2, 2 * time.Second},
		// The relist already scheduled keeps its time; the new period counts from its end.
		{"Update keeps the scheduled relist", func() { f.g.Update(RelistDuration{10 * time.Second, time.Minute}) }, time.Second, 3, 12 * time.Second},
		{"then relists at the new period", func() {}, 10 * time.Second, 4, 22 * time.Second},
		// Restart is upstream's Stop + Start: a relist at once, so a new period applies now.
		{"Restart relists at once", func() {
			f.g.Update(RelistDuration{time.Second, time.Minute})
			f.g.Restart()
			if due := f.g.Due(f.clk.Now()); !due.Equal(f.clk.Now()) {
				t.Fatalf("Due after Restart = %v, want now (%v)", due, f.clk.Now())
			}
		}, 0, 5, 13 * time.Second},
	}
	for _, s := range steps {
		s.act()
		runFor(t, f.clk, s.run, loop)
		if got := f.rt.lists(); got != s.wantLists {
			t.Fatalf("%s: %d relists, want %d", s.name, got, s.wantLists)
		}
		if due := f.g.Due(f.clk.Now()); !due.Equal(start.Add(s.wantDue)) {
			t.Fatalf("%s: Due = start+%v, want start+%v", s.name, due.Sub(start), s.wantDue)
		}
	}
}

// A relist that waits for a slow runtime is a pending task: Step returns at once, the loop
// is not due (nothing to do until the runtime answers), and the runtime's answer wakes it.
// The relist is timed from its start, and its timestamp is its start too.
func TestRelistWaitingOnTheRuntimeIsAPendingTask(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	f.rt.set(pod("a", []*container.Container{ctr("a1", running)}))
	hold := task.NewOp()
	f.rt.setHold(hold)

	f.g.Step(ctx)
	if n := f.rt.lists(); n != 1 {
		t.Fatalf("listings = %d, want the relist to have asked the runtime", n)
	}
	if due := f.g.Due(f.clk.Now()); !due.IsZero() {
		t.Fatalf("Due while waiting for the runtime = %v, want zero (idle until woken)", due)
	}
	if _, ok := f.g.LastRelistTime(); ok {
		t.Fatal("a relist still waiting for its listing counted as done")
	}
	drainSignal(f.g.Wake())

	f.clk.Step(2500 * time.Millisecond)
	hold.Complete(nil)
	if !signalled(f.g.Wake()) {
		t.Fatal("the runtime's answer did not wake the PLEG loop")
	}
	if due := f.g.Due(f.clk.Now()); !due.Equal(f.clk.Now()) {
		t.Fatalf("Due once the runtime answered = %v, want now", due)
	}
	f.g.Step(ctx)
	if diff := cmp.Diff(map[types.UID][]string{"a": {"ContainerStarted a1"}}, byPod(drain(f.g.Watch()))); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}
	if last, ok := f.g.LastRelistTime(); !ok || !last.Equal(start) {
		t.Fatalf("LastRelistTime = %v, %v; want the relist's start %v", last, ok, start)
	}
	if due := f.g.Due(f.clk.Now()); !due.Equal(start.Add(3500 * time.Millisecond)) {
		t.Fatalf("next relist due at start+%v, want a period after the end (start+3.5s)", due.Sub(start))
	}
	if err := testutil.GatherAndCompare(f.reg, strings.NewReader(`
# HELP pleg_relist_duration_seconds [ALPHA] Duration in seconds for relisting pods in PLEG.
# TYPE pleg_relist_duration_seconds histogram
pleg_relist_duration_seconds_bucket{le="0.005"} 0
pleg_relist_duration_seconds_bucket{le="0.01"} 0
pleg_relist_duration_seconds_bucket{le="0.025"} 0
pleg_relist_duration_seconds_bucket{le="0.05"} 0
pleg_relist_duration_seconds_bucket{le="0.1"} 0
pleg_relist_duration_seconds_bucket{le="0.25"} 0
pleg_relist_duration_seconds_bucket{le="0.5"} 0
pleg_relist_duration_seconds_bucket{le="1"} 0
pleg_relist_duration_seconds_bucket{le="2.5"} 1
pleg_relist_duration_seconds_bucket{le="5"} 1
pleg_relist_duration_seconds_bucket{le="10"} 1
pleg_relist_duration_seconds_bucket{le="+Inf"} 1
pleg_relist_duration_seconds_sum 2.5
pleg_relist_duration_seconds_count 1
`), "pleg_relist_duration_seconds"); err != nil {
		t.Fatal(err)
	}
}

// While a relist hangs in the runtime the PLEG goes unhealthy once the last successful relist
// is older than the threshold, with upstream's message; the hung relist does not block the
// caller, and Healthy answers meanwhile.
func TestHealthWhileARelistHangs(t *testing.T) {
	f := newFixture(t, nil)
	loop := genericLoop(f.g)
	runFor(t, f.clk, 0, loop) // the first relist, at start
	hold := task.NewOp()
	f.rt.setHold(hold)
	runFor(t, f.clk, time.Second, loop) // the second one starts and waits
	if n := f.rt.lists(); n != 2 || !f.g.Due(f.clk.Now()).IsZero() {
		t.Fatalf("listings = %d, due %v: want the second relist waiting", n, f.g.Due(f.clk.Now()))
	}
	tests := []struct {
		at      time.Duration // after start
		wantErr string
	}{
		{time.Minute, ""},
		{3 * time.Minute, ""}, // at the threshold exactly: still healthy
		{3*time.Minute + time.Second, "pleg was last seen active 3m1s ago; threshold is 3m0s"},
		{10 * time.Minute, "pleg was last seen active 10m0s ago; threshold is 3m0s"},
	}
	for _, tt := range tests {
		runFor(t, f.clk, start.Add(tt.at).Sub(f.clk.Now()), loop)
		ok, err := f.g.Healthy()
		if got := fmt.Sprint(err); ok != (tt.wantErr == "") || (tt.wantErr != "" && got != tt.wantErr) {
			t.Fatalf("at start+%v: Healthy = %v, %v; want error %q", tt.at, ok, err, tt.wantErr)
		}
	}
	if got := testutil.ToFloat64(f.g.metrics.lastSeen); got != float64(start.Unix()) {
		t.Fatalf("pleg_last_seen_seconds = %v, want the last success %v", got, start.Unix())
	}
	// The runtime answers: the relist finishes with its start as its timestamp, which is
	// still too old (as upstream, health returns with the next relist a period later).
	hold.Complete(nil)
	runFor(t, f.clk, 0, loop)
	if last, _ := f.g.LastRelistTime(); !last.Equal(start.Add(time.Second)) {
		t.Fatalf("LastRelistTime = start+%v, want the hung relist's start", last.Sub(start))
	}
	runFor(t, f.clk, time.Second, loop)
	if ok, err := f.g.Healthy(); !ok {
		t.Fatalf("Healthy after the next relist = %v", err)
	}
}

// Stop (daemon shutdown) abandons the relist in flight: it neither counts as a relist nor
// sends events, and nothing is left waiting for the runtime.
func TestStopAbandonsTheRelistInFlight(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	f.rt.set(pod("a", []*container.Container{ctr("a1", running)}))
	hold := task.NewOp()
	f.rt.setHold(hold)
	f.g.Step(ctx)
	f.g.Stop()
	f.g.Stop() // idempotent
	hold.Complete(nil)
	if got := drain(f.g.Watch()); len(got) != 0 {
		t.Fatalf("events from an abandoned relist: %v", got)
	}
	if _, ok := f.g.LastRelistTime(); ok {
		t.Fatal("an abandoned relist counted as successful")
	}
	if len(f.g.records) != 0 {
		t.Fatalf("an abandoned relist recorded %d pods", len(f.g.records))
	}
}

// Config.Notify is called once per event put on the channel (the sync loop's wake-up), and
// not for a discarded event.
func TestNotifyHook(t *testing.T) {
	notified := 0
	f := newFixture(t, func(c *Config) {
		c.ChannelCapacity = 2
		c.Notify = func() { notified++ }
	})
	f.rt.set(pod("a", []*container.Container{ctr("a1", running)}, ctr("s1", running)))
	f.g.Relist(context.Background())
	if notified != 2 {
		t.Fatalf("Notify called %d times, want 2 (one per event)", notified)
	}
	f.rt.set(pod("a", []*container.Container{ctr("a1", exited)}, ctr("s1", running)))
	f.g.Relist(context.Background()) // the channel is full: the event is discarded
	if notified != 2 || f.g.DiscardedEvents() != 1 {
		t.Fatalf("Notify called %d times, %d discarded; want 2 and 1", notified, f.g.DiscardedEvents())
	}
}

// drainSignal consumes a pending notification, so the next one can be observed.
func drainSignal(s interface{ C() <-chan struct{} }) {
	select {
	case <-s.C():
	default:
	}
}

// signalled reports (and consumes) a pending notification.
func signalled(s interface{ C() <-chan struct{} }) bool {
	select {
	case <-s.C():
		return true
	default:
		return false
	}
}
