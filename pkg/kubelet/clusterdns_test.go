package kubelet

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/pkg/runner"
)

// TestInitContainerWaitsForItsService: the init container of the Kubernetes docs' example
// (until nslookup SERVICE; do sleep; done) waits on the virtual clock while the Service
// does not exist, the cluster DNS answering NXDOMAIN, and ends once it is created: the
// pod then runs.
func TestInitContainerWaitsForItsService(t *testing.T) {
	client := fake.NewSimpleClientset()
	dir := t.TempDir()
	cfg, gate := loadConfig(t, dir, "--cluster-dns=10.96.0.10", "--cluster-domain=cluster.local")
	clk := clocktesting.NewFakeClock(epoch)
	k, err := New(Config{Config: cfg, Gate: gate, Clock: clk, KubeClient: client, InlineAPICalls: true})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(k.Stop)
	ctx := klog.NewContext(context.Background(), klog.Background())
	k.Start(ctx)
	h := &harness{t: t, ctx: ctx, clk: clk, k: k, dir: dir, sim: runner.NewSim(clk, k.Loops())}

	h.write("waiter.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: waiter
spec:
  initContainers:
  - name: wait-for-svc
    image: busybox:1.36
    command: [sh, -c, 'until nslookup my-svc.default.svc.cluster.local; do echo waiting; sleep 1; done']
  containers:
  - name: main
    image: busybox:1.36
    command: [sleep, infinity]
`)
	full := "waiter-" + testNode
	initState := func() v1.ContainerState {
		p := h.pod(full)
		if p == nil || len(p.Status.InitContainerStatuses) == 0 {
			return v1.ContainerState{}
		}
		return p.Status.InitContainerStatuses[0].State
	}
	h.until(30, "the init container running", func() bool { return initState().Running != nil }, h.describe)
	h.round(20 * time.Second)
	if s := initState(); s.Running == nil || h.phase(full) != v1.PodPending {
		t.Fatalf("without its Service the init container is %+v, the pod %s; want it still waiting, the pod Pending", s, h.phase(full))
	}
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "my-svc"},
		Spec: v1.ServiceSpec{ClusterIP: "10.96.3.3", Ports: []v1.ServicePort{{Port: 80, Protocol: v1.ProtocolTCP}}}}
	if _, err := client.CoreV1().Services("default").Create(context.Background(), svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	created := clk.Now()
	h.until(30, "the pod Running once its Service exists", func() bool { return h.phase(full) == v1.PodRunning }, h.describe)
	s := initState()
	if s.Terminated == nil || s.Terminated.ExitCode != 0 {
		t.Fatalf("init container %+v, want it ended with 0", s)
	}
	if took := s.Terminated.FinishedAt.Sub(created); took > 3*time.Second {
		t.Errorf("the init container ended %v after the Service was created, want within the 1s loop and refresh", took)
	}
	p := h.pod(full)
	lines, err := h.k.Runtime().ContainerLog(strings.TrimPrefix(p.Status.InitContainerStatuses[0].ContainerID, "fake://"), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var log []string
	for _, l := range lines {
		log = append(log, l.Text)
	}
	text := strings.Join(log, "\n")
	for _, want := range []string{"** server can't find my-svc.default.svc.cluster.local: NXDOMAIN", "waiting",
		"Server:\t\t10.96.0.10", "Address:\t10.96.0.10:53", "Name:\tmy-svc.default.svc.cluster.local", "Address: 10.96.3.3"} {
		if !strings.Contains(text, want) {
			t.Errorf("init container's log lacks %q:\n%s", want, text)
		}
	}
}
