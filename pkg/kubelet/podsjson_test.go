package kubelet

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPodsAnswerFromKeptEncodings: /pods, written from each pod's kept encoding, is byte for
// byte the encoding of GetPods' list through every change a pod goes through: added,
// pending, running, its status changed by a crash, its spec edited (a new pod), removed.
func TestPodsAnswerFromKeptEncodings(t *testing.T) {
	h := newHarness(t)
	handler := h.k.Server().Handler()
	check := func(when string, wantPods int) {
		t.Helper()
		code, body := get(t, handler, "/pods")
		list := v1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, Items: []v1.Pod{}}
		for _, p := range h.k.GetPods() {
			list.Items = append(list.Items, *p)
		}
		want, err := json.Marshal(&list)
		if err != nil {
			t.Fatal(err)
		}
		if code != http.StatusOK || body != string(want)+"\n" {
			t.Fatalf("%s: GET /pods = %d\n%s\nwant\n%s", when, code, body, want)
		}
		if len(list.Items) != wantPods || len(h.k.podsJSON.entries) != wantPods {
			t.Fatalf("%s: %d pods listed, %d encodings kept; want %d", when, len(list.Items), len(h.k.podsJSON.entries), wantPods)
		}
	}
	check("no pods", 0)
	h.write("web.yaml", podManifest("web", "nginx", ""))
	h.write("job.yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: job\n  annotations:\n    minikubelet.io/behavior.main: runFor=3s,exitCode=1\n"+
		"spec:\n  containers:\n  - name: main\n    image: busybox\n")
	h.drain()
	check("just added", 2)
	h.until(30, "both running", func() bool {
		return h.phase("web-node") == v1.PodRunning && h.phase("job-node") == v1.PodRunning
	}, h.describe)
	check("running", 2)
	kept := h.k.podsJSON.entries[h.pod("web-node").UID].data
	h.round(10 * time.Second)
	check("after the job crashed", 2)
	if got := h.k.podsJSON.entries[h.pod("web-node").UID].data; &got[0] != &kept[0] {
		t.Error("web's encoding was made again although neither it nor its status changed")
	}
	h.write("web.yaml", podManifest("web", "nginx:1.27", ""))
	h.until(30, "the edited web running", func() bool {
		p := h.pod("web-node")
		return p != nil && p.Spec.Containers[0].Image == "nginx:1.27" && h.phase("web-node") == v1.PodRunning
	}, h.describe)
	check("edited", 2)
	h.remove("job.yaml")
	h.until(30, "job gone", func() bool { return h.pod("job-node") == nil }, h.describe)
	check("job removed", 1)
}
