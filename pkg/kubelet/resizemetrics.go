package kubelet

import (
	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/minikubelet/minikubelet/pkg/allocation"
	"github.com/minikubelet/minikubelet/pkg/metrics"
)

// resizeMetrics are upstream's in-place resize metrics (alpha in v1.37), with its names,
// labels and help texts.
type resizeMetrics struct {
	requested        *prometheus.CounterVec // resource, requirement, operation
	pending          *prometheus.GaugeVec   // reason, priority_bucket
	infeasible       *prometheus.CounterVec // reason_detail
	inProgress       prometheus.Gauge
	deferredAccepted *prometheus.CounterVec // retry_trigger
}

func newResizeMetrics(reg *metrics.Registry) *resizeMetrics {
	m := &resizeMetrics{
		requested: prometheus.NewCounterVec(prometheus.CounterOpts{Name: reg.Name(metrics.ContainerRequestedResizes),
			Help: "Number of requested resizes, counted at the container level. Different resources on the same container are counted separately. The 'requirement' label refers to 'memory' or 'limits'; the 'operation' label can be one of 'add', 'remove', 'increase' or 'decrease'."},
			[]string{"resource", "requirement", "operation"}),
		pending: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: reg.Name(metrics.PodPendingResizes),
			Help: "Number of pending resizes for pods. Label 'priority_bucket' classifies the pod priority (system-critical: >=2000000000, high: 100000..1999999999, medium: 1..99999, normal: 0/default, low: -999..-1, very-low: <=-1000, unknown: nil pod). Label 'reason' describes the state (deferred, infeasible)."},
			[]string{"reason", "priority_bucket"}),
		infeasible: prometheus.NewCounterVec(prometheus.CounterOpts{Name: reg.Name(metrics.PodInfeasibleResizes),
			Help: "Number of infeasible resizes for pods."}, []string{"reason_detail"}),
		inProgress: prometheus.NewGauge(prometheus.GaugeOpts{Name: reg.Name(metrics.PodInProgressResizes),
			Help: "Number of in-progress resizes for pods."}),
		deferredAccepted: prometheus.NewCounterVec(prometheus.CounterOpts{Name: reg.Name(metrics.PodDeferredAcceptedResizes),
			Help: "Cumulative number of resizes that were accepted after being deferred."}, []string{"retry_trigger"}),
	}
	reg.MustRegister(m.requested, m.pending, m.infeasible, m.inProgress, m.deferredAccepted)
	return m
}

// Retry triggers of a deferred resize (upstream's TriggerReason*).
const (
	triggerPodUpdated  = "pod_updated"
	triggerPodsRemoved = "pods_removed"
	triggerTerminated  = "pod_terminated"
)

// recordRequested counts each resource requirement a resize changes, per container
// (upstream's recordContainerResizeOperations).
func (m *resizeMetrics) recordRequested(old, pod *v1.Pod) {
	if m == nil || old == nil {
		return
	}
	before := allocation.ForPod(old).Containers
	for name, now := range allocation.ForPod(pod).Containers {
		was := before[name]
		for _, r := range []struct {
			resource, requirement string
			now, was              *resource.Quantity
		}{
			{"memory", "requests", now.Requests.Memory(), was.Requests.Memory()},
			{"memory", "limits", now.Limits.Memory(), was.Limits.Memory()},
			{"cpu", "requests", now.Requests.Cpu(), was.Requests.Cpu()},
			{"cpu", "limits", now.Limits.Cpu(), was.Limits.Cpu()},
		} {
			if op := resizeOperation(r.now, r.was); op != "" {
				m.requested.WithLabelValues(r.resource, r.requirement, op).Inc()
			}
		}
	}
}

// resizeOperation is upstream's resizeOperationForResources.
func resizeOperation(now, was *resource.Quantity) string {
	switch {
	case now.IsZero() && !was.IsZero():
		return "remove"
	case was.IsZero() && !now.IsZero():
		return "add"
	case now.Cmp(*was) > 0:
		return "increase"
	case now.Cmp(*was) < 0:
		return "decrease"
	}
	return ""
}

// observe sets the gauges from the resize conditions the node holds.
func (m *resizeMetrics) observe(alloc *allocation.Manager, pods *podManager) {
	if m == nil || alloc == nil {
		return
	}
	m.pending.Reset()
	for _, uid := range alloc.PendingPods() {
		c := alloc.Pending(uid)
		reason := "deferred"
		if c.Reason == v1.PodReasonInfeasible {
			reason = "infeasible"
		}
		pod, _ := pods.GetPodByUID(uid)
		m.pending.WithLabelValues(reason, priorityBucket(pod)).Inc()
	}
	m.inProgress.Set(float64(alloc.InProgressCount()))
}

// priorityBucket is upstream's GetPriorityBucketLabel.
func priorityBucket(pod *v1.Pod) string {
	switch {
	case pod == nil:
		return "unknown"
	case pod.Spec.Priority == nil || *pod.Spec.Priority == 0:
		return "normal"
	case *pod.Spec.Priority >= 2000000000:
		return "system-critical"
	case *pod.Spec.Priority >= 100000:
		return "high"
	case *pod.Spec.Priority > 0:
		return "medium"
	case *pod.Spec.Priority > -1000:
		return "low"
	}
	return "very-low"
}
