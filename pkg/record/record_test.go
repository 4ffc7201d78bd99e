package record

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	testingclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/yaml"

	"github.com/minikubelet/minikubelet/pkg/runtime/fault"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// scenario is the part of a scenario file the tests read back.
type scenario struct {
	Name     string
	Seed     int64
	Args     []string
	Config   string
	Cluster  bool
	Duration string
	Steps    []map[string]any
}

func open(t *testing.T, max int64, cluster bool) (*Recorder, *testingclock.FakeClock, string) {
	t.Helper()
	clk := testingclock.NewFakeClock(t0)
	path := filepath.Join(t.TempDir(), "rec.yaml")
	r, err := Open(Options{Path: path, MaxBytes: max, Clock: clk, Node: "n1", Args: []string{"--max-pods=20"},
		Config: "kind: KubeletConfiguration\n", Seed: 7, Cluster: cluster, Logger: klog.Background()})
	if err != nil {
		t.Fatal(err)
	}
	return r, clk, path
}

func read(t *testing.T, path string) scenario {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var sc scenario
	if err := yaml.Unmarshal(raw, &sc); err != nil {
		t.Fatalf("the recording is not YAML: %v\n%s", err, raw)
	}
	return sc
}

// Every kind of input becomes its scenario step at its offset from Open, in order, and Close
// writes the duration.
func TestRecorderWritesAScenario(t *testing.T) {
	r, clk, path := open(t, 1<<20, false)
	clk.Step(1500 * time.Microsecond)
	r.ManifestRead("web.yaml", []byte("kind: Pod\n"))
	r.ManifestsListed([]string{"web.yaml"})
	clk.Step(time.Second)
	r.ManifestRead("web.yaml", []byte("kind: Pod\n")) // the same content: nothing new
	r.FaultAdded(fault.Spec{ID: "fault-1", Method: "ListPodSandbox", Type: fault.Error})
	clk.Step(time.Second)
	r.FaultCleared("fault-1")
	r.FaultsCleared()
	r.ManifestsListed(nil)
	clk.Step(time.Second)
	r.Shutdown()
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	r.Shutdown() // after Close: nothing
	sc := read(t, path)
	if sc.Name != "recorded-n1" || sc.Seed != 7 || len(sc.Args) != 1 || sc.Config == "" || sc.Cluster || sc.Duration != "3.001s" {
		t.Errorf("header %+v", sc)
	}
	want := []string{
		"1ms write", "1.001s fault", "2.001s clearFault", "2.001s clearFaults", "2.001s remove", "3.001s shutdown",
	}
	var got []string
	for _, st := range sc.Steps {
		for k := range st {
			if k != "at" {
				got = append(got, st["at"].(string)+" "+k)
			}
		}
	}
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Errorf("steps %v\nwant  %v", got, want)
	}
	if id := sc.Steps[1]["fault"].(map[string]any)["id"]; id != "fault-1" {
		t.Errorf("fault step keeps the ID a later clearFault names: %v", sc.Steps[1])
	}
}

// The API server's pods: a new pod or generation is applied (spec and metadata, no status
// or server fields), a pod being deleted is deleted once, a pod that vanished is deleted.
func TestRecorderAPIPods(t *testing.T) {
	r, clk, path := open(t, 1<<20, true)
	pod := func(name string, gen int64, deleting bool) *v1.Pod {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name),
			Generation: gen, ResourceVersion: "42"}, Spec: v1.PodSpec{NodeName: "n1"}, Status: v1.PodStatus{Phase: v1.PodRunning}}
		if deleting {
			now := metav1.NewTime(t0)
			p.DeletionTimestamp = &now
		}
		return p
	}
	r.APIPods([]*v1.Pod{pod("a", 1, false), pod("b", 1, false)})
	clk.Step(time.Second)
	r.APIPods([]*v1.Pod{pod("a", 1, false), pod("b", 1, false)}) // nothing changed
	r.APIPods([]*v1.Pod{pod("a", 2, false), pod("b", 1, true)})
	clk.Step(time.Second)
	r.APIPods([]*v1.Pod{pod("b", 1, true)}) // a vanished (a forced deletion)
	r.APIPods(nil)                          // b is gone after its deletion: already recorded
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	sc := read(t, path)
	if !sc.Cluster {
		t.Error("a cluster node's recording must replay against the in-process API (cluster: true)")
	}
	var got []string
	for _, st := range sc.Steps {
		switch {
		case st["apply"] != nil:
			a := st["apply"].(string)
			if strings.Contains(a, "resourceVersion") || strings.Contains(a, "status") || strings.Contains(a, "uid") {
				t.Errorf("apply carries what the API server fills in:\n%s", a)
			}
			got = append(got, st["at"].(string)+" apply "+strings.Join(names(a), "+"))
		case st["delete"] != nil:
			for _, d := range st["delete"].([]any) {
				got = append(got, st["at"].(string)+" delete "+d.(map[string]any)["name"].(string))
			}
		}
	}
	want := "0s apply a+b, 1s apply a, 1s delete b, 2s delete a"
	if strings.Join(got, ", ") != want {
		t.Errorf("steps %q, want %q", strings.Join(got, ", "), want)
	}
}

func names(docs string) []string {
	var out []string
	for _, doc := range strings.Split(docs, "---\n") {
		var p v1.Pod
		if err := yaml.Unmarshal([]byte(doc), &p); err == nil {
			out = append(out, p.Name)
		}
	}
	return out
}

// At the size limit the recording ends, still a whole scenario: its duration is the instant
// of the last step it holds, and what comes later is not written.
func TestRecorderSizeLimit(t *testing.T) {
	r, clk, path := open(t, 4096, false)
	big := strings.Repeat("x", 1000)
	for i := 0; i < 10; i++ {
		clk.Step(time.Second)
		r.ManifestRead("f.yaml", []byte(big+string(rune('a'+i))))
	}
	clk.Step(time.Minute)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Size() > 4096 {
		t.Errorf("the recording is %d bytes, over its 4096-byte limit", info.Size())
	}
	sc := read(t, path)
	if len(sc.Steps) == 0 || len(sc.Steps) >= 10 {
		t.Fatalf("%d steps kept, want some and not all", len(sc.Steps))
	}
	// The step that did not fit ended the recording at its instant.
	if want := (time.Duration(len(sc.Steps)+1) * time.Second).String(); sc.Duration != want {
		t.Errorf("duration %s, want %s (where the recording ended)", sc.Duration, want)
	}
}

// The ConfigMaps and Secrets a node reads are applied once per content, a Secret with its
// keys and every value redacted; anything else is ignored.
func TestRecorderAPIObjects(t *testing.T) {
	r, clk, path := open(t, 1<<20, true)
	cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "default", ResourceVersion: "7"}, Data: map[string]string{"a": "1"}}
	sec := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "pw", Namespace: "default"}, Type: v1.SecretTypeOpaque,
		Data: map[string][]byte{"password": []byte("s3cret")}}
	r.APIObject(cm, clk.Now())
	r.APIObject(sec, clk.Now())
	r.APIObject(&v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "svc"}}, clk.Now())
	clk.Step(time.Second)
	r.APIObject(cm.DeepCopy(), clk.Now()) // read again, unchanged: nothing new
	cm.Data["a"] = "2"
	r.APIObject(cm, clk.Now())
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(path)
	if strings.Contains(string(raw), "s3cret") || strings.Contains(string(raw), "czNjcmV0") {
		t.Fatalf("the recording holds the Secret's value:\n%s", raw)
	}
	sc := read(t, path)
	var got []string
	for _, st := range sc.Steps {
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(st["apply"].(string)), &obj); err != nil {
			t.Fatal(err)
		}
		desc := st["at"].(string) + " " + obj["kind"].(string)
		switch obj["kind"] {
		case "ConfigMap":
			desc += " a=" + obj["data"].(map[string]any)["a"].(string)
		case "Secret":
			desc += " password=" + obj["data"].(map[string]any)["password"].(string)
		}
		got = append(got, desc)
	}
	// "cmVkYWN0ZWQ=" is base64 for "redacted", as a Secret's data is written.
	want := "0s ConfigMap a=1, 0s Secret password=cmVkYWN0ZWQ=, 1s ConfigMap a=2"
	if strings.Join(got, ", ") != want {
		t.Errorf("steps %q, want %q", strings.Join(got, ", "), want)
	}
}

// An object is recorded at the instant its read began (the sync that waited for it needed
// it then), never before a step already written.
func TestRecorderObjectAtItsRead(t *testing.T) {
	r, clk, path := open(t, 1<<20, true)
	clk.Step(time.Second)
	r.FaultsCleared() // a step at 1s
	clk.Step(time.Second)
	r.APIObject(&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "default"}}, t0.Add(1500*time.Millisecond))
	r.APIObject(&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "default"}}, t0.Add(500*time.Millisecond))
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, st := range read(t, path).Steps {
		got = append(got, fmt.Sprint(st["at"]))
	}
	if want := "1s 1.5s 1.5s"; strings.Join(got, " ") != want {
		t.Errorf("steps at %v, want %s", got, want)
	}
}
