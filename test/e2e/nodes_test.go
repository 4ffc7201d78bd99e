package e2e

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

var nodeServingRE = regexp.MustCompile(`"Serving HTTP" address="([^"]+)".* node="([^"]+)"`)

// TestNodeCount: --node-count 3 runs three complete nodes in one process. Each has its own
// name, port, node status and metrics, and runs the static pods of its own subdirectory
// only; SIGTERM stops them all and the process exits 0.
func TestNodeCount(t *testing.T) {
	d := startDaemon(t, "--node-count=3")
	urls := map[string]string{}
	d.eventually(30*time.Second, "three nodes serving", func() (bool, string) {
		for _, m := range nodeServingRE.FindAllStringSubmatch(d.log(), -1) {
			urls[m[2]] = "http://" + m[1]
		}
		return len(urls) == 3, fmt.Sprint(urls)
	})
	// The manifest at the top of the path belongs to no node: each reads its subdirectory.
	job := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: only-on-one\nspec:\n  containers:\n  - {name: c, image: busybox, command: [sleep, infinity]}\n"
	if err := os.WriteFile(filepath.Join(d.manifests, "e2e-1", "pod.yaml"), []byte(job), 0o644); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		name := fmt.Sprintf("e2e-%d", i)
		n := &daemon{t: t, url: urls[name]}
		n.eventually(30*time.Second, name+" Ready", func() (bool, string) {
			c := n.ready()
			return c.Status == v1.ConditionTrue, c.Message
		})
		var node v1.Node
		n.getJSON("/node", &node)
		if node.Name != name {
			t.Errorf("%s's /node is %q", name, node.Name)
		}
		if i == 1 {
			n.eventually(30*time.Second, "only-on-one Running on e2e-1", func() (bool, string) {
				p := n.podPhase("only-on-one-e2e-1")
				return p == v1.PodRunning, string(p)
			})
		} else {
			var list v1.PodList
			n.getJSON("/pods", &list)
			if len(list.Items) != 0 {
				t.Errorf("%s runs %d pods, want none (the manifest is e2e-1's)", name, len(list.Items))
			}
		}
		code, body := n.request(http.MethodGet, "/metrics", "")
		if want := fmt.Sprintf(`kubelet_node_name{node=%q} 1`, name); code != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("%s's /metrics lacks %s", name, want)
		}
		// The process' metrics on every node's, from the one pair of collectors they share.
		for _, want := range []string{"\ngo_goroutines ", "\nprocess_resident_memory_bytes "} {
			if !strings.Contains(body, want) {
				t.Errorf("%s's /metrics lacks %s", name, strings.TrimSpace(want))
			}
		}
	}
	if err := d.terminate(); err != nil {
		t.Fatalf("exit after SIGTERM: %v, want status 0", err)
	}
}
