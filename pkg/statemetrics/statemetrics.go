package statemetrics

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
)

// The series' names and help texts, as kube-state-metrics v2 has them. They take no prefix:
// alerts and dashboards written for kube-state-metrics select them by these names.
const (
	NodeStatusCondition             = "kube_node_status_condition"
	PodContainerStatusRestarts      = "kube_pod_container_status_restarts_total"
	PodContainerStatusWaitingReason = "kube_pod_container_status_waiting_reason"
)

var (
	nodeConditionDesc = prometheus.NewDesc(NodeStatusCondition,
		"The condition of a cluster node.", []string{"node", "condition", "status"}, nil)
	restartsDesc = prometheus.NewDesc(PodContainerStatusRestarts,
		"The number of container restarts per container.", []string{"namespace", "pod", "uid", "container"}, nil)
	waitingReasonDesc = prometheus.NewDesc(PodContainerStatusWaitingReason,
		"Describes the reason the container is currently in waiting state.", []string{"namespace", "pod", "uid", "container", "reason"}, nil)
)

// conditionStatuses are the values of the status label: kube-state-metrics writes one series
// per value for every condition, 1 on the condition's status and 0 on the others, so that
// `status="true"} == 0` catches False and Unknown alike.
var conditionStatuses = []v1.ConditionStatus{v1.ConditionTrue, v1.ConditionFalse, v1.ConditionUnknown}

// Config says where the collector reads the state. Both are called at every scrape and
// must be safe for concurrent use.
type Config struct {
	// NodeName labels the node's series.
	NodeName string
	// NodeConditions returns the node's current conditions (nil before the first status
	// update: no series then, as kube-state-metrics for a node without status).
	NodeConditions func() []v1.NodeCondition
	// Pods returns the pods with their current statuses.
	Pods func() []*v1.Pod
}

// Collector is a prometheus.Collector computing the series at scrape time from the current
// state, so a pod that is gone has no series left behind.
type Collector struct {
	cfg Config
}

var _ prometheus.Collector = (*Collector)(nil)

// New returns a collector reading cfg's functions; a nil function contributes no series.
func New(cfg Config) *Collector { return &Collector{cfg: cfg} }

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- nodeConditionDesc
	ch <- restartsDesc
	ch <- waitingReasonDesc
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	if c.cfg.NodeConditions != nil {
		for _, cond := range c.cfg.NodeConditions() {
			for _, s := range conditionStatuses {
				v := 0.0
				if cond.Status == s {
					v = 1
				}
				ch <- prometheus.MustNewConstMetric(nodeConditionDesc, prometheus.GaugeValue, v,
					c.cfg.NodeName, string(cond.Type), strings.ToLower(string(s)))
			}
		}
	}
	if c.cfg.Pods == nil {
		return
	}
	for _, pod := range c.cfg.Pods() {
		uid := string(pod.UID)
		for _, cs := range pod.Status.ContainerStatuses {
			ch <- prometheus.MustNewConstMetric(restartsDesc, prometheus.CounterValue, float64(cs.RestartCount),
				pod.Namespace, pod.Name, uid, cs.Name)
			if w := cs.State.Waiting; w != nil && w.Reason != "" {
				ch <- prometheus.MustNewConstMetric(waitingReasonDesc, prometheus.GaugeValue, 1,
					pod.Namespace, pod.Name, uid, cs.Name, w.Reason)
			}
		}
	}
}
