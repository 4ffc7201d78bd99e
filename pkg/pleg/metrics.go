package pleg

import (
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/pkg/metrics"
)

// The values of pleg_active's "type" label.
const (
	TypeGeneric = "generic"
	TypeEvented = "evented"
)

// plegMetrics are the PLEG metrics, registered once per registry and shared by the generic
// and the evented PLEG (upstream they are package globals). Help texts are upstream's.
type plegMetrics struct {
	relistDuration prometheus.Histogram
	relistInterval prometheus.Histogram
	podRelist      prometheus.Histogram
	discardEvents  prometheus.Counter
	discarded      atomic.Uint64 // discardEvents' value, for readers without a scrape
	lastSeen       prometheus.Gauge
	connErr        prometheus.Counter
	conn           prometheus.Counter
	connLatency    prometheus.Histogram
	active         *prometheus.GaugeVec

	mu      sync.Mutex
	current string // the active PLEG type; guarded by mu
}

// newMetrics registers the metrics in reg; podRelist only with podRelistMetric (v1.36 on).
func newMetrics(reg *metrics.Registry, podRelistMetric bool) *plegMetrics {
	m := &plegMetrics{
		relistDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: reg.Name(metrics.PLEGRelistDuration), Help: "[ALPHA] Duration in seconds for relisting pods in PLEG.",
			Buckets: prometheus.DefBuckets,
		}),
		relistInterval: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: reg.Name(metrics.PLEGRelistInterval), Help: "[ALPHA] Interval in seconds between relisting in PLEG.",
			Buckets: prometheus.DefBuckets,
		}),
		podRelist: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: reg.Name(metrics.PLEGPodRelistDuration), Help: "[ALPHA] Duration in seconds for relisting a single pod in PLEG.",
			Buckets: prometheus.DefBuckets,
		}),
		discardEvents: prometheus.NewCounter(prometheus.CounterOpts{
			Name: reg.Name(metrics.PLEGDiscardEvents), Help: "[ALPHA] The number of discard events in PLEG.",
		}),
		lastSeen: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: reg.Name(metrics.PLEGLastSeen), Help: "[ALPHA] Timestamp in seconds when PLEG was last seen active.",
		}),
		connErr: prometheus.NewCounter(prometheus.CounterOpts{
			Name: reg.Name(metrics.EventedPLEGConnErr),
			Help: "[ALPHA] The number of errors encountered during the establishment of streaming connection with the CRI runtime.",
		}),
		conn: prometheus.NewCounter(prometheus.CounterOpts{
			Name: reg.Name(metrics.EventedPLEGConn),
			Help: "[ALPHA] The number of times a streaming client was obtained to receive CRI Events.",
		}),
		connLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    reg.Name(metrics.EventedPLEGConnLatency),
			Help:    "[ALPHA] The latency of streaming connection with the CRI runtime, measured in seconds.",
			Buckets: prometheus.DefBuckets,
		}),
		active: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: reg.Name(metrics.PLEGActive),
			Help: "Which PLEG is in charge of pod lifecycle events: 1 for the active type, 0 for the other (simulator only).",
		}, []string{"type"}),
	}
	reg.MustRegister(m.relistDuration, m.relistInterval, m.discardEvents, m.lastSeen,
		m.conn, m.connErr, m.connLatency, m.active)
	if podRelistMetric {
		reg.MustRegister(m.podRelist)
	} else {
		m.podRelist = nil
	}
	m.active.WithLabelValues(TypeGeneric).Set(1)
	m.active.WithLabelValues(TypeEvented).Set(0)
	m.current = TypeGeneric
	return m
}

// switchTo makes typ the active PLEG and logs the switch at V(0) so an operator can always
// see which PLEG is in charge. It reports whether anything changed.
func (m *plegMetrics) switchTo(logger klog.Logger, typ, reason string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.current == typ {
		return false
	}
	prev := m.current
	m.current = typ
	m.active.WithLabelValues(typ).Set(1)
	m.active.WithLabelValues(prev).Set(0)
	logger.Info("Switched PLEG", "active", typ, "previous", prev, "reason", reason)
	return true
}

func (m *plegMetrics) activeType() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.current
}

// discard counts one discarded event.
func (m *plegMetrics) discard() {
	m.discardEvents.Inc()
	m.discarded.Add(1)
}
