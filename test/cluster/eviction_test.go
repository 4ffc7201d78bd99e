package cluster

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/minikubelet/minikubelet/internal/eventually"
)

// TestEvictionUnderMemoryPressure: a Deployment's pod whose memory grows past what the node
// has is evicted by the node (Failed, Evicted, upstream's message, DisruptionTarget), the
// ReplicaSet replaces it, and the node lifecycle controller taints the node
// node.kubernetes.io/memory-pressure.
func TestEvictionUnderMemoryPressure(t *testing.T) {
	const node = "mk-evict"
	cp := startControlPlane(t, node)
	bin := buildDaemon(t)
	ctx := context.Background()
	startNode(t, cp, bin, node, 0, "--port", "0")
	waitNodeReady(t, cp, node, 0)
	waitServiceAccount(t, cp)

	labels := map[string]string{"app": "leaky"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "leaky", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: v1.PodTemplateSpec{
				// 1Gi at start, growing 1Gi every 2s: the 8Gi node runs out within seconds.
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: map[string]string{
					"minikubelet.io/behavior.app": "memoryUsage=1Gi,memoryGrowth=1Gi/2s",
				}},
				Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: "ghcr.io/acme/leaky:1.0",
					Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceMemory: resourceMust("256Mi")}}}}},
			},
		},
	}
	if _, err := cp.admin.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var evicted string
	eventually.Within(t, 90*time.Second, "the leaking pod evicted", func() (bool, string) {
		pods, err := cp.admin.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=leaky"})
		if err != nil {
			return false, err.Error()
		}
		var state []string
		for _, p := range pods.Items {
			if p.Status.Phase == v1.PodFailed && p.Status.Reason == "Evicted" {
				evicted = p.Name
				msg := p.Status.Message
				disruption := false
				for _, c := range p.Status.Conditions {
					disruption = disruption || (c.Type == v1.DisruptionTarget && c.Reason == "TerminationByKubelet")
				}
				if !strings.HasPrefix(msg, "The node was low on resource: memory. Threshold quantity: 100Mi") ||
					!strings.Contains(msg, "request is 256Mi, has larger consumption of memory.") || !disruption {
					t.Errorf("evicted status: %q, conditions %+v", msg, p.Status.Conditions)
				}
				return true, ""
			}
			state = append(state, p.Name+":"+string(p.Status.Phase))
		}
		return false, fmt.Sprint(state)
	})
	eventually.Within(t, 60*time.Second, "a replacement pod and the memory-pressure taint", func() (bool, string) {
		pods, err := cp.admin.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=leaky"})
		if err != nil {
			return false, err.Error()
		}
		replaced := false
		for _, p := range pods.Items {
			replaced = replaced || (p.Name != evicted && p.Status.Phase != v1.PodFailed)
		}
		n, err := cp.admin.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		tainted := false
		for _, taint := range n.Spec.Taints {
			tainted = tainted || (taint.Key == v1.TaintNodeMemoryPressure && taint.Effect == v1.TaintEffectNoSchedule)
		}
		return replaced && tainted, fmt.Sprintf("replaced=%t taints=%v pods=%d", replaced, n.Spec.Taints, len(pods.Items))
	})
	evs, err := cp.admin.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + evicted})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range evs.Items {
		found = found || (e.Reason == "Evicted" && e.Type == v1.EventTypeWarning && e.Source.Component == "kubelet")
	}
	if !found {
		t.Errorf("no Evicted event from the kubelet on %s: %+v", evicted, evs.Items)
	}
}

func resourceMust(q string) resource.Quantity { return resource.MustParse(q) }
