package statemetrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func pod(name string, statuses ...v1.ContainerStatus) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name)},
		Status:     v1.PodStatus{ContainerStatuses: statuses},
	}
}

func TestCollect(t *testing.T) {
	crashing := v1.ContainerStatus{Name: "app", RestartCount: 3,
		State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}}
	running := v1.ContainerStatus{Name: "side", RestartCount: 0,
		State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}
	// A container waiting without a reason has no waiting_reason series (kube-state-metrics).
	waitingNoReason := v1.ContainerStatus{Name: "init", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{}}}

	tests := []struct {
		name   string
		conds  []v1.NodeCondition
		pods   []*v1.Pod
		metric string
		want   string
	}{{
		name: "Ready False: one series per status, 1 on False",
		conds: []v1.NodeCondition{
			{Type: v1.NodeReady, Status: v1.ConditionFalse},
			{Type: v1.NodeMemoryPressure, Status: v1.ConditionTrue},
		},
		metric: NodeStatusCondition,
		want: `
# HELP kube_node_status_condition The condition of a cluster node.
# TYPE kube_node_status_condition gauge
kube_node_status_condition{condition="MemoryPressure",node="n1",status="false"} 0
kube_node_status_condition{condition="MemoryPressure",node="n1",status="true"} 1
kube_node_status_condition{condition="MemoryPressure",node="n1",status="unknown"} 0
kube_node_status_condition{condition="Ready",node="n1",status="false"} 1
kube_node_status_condition{condition="Ready",node="n1",status="true"} 0
kube_node_status_condition{condition="Ready",node="n1",status="unknown"} 0
`,
	}, {
		name:   "Ready Unknown",
		conds:  []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionUnknown}},
		metric: NodeStatusCondition,
		want: `
# HELP kube_node_status_condition The condition of a cluster node.
# TYPE kube_node_status_condition gauge
kube_node_status_condition{condition="Ready",node="n1",status="false"} 0
kube_node_status_condition{condition="Ready",node="n1",status="true"} 0
kube_node_status_condition{condition="Ready",node="n1",status="unknown"} 1
`,
	}, {
		name:   "no node status yet: no series",
		metric: NodeStatusCondition,
		want:   "",
	}, {
		name:   "restarts per container",
		pods:   []*v1.Pod{pod("web", crashing, running), pod("job", waitingNoReason)},
		metric: PodContainerStatusRestarts,
		want: `
# HELP kube_pod_container_status_restarts_total The number of container restarts per container.
# TYPE kube_pod_container_status_restarts_total counter
kube_pod_container_status_restarts_total{container="app",namespace="default",pod="web",uid="uid-web"} 3
kube_pod_container_status_restarts_total{container="init",namespace="default",pod="job",uid="uid-job"} 0
kube_pod_container_status_restarts_total{container="side",namespace="default",pod="web",uid="uid-web"} 0
`,
	}, {
		name:   "waiting reason only for containers waiting with a reason",
		pods:   []*v1.Pod{pod("web", crashing, running), pod("job", waitingNoReason)},
		metric: PodContainerStatusWaitingReason,
		want: `
# HELP kube_pod_container_status_waiting_reason Describes the reason the container is currently in waiting state.
# TYPE kube_pod_container_status_waiting_reason gauge
kube_pod_container_status_waiting_reason{container="app",namespace="default",pod="web",reason="CrashLoopBackOff",uid="uid-web"} 1
`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := New(Config{
				NodeName:       "n1",
				NodeConditions: func() []v1.NodeCondition { return tt.conds },
				Pods:           func() []*v1.Pod { return tt.pods },
			})
			if err := testutil.CollectAndCompare(c, strings.NewReader(tt.want), tt.metric); err != nil {
				t.Error(err)
			}
		})
	}
}

// A pod that is gone leaves no series behind: the series are computed at each scrape.
func TestRemovedPodHasNoSeries(t *testing.T) {
	pods := []*v1.Pod{pod("web", v1.ContainerStatus{Name: "app"})}
	c := New(Config{Pods: func() []*v1.Pod { return pods }})
	if n := testutil.CollectAndCount(c, PodContainerStatusRestarts); n != 1 {
		t.Fatalf("series before removal = %d, want 1", n)
	}
	pods = nil
	if n := testutil.CollectAndCount(c, PodContainerStatusRestarts); n != 0 {
		t.Fatalf("series after removal = %d, want 0", n)
	}
}
