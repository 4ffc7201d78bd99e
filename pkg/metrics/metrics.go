package metrics

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Every metric name the daemon exposes, without the configurable prefix. With the prefix
// "kubelet_" they equal the real kubelet's names, so kubelet dashboards and alerts work as is.
const (
	PLEGRelistDuration        = "pleg_relist_duration_seconds"
	PLEGRelistInterval        = "pleg_relist_interval_seconds"
	PLEGPodRelistDuration     = "pleg_pod_relist_duration_seconds" // the per-pod relist (v1.36 on)
	PLEGDiscardEvents         = "pleg_discard_events"
	PLEGLastSeen              = "pleg_last_seen_seconds"
	PLEGActive                = "pleg_active" // simulator only: 1 for the path in charge of fast exits
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
	// Pods with hostUsers: false started, and their failed starts (UserNamespacesSupport).
	StartedUserNamespacedPods       = "started_user_namespaced_pods_total"
	StartedUserNamespacedPodsErrors = "started_user_namespaced_pods_errors_total"
	StartedContainers               = "started_containers_total"
	ContainersRestarted             = "restarted_containers_total" // simulator only
	PodAdmissionRejections          = "admission_rejections_total" // by reason, as upstream (since v1.32)
	// In-place pod resize, as upstream's (alpha) names.
	ContainerRequestedResizes  = "container_requested_resizes_total"
	PodResizeDuration          = "pod_resize_duration_milliseconds"
	PodPendingResizes          = "pod_pending_resizes"
	PodInfeasibleResizes       = "pod_infeasible_resizes_total"
	PodInProgressResizes       = "pod_in_progress_resizes"
	PodDeferredAcceptedResizes = "pod_deferred_accepted_resizes_total"
	HousekeepingDuration       = "housekeeping_duration_seconds"       // simulator only
	NodeStatusUpdateDuration   = "node_status_update_duration_seconds" // simulator only
	PodStatusSyncDuration      = "pod_status_sync_duration_seconds"
	// Image volumes, as upstream's (alpha) names.
	ImageVolumeRequested      = "image_volume_requested_total"
	ImageVolumeMountedSucceed = "image_volume_mounted_succeed_total"
	ImageVolumeMountedErrors  = "image_volume_mounted_errors_total"
)

// Registry is the daemon's private Prometheus registry plus the name prefix every component
// applies. Safe for concurrent use.
type Registry struct {
	*prometheus.Registry
	prefix string

	mu         sync.Mutex
	collectors []prometheus.Collector // as registered, for Subset
	gen        uint64                 // counts the registrations and removals
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
func (r *Registry) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

// Register registers a collector.
func (r *Registry) Register(c prometheus.Collector) error {
	if err := r.Registry.Register(c); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.collectors = append(r.collectors, c)
	r.gen++
	return nil
}

// Unregister removes a collector.
func (r *Registry) Unregister(c prometheus.Collector) bool {
	if !r.Registry.Unregister(c) {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, rc := range r.collectors {
		if rc == c {
			r.collectors = append(r.collectors[:i], r.collectors[i+1:]...)
			break
		}
	}
	r.gen++
	return true
}

// Generation changes whenever a collector is registered or removed: a Subset made at another
// generation may miss a collector.
func (r *Registry) Generation() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.gen
}

// Subset gathers the metric families keep wants, from the collectors that write one of
// them: a scrape that stores few of the families (the rules' storage) gathers those alone,
// not every family to drop most.
func (r *Registry) Subset(keep func(family string) bool) *Subset {
	r.mu.Lock()
	cs := append([]prometheus.Collector(nil), r.collectors...)
	r.mu.Unlock()
	sub := &Subset{keep: keep, names: map[*prometheus.Desc]string{}, wanted: map[*prometheus.Desc]bool{}}
	for _, c := range cs {
		descs := make(chan *prometheus.Desc, 16)
		go func() { c.Describe(descs); close(descs) }()
		wanted := false
		for d := range descs {
			name := familyName(d)
			w := name == "" || keep(name) // a name not read: keep it
			sub.wanted[d] = w
			wanted = wanted || w
		}
		if wanted {
			sub.collectors = append(sub.collectors, c)
		}
	}
	return sub
}

// FamilyCollector is a Collector that can write only some of its families (those whose
// descriptor keep wants): a Subset asks it for the ones it gathers.
type FamilyCollector interface {
	CollectFamilies(ch chan<- prometheus.Metric, keep func(*prometheus.Desc) bool)
}

// Subset is some of a registry's collectors (Registry.Subset). Not safe for concurrent use.
type Subset struct {
	collectors []prometheus.Collector
	keep       func(family string) bool
	names      map[*prometheus.Desc]string // family names by descriptor, as parsed
	// wanted are the collectors' descriptors, as described, and whether keep wants them;
	// only read once made (a FamilyCollector asks it from its own goroutine).
	wanted map[*prometheus.Desc]bool
}

// Gather is prometheus.Registry's Gather without what a registry does for a scrape of all
// its families that a few small ones do not need (two 1,000-metric channels per gather,
// the consistency checks, which the registry these collectors are registered in made):
// a family per name, in name order, its metrics in label order, with its HELP left out.
func (s *Subset) Gather() ([]*dto.MetricFamily, error) { return Subsets{s}.Gather() }

// Subsets are gathered together, as the registries of one target: a family several write is
// one family.
type Subsets []*Subset

// Gather gathers the subsets as Subset.Gather does one.
func (ss Subsets) Gather() ([]*dto.MetricFamily, error) {
	byName := map[string]*dto.MetricFamily{}
	for _, s := range ss {
		if err := s.gatherInto(byName); err != nil {
			return nil, err
		}
	}
	out := make([]*dto.MetricFamily, 0, len(byName))
	for _, mf := range byName {
		sort.Slice(mf.Metric, func(i, j int) bool { return labelsLess(mf.Metric[i].Label, mf.Metric[j].Label) })
		out = append(out, mf)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GetName() < out[j].GetName() })
	return out, nil
}

func (s *Subset) gatherInto(byName map[string]*dto.MetricFamily) error {
	ch := make(chan prometheus.Metric, 64)
	for _, c := range s.collectors {
		if fc, ok := c.(FamilyCollector); ok {
			go func() { fc.CollectFamilies(ch, func(d *prometheus.Desc) bool { return s.wanted[d] }); ch <- nil }()
		} else {
			go func() { c.Collect(ch); ch <- nil }()
		}
		var err error
		for m := range ch {
			if m == nil {
				break
			}
			if err != nil {
				continue // drain what the collector still sends
			}
			name, ok := s.names[m.Desc()]
			if !ok {
				name = familyName(m.Desc())
				s.names[m.Desc()] = name
			}
			if name != "" && !s.keep(name) {
				continue // a family of a collector that writes several, not one keep wants
			}
			pb := &dto.Metric{}
			if err = m.Write(pb); err != nil {
				err = fmt.Errorf("gather %s: %w", name, err)
				continue
			}
			mf := byName[name]
			if mf == nil {
				mf = &dto.MetricFamily{Name: &name, Type: typeOf(pb).Enum()}
				byName[name] = mf
			}
			mf.Metric = append(mf.Metric, pb)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// typeOf is the type of the family a written metric belongs to.
func typeOf(m *dto.Metric) dto.MetricType {
	switch {
	case m.Counter != nil:
		return dto.MetricType_COUNTER
	case m.Gauge != nil:
		return dto.MetricType_GAUGE
	case m.Histogram != nil:
		return dto.MetricType_HISTOGRAM
	case m.Summary != nil:
		return dto.MetricType_SUMMARY
	}
	return dto.MetricType_UNTYPED
}

// labelsLess orders two metrics' labels (sorted by name, as Write leaves them) as the
// registry orders a family's metrics.
func labelsLess(a, b []*dto.LabelPair) bool {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i].GetName() != b[i].GetName() {
			return a[i].GetName() < b[i].GetName()
		}
		if a[i].GetValue() != b[i].GetValue() {
			return a[i].GetValue() < b[i].GetValue()
		}
	}
	return len(a) < len(b)
}

// familyName is a descriptor's fully-qualified name, which client_golang shows only in its
// String ("Desc{fqName: \"name\", ..."); "" when it does not parse.
func familyName(d *prometheus.Desc) string {
	s := strings.TrimPrefix(d.String(), "Desc{fqName: ")
	q, err := strconv.QuotedPrefix(s)
	if err != nil {
		return ""
	}
	name, _ := strconv.Unquote(q)
	return name
}

// RegisterNodeName exposes node_name{node} 1, which kubelet dashboards join on.
func (r *Registry) RegisterNodeName(node string) {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: r.Name(NodeName), Help: "The node's name. The count is always 1."}, []string{"node"})
	g.WithLabelValues(node).Set(1)
	r.MustRegister(g)
}
