package client

import (
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/metrics"
)

// Operation types of the runtime operation metrics: upstream's names for the CRI calls
// (pkg/kubelet/kuberuntime/instrumented_services.go).
var operationTypes = map[string]string{
	"RunPodSandbox":            "run_podsandbox",
	"StopPodSandbox":           "stop_podsandbox",
	"RemovePodSandbox":         "remove_podsandbox",
	"PodSandboxStatus":         "podsandbox_status",
	"ListPodSandbox":           "list_podsandbox",
	"CreateContainer":          "create_container",
	"StartContainer":           "start_container",
	"StopContainer":            "stop_container",
	"RemoveContainer":          "remove_container",
	"ListContainers":           "list_containers",
	"ContainerStatus":          "container_status",
	"Status":                   "status",
	"GetContainerEvents":       "get_container_events",
	"PullImage":                "pull_image",
	"ImageStatus":              "image_status",
	"ListImages":               "list_images",
	"RemoveImage":              "remove_image",
	"ExecSync":                 "exec_sync",
	"ListContainerStats":       "list_container_stats",
	"ListPodSandboxStats":      "list_podsandbox_stats",
	"UpdateContainerResources": "update_container",
}

// opMetrics are the kubelet's runtime operation metrics: every CRI call counted by operation
// type when it returns, its errors, and how long it took on the node's clock (so an injected
// latency or hang shows in the histogram, in simulate as in the daemon).
type opMetrics struct {
	total, errors *prometheus.CounterVec
	duration      *prometheus.HistogramVec
	// ops has a fixed key per CRI method (made by Instrument, only read after): its series,
	// looked up once (a relist makes thousands of calls; a label lookup each would cost more
	// than the call) and made when first used, as upstream's, so that a call never made or
	// never failed has no series.
	ops map[string]*opSeries
}

type opSeries struct {
	op                string
	once, errOnce     sync.Once
	total, errorCount prometheus.Counter
	duration          prometheus.Observer
}

// Instrument registers the runtime operation metrics in reg and counts every call from now on.
// Call it before the client is used.
func (c *Client) Instrument(reg *metrics.Registry) {
	m := &opMetrics{
		total: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: reg.Name(metrics.RuntimeOperations),
			Help: "Cumulative number of runtime operations by operation type.",
		}, []string{"operation_type"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: reg.Name(metrics.RuntimeOperationsErrors),
			Help: "Cumulative number of runtime operation errors by operation type.",
		}, []string{"operation_type"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    reg.Name(metrics.RuntimeOperationsDuration),
			Help:    "Duration in seconds of runtime operations. Broken down by operation type.",
			Buckets: prometheus.ExponentialBuckets(.005, 2.5, 14),
		}, []string{"operation_type"}),
		ops: make(map[string]*opSeries, len(operationTypes)),
	}
	for method, op := range operationTypes {
		m.ops[method] = &opSeries{op: op}
	}
	reg.MustRegister(m.total, m.errors, m.duration)
	c.m = m
}

// record counts one call of method that started at start and returned err.
func (c *Client) record(method string, start time.Time, err error) {
	if c.m == nil {
		return
	}
	s := c.m.ops[method]
	s.once.Do(func() {
		s.total, s.duration = c.m.total.WithLabelValues(s.op), c.m.duration.WithLabelValues(s.op)
	})
	s.total.Inc()
	s.duration.Observe(c.clk.Since(start).Seconds())
	if err != nil {
		s.errOnce.Do(func() { s.errorCount = c.m.errors.WithLabelValues(s.op) })
		s.errorCount.Inc()
	}
}

// recordListing counts GetPods, the fake runtime's one call for upstream's two (ListPodSandbox,
// then ListContainers): both when it succeeds, up to the one that failed otherwise.
func (c *Client) recordListing(start time.Time, err error) {
	var me *cri.MethodError
	if err != nil && errors.As(err, &me) && me.Method == "ListContainers" {
		c.record("ListPodSandbox", start, nil)
		c.record("ListContainers", start, err)
		return
	}
	c.record("ListPodSandbox", start, err)
	if err == nil {
		c.record("ListContainers", start, nil)
	}
}
