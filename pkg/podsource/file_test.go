package podsource

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus/testutil"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/internal/eventually"
	"github.com/minikubelet/minikubelet/pkg/events"
	"github.com/minikubelet/minikubelet/pkg/kubetypes"
	"github.com/minikubelet/minikubelet/pkg/metrics"
	"github.com/minikubelet/minikubelet/pkg/runner"
)

var t0 = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

type fixture struct {
	dir    string
	clk    *testingclock.FakeClock
	reg    *metrics.Registry
	events *events.Store
	src    *FileSource
}

func newFixture(t *testing.T, mutate func(*Config)) *fixture {
	t.Helper()
	f := &fixture{dir: t.TempDir(), clk: testingclock.NewFakeClock(t0), reg: metrics.NewRegistry("kubelet_")}
	f.events = events.NewStore(f.clk, "node1", 0)
	cfg := Config{Path: f.dir, NodeName: "node1", Clock: f.clk, Recorder: f.events, Registry: f.reg}
	if mutate != nil {
		mutate(&cfg)
	}
	src, err := NewFileSource(cfg)
	if err != nil {
		t.Fatalf("NewFileSource: %v", err)
	}
	f.src = src
	return f
}

func (f *fixture) write(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(f.dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func (f *fixture) remove(t *testing.T, name string) {
	t.Helper()
	if err := os.Remove(filepath.Join(f.dir, name)); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) list(t *testing.T) ([]*v1.Pod, []*FileError) {
	t.Helper()
	pods, errs, err := f.src.ListOnce(context.Background())
	if err != nil {
		t.Fatalf("ListOnce: %v", err)
	}
	return pods, errs
}

// listLogged is list with the log captured, one line per entry.
func (f *fixture) listLogged(t *testing.T) ([]*v1.Pod, []*FileError, string) {
	t.Helper()
	var mu sync.Mutex
	var buf strings.Builder
	logger := funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		buf.WriteString(args + "\n")
	}, funcr.Options{Verbosity: 2})
	pods, errs, err := f.src.ListOnce(klog.NewContext(context.Background(), logger))
	if err != nil {
		t.Fatalf("ListOnce: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	return pods, errs, buf.String()
}

func (f *fixture) errorsCounted(reason string) float64 {
	return testutil.ToFloat64(f.src.errorsTotal.WithLabelValues(reason))
}

func podNames(pods []*v1.Pod) string {
	var names []string
	for _, p := range pods {
		names = append(names, p.Name)
	}
	return strings.Join(names, ",")
}

func TestListOnceSkipsWhatIsNotAManifest(t *testing.T) {
	f := newFixture(t, nil)
	f.write(t, "b.yaml", podYAML("b", ""))
	f.write(t, "a.json", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"},"spec":{"containers":[{"name":"c","image":"i:1"}]}}`)
	f.write(t, "noext", podYAML("c", ""))
	for _, ignored := range []string{".hidden.yaml", "b.yaml.swp", ".b.yaml.swx", "b.yaml~", "#b.yaml#", "b.yaml.tmp"} {
		f.write(t, ignored, podYAML("ignored", ""))
	}
	if err := os.Mkdir(filepath.Join(f.dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	f.write(t, "sub/nested.yaml", podYAML("nested", ""))

	pods, errs := f.list(t)
	if got, want := podNames(pods), "a-node1,b-node1,c-node1"; got != want {
		t.Errorf("pods = %s, want %s (file name order, ignored files and subdirectories skipped)", got, want)
	}
	if len(errs) != 0 {
		t.Errorf("errors = %v, want none", errs)
	}
}

func TestListOnceReportsBadFiles(t *testing.T) {
	tests := []struct {
		name      string
		setup     func(t *testing.T, f *fixture) string // returns the bad file's path
		reason    string
		wantErr   string
		event     string
		eventKind string
	}{
		{"not yaml", func(t *testing.T, f *fixture) string {
			return f.write(t, "bad.yaml", "kind: Pod\nmetadata: {name: [x\n")
		},
			ReasonDecode, "couldn't parse as pod", EventInvalidManifest, "Node"},
		{"not a pod", func(t *testing.T, f *fixture) string {
			return f.write(t, "bad.yaml", "apiVersion: v1\nkind: Service\nmetadata: {name: s}\n")
		}, ReasonNotPod, `kind "Service"`, EventInvalidManifest, "Node"},
		{"missing container name", func(t *testing.T, f *fixture) string {
			return f.write(t, "bad.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{image: nginx}]}\n")
		}, ReasonInvalid, "spec.containers[0].name: Required value", EventFailedValidation, "Pod"},
		{"missing image", func(t *testing.T, f *fixture) string {
			return f.write(t, "bad.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c}]}\n")
		}, ReasonInvalid, "spec.containers[0].image: Required value", EventFailedValidation, "Pod"},
		{"duplicate container names", func(t *testing.T, f *fixture) string {
			return f.write(t, "bad.yaml", podYAML("p", "  - name: app\n    image: nginx:1\n"))
		}, ReasonInvalid, `Duplicate value: "app"`, EventFailedValidation, "Pod"},
		{"duplicate pod full name", func(t *testing.T, f *fixture) string {
			// "0first.yaml" sorts before "bad.yaml": the later file loses.
			f.write(t, "0first.yaml", podYAML("good", ""))
			return f.write(t, "bad.yaml", strings.Replace(podYAML("good", ""), "busybox:1.36", "nginx:1", 1))
		}, ReasonDuplicate, "already defined by", EventFailedValidation, "Pod"},
		{"references a ConfigMap", func(t *testing.T, f *fixture) string {
			return f.write(t, "bad.yaml", podYAML("p", "    envFrom: [{configMapRef: {name: settings}}]\n"))
		}, ReasonInvalid, "static pods may not reference configmaps", EventFailedValidation, "Pod"},
		{"over 10MB", func(t *testing.T, f *fixture) string {
			p := f.write(t, "bad.yaml", "")
			if err := os.Truncate(p, MaxManifestSize+1); err != nil { // sparse: no 10MB written
				t.Fatal(err)
			}
			return p
		}, ReasonTooLarge, "file is 10485761 bytes, over the 10485760-byte limit", EventInvalidManifest, "Node"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, nil)
			f.write(t, "other.yaml", podYAML("other", ""))
			bad := tt.setup(t, f)

			pods, errs, logs := f.listLogged(t)
			if !strings.Contains(podNames(pods), "other-node1") {
				t.Errorf("pods = %s: the good file's pod must keep running", podNames(pods))
			}
			if strings.Contains(podNames(pods), "p-node1") {
				t.Errorf("the bad file's pod was accepted")
			}
			if len(errs) != 1 {
				t.Fatalf("errors = %v, want exactly the bad file", errs)
			}
			e := errs[0]
			if e.Path != bad || !strings.HasPrefix(e.Error(), bad+": ") || !strings.Contains(e.Error(), tt.wantErr) {
				t.Errorf("error = %q (path %s), want it to start with %s and contain %q", e, e.Path, bad, tt.wantErr)
			}
			if e.Reason != tt.reason {
				t.Errorf("reason = %s, want %s", e.Reason, tt.reason)
			}
			if got := f.errorsCounted(tt.reason); got != 1 {
				t.Errorf("static_pod_manifest_errors_total{reason=%q} = %v, want 1", tt.reason, got)
			}
			if want := `"msg"="Could not process manifest file" "error"=` + strconv.Quote(e.Error()) + ` "path"="` + bad + `"`; !strings.Contains(logs, want) {
				t.Errorf("log %q\nlacks %q", logs, want)
			}
			evs := f.events.List()
			if len(evs) != 1 {
				t.Fatalf("events = %+v, want one", evs)
			}
			ev := evs[0]
			if ev.Type != v1.EventTypeWarning || ev.Reason != tt.event || ev.InvolvedObject.Kind != tt.eventKind || !strings.Contains(ev.Message, bad) {
				t.Errorf("event = %s %s on %s: %q; want %s on a %s naming %s", ev.Type, ev.Reason, ev.InvolvedObject.Kind, ev.Message, tt.event, tt.eventKind, bad)
			}

			// The same bad content is reported once, however often the directory is listed.
			f.list(t)
			if _, _, logs := f.listLogged(t); strings.Contains(logs, "Could not process manifest file") {
				t.Errorf("the unchanged bad file was logged again: %q", logs)
			}
			if got := f.errorsCounted(tt.reason); got != 1 {
				t.Errorf("after relisting the unchanged file the counter is %v, want 1", got)
			}
			if n := len(f.events.List()); n != 1 || f.events.List()[0].Count != 1 {
				t.Errorf("after relisting: %d events (count %d), want the one event once", n, f.events.List()[0].Count)
			}
		})
	}
}

func TestBadFileReportedPerContentAndPickedUpWhenFixed(t *testing.T) {
	f := newFixture(t, nil)
	f.write(t, "web.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec: {containers: [{name: c}]}\n")
	f.list(t)
	// Another broken version is a new problem: reported again.
	f.write(t, "web.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec: {containers: [{image: nginx}]}\n")
	_, errs := f.list(t)
	if len(errs) != 1 || f.errorsCounted(ReasonInvalid) != 2 {
		t.Fatalf("second broken version: errors %v, counter %v; want it reported (counter 2)", errs, f.errorsCounted(ReasonInvalid))
	}
	// Fixed: the pod appears.
	f.write(t, "web.yaml", podYAML("web", ""))
	pods, errs := f.list(t)
	if podNames(pods) != "web-node1" || len(errs) != 0 {
		t.Fatalf("fixed file: pods %s errors %v; want web-node1 and no error", podNames(pods), errs)
	}
	// Broken again with the very first content: reported again, since it was fixed in between.
	f.write(t, "web.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec: {containers: [{name: c}]}\n")
	pods, _ = f.list(t)
	if len(pods) != 0 || f.errorsCounted(ReasonInvalid) != 3 {
		t.Errorf("broken again: pods %s counter %v; want no pod and counter 3", podNames(pods), f.errorsCounted(ReasonInvalid))
	}
	// The duplicate's owner goes away: the later file becomes valid.
	f.write(t, "a.yaml", podYAML("dup", ""))
	f.write(t, "b.yaml", podYAML("dup", "    imagePullPolicy: Never\n"))
	pods, _ = f.list(t)
	if podNames(pods) != "dup-node1" || pods[0].Spec.Containers[0].ImagePullPolicy == v1.PullNever {
		t.Fatalf("duplicate: pods %s; want only a.yaml's dup-node1", podNames(pods))
	}
	f.remove(t, "a.yaml")
	pods, _ = f.list(t)
	if podNames(pods) != "dup-node1" || pods[0].Spec.Containers[0].ImagePullPolicy != v1.PullNever {
		t.Errorf("after removing a.yaml: pods %s; want b.yaml's dup-node1", podNames(pods))
	}
}

func TestCreationTimestampIsFirstSeen(t *testing.T) {
	f := newFixture(t, nil)
	f.write(t, "a.yaml", podYAML("a", ""))
	pods, _ := f.list(t)
	if !pods[0].CreationTimestamp.Time.Equal(t0) {
		t.Fatalf("creationTimestamp = %v, want the first list time %v", pods[0].CreationTimestamp, t0)
	}
	f.clk.Step(time.Minute)
	f.write(t, "b.yaml", podYAML("b", ""))
	pods, _ = f.list(t)
	if !pods[0].CreationTimestamp.Time.Equal(t0) || !pods[1].CreationTimestamp.Time.Equal(t0.Add(time.Minute)) {
		t.Errorf("creation times = %v, %v; want a kept at %v and b at %v", pods[0].CreationTimestamp, pods[1].CreationTimestamp, t0, t0.Add(time.Minute))
	}
	// An edit is a new pod (new UID): it is first seen now.
	f.clk.Step(time.Minute)
	f.write(t, "a.yaml", podYAML("a", "    imagePullPolicy: Never\n"))
	pods, _ = f.list(t)
	if !pods[0].CreationTimestamp.Time.Equal(t0.Add(2 * time.Minute)) {
		t.Errorf("edited pod creationTimestamp = %v, want %v", pods[0].CreationTimestamp, t0.Add(2*time.Minute))
	}
}

// TestListOnceParseCache: a re-list parses only the files whose content changed, and what
// it returns is the same as a fresh parse, in objects the caller owns.
func TestListOnceParseCache(t *testing.T) {
	f := newFixture(t, nil)
	f.write(t, "a.yaml", podYAML("a", ""))
	f.write(t, "b.yaml", podYAML("b", ""))
	first, _ := f.list(t)
	cachedA := f.src.parsed[filepath.Join(f.dir, "a.yaml")]
	if cachedA == nil || len(f.src.parsed) != 2 {
		t.Fatalf("after the first list the cache holds %d files (a.yaml: %v), want both", len(f.src.parsed), cachedA != nil)
	}

	t.Run("unchanged files come from the cache, the same pods", func(t *testing.T) {
		pods, _ := f.list(t)
		if f.src.parsed[filepath.Join(f.dir, "a.yaml")] != cachedA {
			t.Error("a.yaml was parsed again although it did not change")
		}
		if pods[0] != first[0] || !cachedA.confirmed {
			t.Errorf("a.yaml's pod is a new object (%v) or its stamp is not confirmed (%v) after a second read", pods[0] != first[0], cachedA.confirmed)
		}
		// Confirmed: the next lists take it from its stat alone, without reading it.
		reads := f.src.reads
		if pods, _ := f.list(t); podNames(pods) != "a-node1,b-node1" || f.src.reads != reads {
			t.Errorf("a list of two confirmed, unchanged files read %d files (%s)", f.src.reads-reads, podNames(pods))
		}
	})
	t.Run("a rewrite of the same size is seen at once", func(t *testing.T) {
		f.write(t, "a.yaml", podYAML("a", "")[:len(podYAML("a", ""))-3]+"37\n")
		pods, _ := f.list(t)
		if got := pods[0].Spec.Containers[0].Image; got != "busybox:1.37" {
			t.Errorf("image after the rewrite = %q, want busybox:1.37", got)
		}
		if pods[0].UID == first[0].UID {
			t.Error("the rewritten pod kept its UID: the cached parse was used")
		}
	})
	t.Run("removed files leave the cache", func(t *testing.T) {
		f.remove(t, "b.yaml")
		pods, _ := f.list(t)
		if podNames(pods) != "a-node1" || len(f.src.parsed) != 1 {
			t.Errorf("pods %s, cache holds %d files; want a-node1 and 1", podNames(pods), len(f.src.parsed))
		}
	})
	t.Run("a refused file is not cached", func(t *testing.T) {
		f.write(t, "bad.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: bad}\nspec: {containers: [{name: c}]}\n")
		if _, errs := f.list(t); len(errs) != 1 {
			t.Fatalf("errors %v, want bad.yaml refused", errs)
		}
		if _, ok := f.src.parsed[filepath.Join(f.dir, "bad.yaml")]; ok {
			t.Error("the refused file is in the cache")
		}
	})
}

func TestMissingDirectory(t *testing.T) {
	f := newFixture(t, nil)
	gone := filepath.Join(f.dir, "manifests")
	src, err := NewFileSource(Config{Path: gone + "/", NodeName: "node1", Clock: f.clk})
	if err != nil {
		t.Fatal(err)
	}
	m := newMerger(t, f.clk)
	err = src.Relist(context.Background(), m)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Relist on a missing path: err %v, want a not-exist error", err)
	}
	if !m.SeenAllSources(setOf(kubetypes.FileSource)) {
		t.Errorf("a missing directory must still count as a snapshot (source seen)")
	}
	if err := os.Mkdir(gone, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(gone, "a.yaml"), []byte(podYAML("a", "")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := src.Relist(context.Background(), m); err != nil {
		t.Fatalf("Relist after the directory appeared: %v", err)
	}
	if got := podNames(m.Pods()); got != "a-node1" {
		t.Errorf("merged pods = %s, want a-node1", got)
	}
	if err := os.RemoveAll(gone); err != nil {
		t.Fatal(err)
	}
	_ = src.Relist(context.Background(), m)
	if got := podNames(m.Pods()); got != "" {
		t.Errorf("after the directory vanished pods = %s, want none (upstream sends an empty snapshot)", got)
	}
}

func TestSingleFilePath(t *testing.T) {
	f := newFixture(t, nil)
	p := f.write(t, "only.yaml", podYAML("only", ""))
	src, err := NewFileSource(Config{Path: p, NodeName: "node1", Clock: f.clk})
	if err != nil {
		t.Fatal(err)
	}
	pods, _, err := src.ListOnce(context.Background())
	if err != nil || podNames(pods) != "only-node1" {
		t.Errorf("ListOnce of a file path: %s, %v; want only-node1", podNames(pods), err)
	}
}

func TestNewFileSourceValidates(t *testing.T) {
	for name, cfg := range map[string]Config{
		"no path":           {NodeName: "n"},
		"no node":           {Path: "/x"},
		"negative duration": {Path: "/x", NodeName: "n", CheckFrequency: -time.Second},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := NewFileSource(cfg); err == nil {
				t.Errorf("NewFileSource(%+v) accepted it", cfg)
			}
		})
	}
}

// TestRelistThroughMerger drives the step the way simulate mode will: write files, call
// Relist, read the config channel.
func TestRelistThroughMerger(t *testing.T) {
	f := newFixture(t, nil)
	m := newMerger(t, f.clk)
	ctx := context.Background()
	step := func() []kubetypes.PodUpdate {
		t.Helper()
		if err := f.src.Relist(ctx, m); err != nil {
			t.Fatal(err)
		}
		return drain(m)
	}
	if got := describe(step()); got != "ADD[]" {
		t.Errorf("first empty snapshot: %s, want an empty ADD marking the source seen", got)
	}
	f.write(t, "web.yaml", podYAML("web", ""))
	added := step()
	if got := describe(added); got != "ADD[web-node1]" {
		t.Fatalf("new file: %s", got)
	}
	// The file source sets the kubelet's annotations on the pod it keeps, so the merger
	// hands out that very pod: one copy of a static pod in memory, not two.
	pod := added[0].Pods[0]
	if got, want := pod.Annotations[kubetypes.ConfigSourceAnnotationKey], kubetypes.FileSource; got != want {
		t.Errorf("%s = %q, want %q", kubetypes.ConfigSourceAnnotationKey, got, want)
	}
	if got, want := pod.Annotations[kubetypes.ConfigFirstSeenAnnotationKey], f.clk.Now().Format(time.RFC3339Nano); got != want {
		t.Errorf("%s = %q, want %q", kubetypes.ConfigFirstSeenAnnotationKey, got, want)
	}
	if kept := f.src.parsed[filepath.Join(f.dir, "web.yaml")]; kept == nil || len(kept.pods) != 1 || kept.pods[0] != pod {
		t.Errorf("the merger's pod is not the file source's kept pod: a copy costs memory per static pod")
	}
	f.clk.Step(time.Minute)
	if got := describe(step()); got != "" {
		t.Errorf("unchanged directory: %s, want nothing", got)
	}
	f.write(t, "web.yaml", podYAML("web", "    imagePullPolicy: Never\n"))
	if got := describe(step()); got != "REMOVE[web-node1] ADD[web-node1]" {
		t.Errorf("edited file: %s, want the old pod removed and the new one added (the UID hashes the content)", got)
	}
	f.remove(t, "web.yaml")
	if got := describe(step()); got != "REMOVE[web-node1]" {
		t.Errorf("removed file: %s", got)
	}
}

// TestLoopPeriodicAndTriggeredRelist checks the source as a loop on a fake clock: it lists
// at once, then every CheckFrequency, and WatchDebounce after a Trigger (coalescing a burst).
func TestLoopPeriodicAndTriggeredRelist(t *testing.T) {
	var m *Merger
	f := newFixture(t, func(c *Config) { m = newMerger(t, c.Clock); c.Sink = m })
	loops := []runner.Loop{{Name: "file-source", Due: f.src.Due, Step: f.src.Step, Wake: f.src.Wake()}}
	sim := runner.NewSim(f.clk, loops)
	ctx := context.Background()
	// runFor steps every relist due up to d from now and returns what was pushed.
	runFor := func(d time.Duration) string {
		t.Helper()
		if err := sim.RunUntil(ctx, f.clk.Now().Add(d), nil); err != nil {
			t.Fatal(err)
		}
		return describe(drain(m))
	}
	if got := runFor(0); got != "ADD[]" {
		t.Fatalf("first relist: %s, want the empty snapshot at once", got)
	}
	f.write(t, "web.yaml", podYAML("web", ""))
	if got := runFor(DefaultCheckFrequency - time.Second); got != "" {
		t.Fatalf("update before the period elapsed: %s", got)
	}
	if got := runFor(time.Second); got != "ADD[web-node1]" {
		t.Errorf("after one period: %s", got)
	}
	// A burst of triggers is one relist, WatchDebounce after the first.
	f.write(t, "api.yaml", podYAML("api", ""))
	f.src.Trigger()
	f.clk.Step(DefaultWatchDebounce / 2)
	f.src.Trigger()
	if got := runFor(DefaultWatchDebounce/2 - time.Millisecond); got != "" {
		t.Fatalf("update before the debounce elapsed: %s", got)
	}
	if got := runFor(time.Millisecond); got != "ADD[api-node1]" {
		t.Errorf("after the debounce: %s", got)
	}
	// The triggered relist restarted the period.
	if due := f.src.Due(f.clk.Now()); !due.Equal(f.clk.Now().Add(DefaultCheckFrequency)) {
		t.Errorf("next relist due %v, want one CheckFrequency after the triggered one (%v)", due, f.clk.Now().Add(DefaultCheckFrequency))
	}
}

// TestWatchSeesChangesQuickly is the one real-time test: fsnotify on a real directory that
// does not exist when the source starts, the source run by the daemon's runner. The deadline
// is generous; the feature needs 1s.
func TestWatchSeesChangesQuickly(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "manifests")
	before := runtime.NumGoroutine()
	m := newMerger(t, clock.RealClock{})
	src, err := NewFileSource(Config{Path: dir, NodeName: "node1", Clock: clock.RealClock{}, Watch: true, CheckFrequency: time.Hour, Sink: m})
	if err != nil {
		t.Fatal(err)
	}
	g := runner.NewGroup(context.Background())
	g.Go("node", runner.NewOwner(clock.RealClock{}, []runner.Loop{{Name: "file-source", Due: src.Due, Step: src.Step, Wake: src.Wake()}}, nil).Run)
	g.Go("file-watch", src.WatchLoop)

	await := func(want string) {
		t.Helper()
		awaitUpdate(t, m, want)
	}
	await("ADD[]") // the missing directory is an empty snapshot
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "web.yaml"), []byte(podYAML("web", "")), 0o644); err != nil {
		t.Fatal(err)
	}
	await("ADD[web-node1]")
	if err := os.WriteFile(filepath.Join(dir, "api.yaml"), []byte(podYAML("api", "")), 0o644); err != nil {
		t.Fatal(err)
	}
	await("ADD[api-node1]")
	if err := os.Remove(filepath.Join(dir, "web.yaml")); err != nil {
		t.Fatal(err)
	}
	await("REMOVE[web-node1]")

	g.Stop()
	g.Wait()
	// fsnotify's reader goroutine exits just after Close returns.
	eventually.True(t, "the watcher's goroutines to exit", func() bool { return runtime.NumGoroutine() <= before })
}

// awaitUpdate waits, on the real clock, for the merger to hand on the update want (as
// describe renders it). The deadline is generous; the watch needs about a second.
func awaitUpdate(t *testing.T, m *Merger, want string) {
	t.Helper()
	const deadline = 10 * time.Second
	timeout := time.After(deadline)
	for {
		select {
		case u := <-m.Updates():
			if got := describe([]kubetypes.PodUpdate{u}); got == want {
				return
			}
		case <-timeout:
			t.Fatalf("no %s within %v", want, deadline)
		}
	}
}

func drain(m *Merger) []kubetypes.PodUpdate {
	var out []kubetypes.PodUpdate
	for {
		select {
		case u := <-m.Updates():
			out = append(out, u)
		default:
			return out
		}
	}
}

// describe renders updates as "OP[name,name] OP[...]".
func describe(us []kubetypes.PodUpdate) string {
	var parts []string
	for _, u := range us {
		var names []string
		for _, p := range u.Pods {
			names = append(names, p.Name)
		}
		sort.Strings(names)
		parts = append(parts, u.Op.String()+"["+strings.Join(names, ",")+"]")
	}
	return strings.Join(parts, " ")
}

// BenchmarkListOnce re-lists a directory whose files did not change since the last list
// (the periodic re-list, and every re-list after a file event): each file is read, and its
// parse comes from the cache.
func BenchmarkListOnce(b *testing.B) {
	for _, n := range []int{10, 200, 1000, 5000} {
		b.Run("files="+itoa(n), func(b *testing.B) {
			dir := b.TempDir()
			for i := 0; i < n; i++ {
				if err := os.WriteFile(filepath.Join(dir, "pod"+itoa(i)+".yaml"), []byte(podYAML("pod"+itoa(i), "")), 0o644); err != nil {
					b.Fatal(err)
				}
			}
			src, err := NewFileSource(Config{Path: dir, NodeName: "n", Clock: testingclock.NewFakeClock(t0)})
			if err != nil {
				b.Fatal(err)
			}
			if _, _, err := src.ListOnce(context.Background()); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				pods, _, err := src.ListOnce(context.Background())
				if err != nil || len(pods) != n {
					b.Fatalf("ListOnce: %d pods, %v", len(pods), err)
				}
			}
		})
	}
}

// countingSink records the snapshots pushed to it.
type countingSink struct{ snapshots [][]*v1.Pod }

func (c *countingSink) Push(_ context.Context, _ string, pods []*v1.Pod) error {
	c.snapshots = append(c.snapshots, pods)
	return nil
}

// TestRelistPushesOnlyChangedSnapshots: a relist that finds the same files with the same
// content does not push them again; any change (a new, edited, refused or removed file)
// does, and so does the first relist of an empty directory (it marks the source seen).
func TestRelistPushesOnlyChangedSnapshots(t *testing.T) {
	f := newFixture(t, nil)
	sink := &countingSink{}
	ctx := context.Background()
	steps := []struct {
		name     string
		change   func()
		wantPush bool
		wantPods string
	}{
		{"first relist of an empty directory", func() {}, true, ""},
		{"nothing changed", func() {}, false, ""},
		{"new file", func() { f.write(t, "web.yaml", podYAML("web", "")) }, true, "web-node1"},
		{"same content rewritten", func() { f.write(t, "web.yaml", podYAML("web", "")) }, false, ""},
		{"edited file", func() { f.write(t, "web.yaml", podYAML("web", "    imagePullPolicy: Never\n")) }, true, "web-node1"},
		{"bad file beside it", func() { f.write(t, "bad.yaml", "kind: Pod\nspec: [\n") }, false, ""},
		{"good file made bad", func() { f.write(t, "web.yaml", "kind: Pod\nspec: [\n") }, true, ""},
		{"removed files", func() { f.remove(t, "web.yaml"); f.remove(t, "bad.yaml") }, false, ""},
		{"file back", func() { f.write(t, "web.yaml", podYAML("web", "")) }, true, "web-node1"},
	}
	for _, st := range steps {
		before := len(sink.snapshots)
		st.change()
		if err := f.src.Relist(ctx, sink); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		pushed := len(sink.snapshots) > before
		if pushed != st.wantPush {
			t.Fatalf("%s: pushed = %t, want %t", st.name, pushed, st.wantPush)
		}
		if pushed {
			if got := podNames(sink.snapshots[len(sink.snapshots)-1]); got != st.wantPods {
				t.Errorf("%s: pushed %q, want %q", st.name, got, st.wantPods)
			}
		}
	}
}

// TestStaticPodPriorityWarningLoggedOnce: kubelet v1.37 logs each static pod priority
// warning once (config/common.go:165-169, its cache keyed by the message), with the pod
// that first earned it.
func TestStaticPodPriorityWarningLoggedOnce(t *testing.T) {
	f := newFixture(t, nil)
	f.write(t, "a.yaml", podYAML("a", "  priority: 100\n"))
	f.write(t, "b.yaml", podYAML("b", "  priority: 200\n"))
	f.write(t, "c.yaml", podYAML("c", "  priorityClassName: system-node-critical\n"))
	f.write(t, "d.yaml", podYAML("d", "  priorityClassName: system-node-critical\n  priority: 2000001000\n"))
	pods, errs, logs := f.listLogged(t)
	if len(errs) != 0 || len(pods) != 4 {
		t.Fatalf("pods %s, errors %v: a warning refuses nothing", podNames(pods), errs)
	}
	want := []string{
		`"level"=0 "msg"="Static pod has priority without priorityClassName. Mirror pod creation may fail if the default priority class doesn't match the given priority." "pod"={"name"="a-node1" "namespace"="default"}`,
		`"level"=0 "msg"="Static pod has priorityClassName and nil priority. Kubelet will not use priorityClassName, and mirror pod creation may fail." "pod"={"name"="c-node1" "namespace"="default"}`,
	}
	var got []string
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, "Static pod has") {
			got = append(got, line)
		}
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings logged:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	f.write(t, "e.yaml", podYAML("e", "  priority: 300\n"))
	if _, _, logs := f.listLogged(t); strings.Contains(logs, "Static pod has") {
		t.Errorf("a warning already logged was logged again: %q", logs)
	}
}

// outcome is what a list gave, for TestParseAheadGivesWhatOneByOneGives.
type outcome struct {
	pods   []*v1.Pod
	errs   []*FileError
	log    string
	parsed int
}

// A directory of many manifests is read and parsed on all cores (parseAhead): the pods,
// the refused files and the log are what reading them one by one gives, at the first list
// and at the next, after some files changed, some were removed and one went bad.
func TestParseAheadGivesWhatOneByOneGives(t *testing.T) {
	run := func(t *testing.T, ahead, cancelled bool) []outcome {
		saved := parseAheadMin
		if !ahead {
			parseAheadMin = 1 << 30
		}
		defer func() { parseAheadMin = saved }()
		// One UID root: the two runs' directories differ, their pods' UIDs must not.
		f := newFixture(t, func(c *Config) { c.UIDRoot = "/etc/kubernetes/manifests" })
		for i := range 150 {
			f.write(t, fmt.Sprintf("p%03d.yaml", i), podYAML(fmt.Sprintf("p%03d", i), ""))
		}
		f.write(t, "bad.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: bad}\nspec: {containers: [{name: c}]}\n")
		f.write(t, "notyaml.yaml", "{[")
		f.write(t, "dup.yaml", podYAML("p007", ""))
		var out []outcome
		list := func() {
			if cancelled {
				// Nothing is read ahead for a cancelled list: readFile reads it all.
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				pods, errs, err := f.src.ListOnce(ctx)
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, outcome{pods, errs, "", len(f.src.parsed)})
				return
			}
			pods, errs, log := f.listLogged(t)
			out = append(out, outcome{pods, errs, log, len(f.src.parsed)})
		}
		list()
		for i := range 100 {
			if i%3 == 0 {
				f.write(t, fmt.Sprintf("p%03d.yaml", i), podYAML(fmt.Sprintf("p%03d", i), "")+"  hostNetwork: true\n")
			}
		}
		f.remove(t, "p149.yaml")
		f.write(t, "p148.yaml", "kind: Pod\n")
		f.clk.Step(time.Second)
		list()
		return out
	}
	want := run(t, false, false)
	// What is logged and refused names the fixture's own directory: compare without it.
	strip := func(s string) string { return regexp.MustCompile(`/tmp/[^ "]*/`).ReplaceAllString(s, "DIR/") }
	for _, cancelled := range []bool{false, true} {
		got := run(t, true, cancelled)
		compare(t, want, got, strip, cancelled)
	}
}

func compare(t *testing.T, want, got []outcome, strip func(string) string, cancelled bool) {
	t.Helper()
	for i := range want {
		if len(got[i].pods) != len(want[i].pods) || len(got[i].pods) < 140 {
			t.Fatalf("list %d: %d pods read ahead, %d one by one", i, len(got[i].pods), len(want[i].pods))
		}
		for j := range want[i].pods {
			g, w := got[i].pods[j], want[i].pods[j]
			if g.Name != w.Name || g.UID != w.UID || !reflect.DeepEqual(g.Spec, w.Spec) {
				t.Errorf("list %d pod %d: %s (%s) read ahead, %s (%s) one by one", i, j, g.Name, g.UID, w.Name, w.UID)
			}
		}
		if strip(fmt.Sprint(got[i].errs)) != strip(fmt.Sprint(want[i].errs)) {
			t.Errorf("list %d: refused read ahead %v, one by one %v", i, got[i].errs, want[i].errs)
		}
		if got[i].parsed != want[i].parsed {
			t.Errorf("list %d: %d files cached read ahead, %d one by one", i, got[i].parsed, want[i].parsed)
		}
		if !cancelled && strip(got[i].log) != strip(want[i].log) {
			t.Errorf("list %d: the log read ahead\n%s\none by one\n%s", i, got[i].log, want[i].log)
		}
	}
}
