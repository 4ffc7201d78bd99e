package podsource

import (
	"context"
	"strconv"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/pkg/events"
	"github.com/minikubelet/minikubelet/pkg/kubetypes"
)

func itoa(i int) string { return strconv.Itoa(i) }

func setOf(s ...string) sets.Set[string] { return sets.New(s...) }

func newMerger(t testing.TB, clk clock.PassiveClock) *Merger {
	t.Helper()
	m, err := NewMerger(MergerConfig{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// pod builds a minimal pod; mutations change it.
func pod(name string, mutate ...func(*v1.Pod)) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), Labels: map[string]string{"app": name}},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "i:1"}}},
		Status:     v1.PodStatus{Phase: v1.PodPending},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func TestMergerSnapshots(t *testing.T) {
	deletion := metav1.NewTime(t0)
	steps := []struct {
		name string
		pods []*v1.Pod
		want string
	}{
		{"first empty snapshot marks the source seen", nil, "ADD[]"},
		{"new pod", []*v1.Pod{pod("a")}, "ADD[a]"},
		{"unchanged", []*v1.Pod{pod("a")}, ""},
		{"second pod", []*v1.Pod{pod("a"), pod("b")}, "ADD[b]"},
		{"label change and a removal", []*v1.Pod{pod("a", func(p *v1.Pod) { p.Labels["tier"] = "web" })}, "REMOVE[b] UPDATE[a]"},
		{"spec change", []*v1.Pod{pod("a", func(p *v1.Pod) { p.Labels["tier"] = "web"; p.Spec.Containers[0].Image = "i:2" })}, "UPDATE[a]"},
		{"only kubelet annotations differ", []*v1.Pod{pod("a", func(p *v1.Pod) {
			p.Labels["tier"] = "web"
			p.Spec.Containers[0].Image = "i:2"
			p.Annotations = map[string]string{kubetypes.ConfigFirstSeenAnnotationKey: "yesterday", kubetypes.ConfigSourceAnnotationKey: "elsewhere"}
		})}, ""},
		{"user annotation", []*v1.Pod{pod("a", func(p *v1.Pod) {
			p.Labels["tier"] = "web"
			p.Spec.Containers[0].Image = "i:2"
			p.Annotations = map[string]string{"team": "x"}
		})}, "UPDATE[a]"},
		{"status only", []*v1.Pod{pod("a", func(p *v1.Pod) {
			p.Labels["tier"] = "web"
			p.Spec.Containers[0].Image = "i:2"
			p.Annotations = map[string]string{"team": "x"}
			p.Status.Phase = v1.PodRunning
		})}, "RECONCILE[a]"},
		{"deletion timestamp", []*v1.Pod{pod("a", func(p *v1.Pod) {
			p.Labels["tier"] = "web"
			p.Spec.Containers[0].Image = "i:2"
			p.Annotations = map[string]string{"team": "x"}
			p.Status.Phase = v1.PodRunning
			p.DeletionTimestamp = &deletion
		})}, "DELETE[a]"},
		{"everything gone", nil, "REMOVE[a]"},
	}
	clk := testingclock.NewFakeClock(t0)
	m := newMerger(t, clk)
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			if got := describe(m.Merge(kubetypes.FileSource, st.pods)); got != st.want {
				t.Errorf("Merge = %q, want %q", got, st.want)
			}
		})
		clk.Step(time.Second)
	}
}

func TestMergerAnnotatesAndKeepsFirstSeen(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	m := newMerger(t, clk)
	add := m.Merge(kubetypes.FileSource, []*v1.Pod{pod("a")})
	got := add[0].Pods[0]
	if got.Annotations[kubetypes.ConfigSourceAnnotationKey] != "file" {
		t.Errorf("config.source = %q, want file", got.Annotations[kubetypes.ConfigSourceAnnotationKey])
	}
	seen := got.Annotations[kubetypes.ConfigFirstSeenAnnotationKey]
	if seen != t0.Format(time.RFC3339Nano) {
		t.Errorf("config.seen = %q, want the clock's time %q", seen, t0.Format(time.RFC3339Nano))
	}

	clk.Step(time.Hour)
	upd := m.Merge(kubetypes.FileSource, []*v1.Pod{pod("a", func(p *v1.Pod) { p.Spec.Containers[0].Image = "i:2" })})
	if describe(upd) != "UPDATE[a]" {
		t.Fatalf("updates = %s", describe(upd))
	}
	if s := upd[0].Pods[0].Annotations[kubetypes.ConfigFirstSeenAnnotationKey]; s != seen {
		t.Errorf("an update changed config.seen from %q to %q", seen, s)
	}
	// The pods handed out are shared with the receiver: an update or a status change
	// replaces the merger's pod with a changed copy and never touches one handed out.
	if got.Spec.Containers[0].Image != "i:1" || upd[0].Pods[0] == got {
		t.Errorf("the update changed the pod handed out before: image %q", got.Spec.Containers[0].Image)
	}
	updated := upd[0].Pods[0]
	rec := m.Merge(kubetypes.FileSource, []*v1.Pod{pod("a", func(p *v1.Pod) {
		p.Spec.Containers[0].Image = "i:2"
		p.Status.Message = "moved"
	})})
	if describe(rec) != "RECONCILE[a]" || rec[0].Pods[0].Status.Message != "moved" {
		t.Fatalf("status change = %s", describe(rec))
	}
	if updated.Status.Message != "" {
		t.Errorf("a reconcile changed the pod handed out before: status message %q", updated.Status.Message)
	}
}

// A source that annotates its own pods (AnnotateSourcePod, as the API server's does) has
// them kept as they are: at first sight and at each status change, with no copy; its
// first-seen time carries over from the version before.
func TestMergerKeepsSourceAnnotatedPods(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	m := newMerger(t, clk)
	api := func(old *v1.Pod, mutate ...func(*v1.Pod)) *v1.Pod {
		p := pod("a", mutate...)
		AnnotateSourcePod(p, old, kubetypes.ApiserverSource, clk.Now())
		return p
	}
	first := api(nil)
	add := m.Merge(kubetypes.ApiserverSource, []*v1.Pod{first})
	if describe(add) != "ADD[a]" || add[0].Pods[0] != first {
		t.Fatalf("first sight = %s, the source's pod kept: %v", describe(add), add[0].Pods[0] == first)
	}
	if seen := first.Annotations[kubetypes.ConfigFirstSeenAnnotationKey]; seen != t0.Format(time.RFC3339Nano) {
		t.Errorf("config.seen = %q, want %q", seen, t0.Format(time.RFC3339Nano))
	}

	clk.Step(time.Minute)
	running := api(first, func(p *v1.Pod) { p.Status.Phase = v1.PodRunning })
	rec := m.Merge(kubetypes.ApiserverSource, []*v1.Pod{running})
	if describe(rec) != "RECONCILE[a]" || rec[0].Pods[0] != running {
		t.Fatalf("status change = %s, the source's pod kept: %v", describe(rec), rec[0].Pods[0] == running)
	}
	if a, b := running.Annotations[kubetypes.ConfigFirstSeenAnnotationKey], first.Annotations[kubetypes.ConfigFirstSeenAnnotationKey]; a != b {
		t.Errorf("config.seen moved from %q to %q", b, a)
	}
	if first.Status.Phase != v1.PodPending {
		t.Errorf("the pod handed out before changed: phase %s", first.Status.Phase)
	}

	// Another pod of the same name (a new UID) is seen anew.
	clk.Step(time.Minute)
	other := pod("a", func(p *v1.Pod) { p.UID = "uid-a2" })
	AnnotateSourcePod(other, running, kubetypes.ApiserverSource, clk.Now())
	if seen := other.Annotations[kubetypes.ConfigFirstSeenAnnotationKey]; seen != t0.Add(2*time.Minute).Format(time.RFC3339Nano) {
		t.Errorf("a new pod of the same name has config.seen %q, want now", seen)
	}

	// A pod annotated for another source is copied, as any pod the merger annotates.
	fileLike := pod("b")
	AnnotateSourcePod(fileLike, nil, kubetypes.FileSource, clk.Now())
	got := m.Merge(kubetypes.ApiserverSource, []*v1.Pod{running, fileLike})
	if describe(got) != "ADD[b]" || got[0].Pods[0] == fileLike || got[0].Pods[0].Annotations[kubetypes.ConfigSourceAnnotationKey] != kubetypes.ApiserverSource {
		t.Errorf("a pod annotated for another source = %s, kept as it is: %v", describe(got), got[0].Pods[0] == fileLike)
	}
}

func TestMergerApplyOpsAndDuplicates(t *testing.T) {
	store := events.NewStore(testingclock.NewFakeClock(t0), "n", 0)
	m, err := NewMerger(MergerConfig{Clock: testingclock.NewFakeClock(t0), Recorder: store, Sources: []string{"file", "http"}})
	if err != nil {
		t.Fatal(err)
	}
	dupe := pod("a", func(p *v1.Pod) { p.UID = "other-uid" })
	tests := []struct {
		name   string
		change kubetypes.PodUpdate
		want   string
	}{
		{"ADD with a duplicate name drops the second", kubetypes.PodUpdate{Op: kubetypes.ADD, Source: "http", Pods: []*v1.Pod{pod("a"), dupe}}, "ADD[a]"},
		{"UPDATE op", kubetypes.PodUpdate{Op: kubetypes.UPDATE, Source: "http", Pods: []*v1.Pod{pod("a", func(p *v1.Pod) { p.Labels = nil })}}, "UPDATE[a]"},
		{"REMOVE of an unknown pod is a no-op", kubetypes.PodUpdate{Op: kubetypes.REMOVE, Source: "http", Pods: []*v1.Pod{pod("zzz")}}, ""},
		{"REMOVE op", kubetypes.PodUpdate{Op: kubetypes.REMOVE, Source: "http", Pods: []*v1.Pod{pod("a")}}, "REMOVE[a]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := describe(m.Apply(tt.change)); got != tt.want {
				t.Errorf("Apply = %q, want %q", got, tt.want)
			}
		})
	}
	if evs := store.List(); len(evs) != 1 || evs[0].Reason != EventFailedValidation {
		t.Errorf("events = %+v, want one FailedValidation for the duplicate", evs)
	}

	// Sources are seen only after a snapshot from each and an update the loop saw from each.
	if m.SeenAllSources(setOf("file", "http")) {
		t.Errorf("SeenAllSources before any snapshot")
	}
	m.Merge("file", nil)
	m.Merge("http", nil)
	if m.SeenAllSources(setOf("file")) {
		t.Errorf("SeenAllSources true although the sync loop has not seen http")
	}
	if !m.SeenAllSources(setOf("file", "http")) {
		t.Errorf("SeenAllSources false after snapshots from both sources")
	}
}

func TestMergerPushNeverWaits(t *testing.T) {
	notified := 0
	m, err := NewMerger(MergerConfig{Clock: testingclock.NewFakeClock(t0), BufferSize: 3, Notify: func() { notified++ }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, name := range []string{"a", "b", "c"} {
		if err := m.Push(ctx, "file", []*v1.Pod{pod(name)}); err != nil {
			t.Fatal(err)
		}
	}
	// ADD a, REMOVE a, ADD b fill the channel; REMOVE b, ADD c wait in the merger, in order.
	if notified != 2 {
		t.Errorf("Notify called %d times, want 2 (the third push sent nothing)", notified)
	}
	now := t0
	if due := m.Due(now); !due.Equal(now.Add(BackpressurePoll)) {
		t.Errorf("Due with a full channel = %v, want %v", due, now.Add(BackpressurePoll))
	}
	if got := describe([]kubetypes.PodUpdate{<-m.Updates()}); got != "ADD[a]" {
		t.Fatalf("first update %s", got)
	}
	if due := m.Due(now); !due.Equal(now) {
		t.Errorf("Due with room = %v, want now", due)
	}
	m.Step(ctx)
	if got := describe(drain(m)); got != "REMOVE[a] ADD[b] REMOVE[b]" {
		t.Errorf("channel after a step = %q, want the updates in merge order", got)
	}
	m.Step(ctx)
	if got := describe(drain(m)); got != "ADD[c]" {
		t.Errorf("channel after the next step = %q", got)
	}
	if due := m.Due(now); !due.IsZero() {
		t.Errorf("Due with nothing waiting = %v, want idle", due)
	}
	if _, err := NewMerger(MergerConfig{Sources: []string{"*"}}); err == nil {
		t.Errorf("NewMerger accepted the reserved source name *")
	}
}

func BenchmarkMergeSteadyState(b *testing.B) {
	pods := make([]*v1.Pod, 200)
	for i := range pods {
		pods[i] = pod("p" + itoa(i))
	}
	m := newMerger(b, testingclock.NewFakeClock(t0))
	m.Merge("file", pods)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if u := m.Merge("file", pods); len(u) != 0 {
			b.Fatalf("unexpected updates %s", describe(u))
		}
	}
}
