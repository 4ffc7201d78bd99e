package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Every metric name the daemon exposes, without the configurable prefix. With the prefix
// "kubelet_" they equal the real kubelet's names, so kubelet dashboards and alerts work as is.
const (
	PLEGRelistDuration        = "pleg_relist_duration_seconds"
	PLEGRelistInterval        = "pleg_relist_interval_seconds"
	PLEGDiscardEvents         = "pleg_discard_events"
	PLEGLastSeen              = "pleg_last_seen_seconds"
	PLEGActive                = "pleg_active" // simulator only: 1 for the PLEG in charge
	EventedPLEGConnErr        = "evented_pleg_connection_error_count"
	EventedPLEGConn           = "evented_pleg_connection_success_count"
	EventedPLEGConnLatency    = "evented_pleg_connection_latency_seconds"
	PodWorkerDuration         = "pod_worker_duration_seconds"
	PodStartDuration          = "pod_start_duration_seconds"
	RunningPods               = "running_pods"
	RunningContainers         = "running_containers"
	StaticPodManifestErrors   = "static_pod_manifest_errors_total" // simulator only
	NodeName                  = "node_name"
	NodeStatusReports         = "node_status_reports_total"           // simulator only
	RuntimeOperations         = "runtime_operations_total"            // CRI calls by operation_type
	RuntimeOperationsErrors   = "runtime_operations_errors_total"     // CRI call failures by operation_type
	RuntimeOperationsDuration = "runtime_operations_duration_seconds" // CRI call durations by operation_type
	RuntimeFaultsFired        = "runtime_injected_faults_total"       // simulator only, by method and type
	FeatureEnabled            = "kubernetes_feature_enabled"          // never prefixed, as upstream
	SyncLoopIterations        = "sync_loop_iterations_total"          // simulator only
	StartedPods               = "started_pods_total"
	StartedContainers         = "started_containers_total"
	ContainersRestarted       = "restarted_containers_total" // simulator only
	PodAdmissionRejections    = "admission_rejections_total" // simulator only, by reason
	HousekeepingDuration      = "housekeeping_duration_seconds"
	NodeStatusUpdateDuration  = "node_status_update_duration_seconds" // simulator only
	PodStatusSyncDuration     = "pod_status_sync_duration_seconds"
)

// Registry is the daemon's private Prometheus registry plus the name prefix every component
// applies. Safe for concurrent use.
type Registry struct {
	*prometheus.Registry
	prefix string
}

// NewRegistry returns an empty registry whose names get prefix (may be empty).
func NewRegistry(prefix string) *Registry {
	return &Registry{Registry: prometheus.NewRegistry(), prefix: prefix}
}

// Name returns the exposed name of a metric: the prefix plus name.
func (r *Registry) Name(name string) string { return r.prefix + name }

// Prefix is the configured prefix.
func (r *Registry) Prefix() string { return r.prefix }

// MustRegister registers collectors, panicking on a duplicate name (a programming error).
func (r *Registry) MustRegister(cs ...prometheus.Collector) { r.Registry.MustRegister(cs...) }

// RegisterNodeName exposes node_name{node} 1, which kubelet dashboards join on.
func (r *Registry) RegisterNodeName(node string) {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: r.Name(NodeName), Help: "The node's name. The count is always 1."}, []string{"node"})
	g.WithLabelValues(node).Set(1)
	r.MustRegister(g)
}
