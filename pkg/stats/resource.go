package stats

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// The /metrics/resource series, with v1.37's names, labels and help (component-base puts the
// stability level in front of the help), but for the swap series (the usage model has no
// swap: docs/differences.md). Never prefixed.
var (
	nodeCPUDesc = prometheus.NewDesc("node_cpu_usage_seconds_total",
		"[STABLE] Cumulative cpu time consumed by the node in core-seconds", nil, nil)
	nodeMemoryDesc = prometheus.NewDesc("node_memory_working_set_bytes",
		"[STABLE] Current working set of the node in bytes", nil, nil)
	containerCPUDesc = prometheus.NewDesc("container_cpu_usage_seconds_total",
		"[STABLE] Cumulative cpu time consumed by the container in core-seconds", []string{"container", "pod", "namespace"}, nil)
	containerMemoryDesc = prometheus.NewDesc("container_memory_working_set_bytes",
		"[STABLE] Current working set of the container in bytes", []string{"container", "pod", "namespace"}, nil)
	containerStartDesc = prometheus.NewDesc("container_start_time_seconds",
		"[STABLE] Start time of the container since unix epoch in seconds", []string{"container", "pod", "namespace"}, nil)
	podCPUDesc = prometheus.NewDesc("pod_cpu_usage_seconds_total",
		"[STABLE] Cumulative cpu time consumed by the pod in core-seconds", []string{"pod", "namespace"}, nil)
	podMemoryDesc = prometheus.NewDesc("pod_memory_working_set_bytes",
		"[STABLE] Current working set of the pod in bytes", []string{"pod", "namespace"}, nil)
	scrapeErrorDesc = prometheus.NewDesc("scrape_error",
		"[ALPHA] (Deprecated since 1.29.0) 1 if there was an error while getting container metrics, 0 otherwise", nil, nil)
	resourceScrapeErrorDesc = prometheus.NewDesc("resource_scrape_error",
		"[STABLE] 1 if there was an error while getting container metrics, 0 otherwise", nil, nil)
)

// ResourceCollector is the /metrics/resource collector: at each scrape it reads the summary
// and writes its CPU and memory figures with their timestamps, or, when the runtime fails,
// only resource_scrape_error 1.
type ResourceCollector struct {
	p       *Provider
	clock   clock.WithDelayedExecution
	timeout time.Duration
}

var _ prometheus.Collector = (*ResourceCollector)(nil)

// NewResourceCollector returns a collector of p's summary; a scrape waits at most timeout
// on clk (the node's) for the runtime.
func NewResourceCollector(p *Provider, clk clock.WithDelayedExecution, timeout time.Duration) *ResourceCollector {
	return &ResourceCollector{p: p, clock: clk, timeout: timeout}
}

// Describe implements prometheus.Collector.
func (c *ResourceCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{nodeCPUDesc, nodeMemoryDesc, containerCPUDesc, containerMemoryDesc, containerStartDesc,
		podCPUDesc, podMemoryDesc, scrapeErrorDesc, resourceScrapeErrorDesc} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *ResourceCollector) Collect(ch chan<- prometheus.Metric) {
	// The bound is on the node's clock, as every other deadline of the node: a scrape of a
	// node on a fake clock waits for that clock, not for the wall clock.
	ctx, cancel := context.WithCancelCause(context.Background())
	t := c.clock.AfterFunc(c.timeout, func() { cancel(context.DeadlineExceeded) })
	defer func() {
		t.Stop()
		cancel(nil)
	}()
	s, err := c.p.Summary(ctx)
	failed := 0.0
	if err != nil {
		klog.ErrorS(err, "Error getting summary for resourceMetric prometheus endpoint")
		failed = 1
	}
	ch <- prometheus.MustNewConstMetric(scrapeErrorDesc, prometheus.GaugeValue, failed)
	ch <- prometheus.MustNewConstMetric(resourceScrapeErrorDesc, prometheus.GaugeValue, failed)
	if err != nil {
		return
	}
	stamped := func(t time.Time, m prometheus.Metric) prometheus.Metric {
		return prometheus.NewMetricWithTimestamp(t, m)
	}
	n := s.Node
	if n.CPU != nil && n.CPU.UsageCoreNanoSeconds != nil {
		ch <- stamped(n.CPU.Time.Time, prometheus.MustNewConstMetric(nodeCPUDesc, prometheus.CounterValue, float64(*n.CPU.UsageCoreNanoSeconds)/1e9))
	}
	if n.Memory != nil && n.Memory.WorkingSetBytes != nil {
		ch <- stamped(n.Memory.Time.Time, prometheus.MustNewConstMetric(nodeMemoryDesc, prometheus.GaugeValue, float64(*n.Memory.WorkingSetBytes)))
	}
	for _, pod := range s.Pods {
		ref := pod.PodRef
		for _, ct := range pod.Containers {
			if !ct.StartTime.IsZero() {
				ch <- stamped(ct.StartTime.Time, prometheus.MustNewConstMetric(containerStartDesc, prometheus.GaugeValue,
					float64(ct.StartTime.UnixNano())/1e9, ct.Name, ref.Name, ref.Namespace))
			}
			if ct.CPU != nil && ct.CPU.UsageCoreNanoSeconds != nil {
				ch <- stamped(ct.CPU.Time.Time, prometheus.MustNewConstMetric(containerCPUDesc, prometheus.CounterValue,
					float64(*ct.CPU.UsageCoreNanoSeconds)/1e9, ct.Name, ref.Name, ref.Namespace))
			}
			if ct.Memory != nil && ct.Memory.WorkingSetBytes != nil {
				ch <- stamped(ct.Memory.Time.Time, prometheus.MustNewConstMetric(containerMemoryDesc, prometheus.GaugeValue,
					float64(*ct.Memory.WorkingSetBytes), ct.Name, ref.Name, ref.Namespace))
			}
		}
		if pod.CPU != nil && pod.CPU.UsageCoreNanoSeconds != nil {
			ch <- stamped(pod.CPU.Time.Time, prometheus.MustNewConstMetric(podCPUDesc, prometheus.CounterValue,
				float64(*pod.CPU.UsageCoreNanoSeconds)/1e9, ref.Name, ref.Namespace))
		}
		if pod.Memory != nil && pod.Memory.WorkingSetBytes != nil {
			ch <- stamped(pod.Memory.Time.Time, prometheus.MustNewConstMetric(podMemoryDesc, prometheus.GaugeValue,
				float64(*pod.Memory.WorkingSetBytes), ref.Name, ref.Namespace))
		}
	}
}
