package nodestatus

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	goruntime "runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/events"
	evictionapi "github.com/minikubelet/minikubelet/pkg/eviction/api"
	"github.com/minikubelet/minikubelet/pkg/metrics"
	"github.com/minikubelet/minikubelet/pkg/quantity"
	"github.com/minikubelet/minikubelet/pkg/runner"
	"github.com/minikubelet/minikubelet/pkg/runtimestate"
)

// Defaults of Config (the kubelet's).
const (
	DefaultNodeStatusUpdateFrequency = 10 * time.Second
	DefaultNodeStatusReportFrequency = 5 * time.Minute
	DefaultNodeLeaseDurationSeconds  = 40
	DefaultMaxPods                   = 110
	DefaultNodeStatusMaxImages       = 50
	DefaultKubeletPort               = 10255
	// ImageCachePeriod is how often the image list is refreshed from the runtime (the
	// upstream image manager's cache period).
	ImageCachePeriod = 30 * time.Second
	// LeaseNamespace holds node leases.
	LeaseNamespace = "kube-node-lease"
	// nodeLeaseRenewIntervalFraction: the lease is renewed every duration x 0.25.
	nodeLeaseRenewIntervalFraction = 0.25
)

// RuntimeHealth is where the Ready condition's errors come from (runtimestate.State).
type RuntimeHealth interface {
	RuntimeErrors() error
	NetworkErrors() error
	StorageErrors() error
}

var _ RuntimeHealth = (*runtimestate.State)(nil)

// ImageLister lists the runtime's images (cri.ImageService).
type ImageLister interface {
	ListImages(ctx context.Context) ([]cri.Image, error)
}

var _ ImageLister = cri.ImageService(nil)

// Config configures a Manager.
type Config struct {
	// NodeName is the node object's name. Required.
	NodeName string
	// Hostname is the Hostname address and kubernetes.io/hostname label. Default NodeName.
	Hostname string
	// NodeIP is the InternalIP address. Default (also for an unspecified address such as
	// 0.0.0.0) 127.0.0.1.
	NodeIP string
	// Labels are added to the well-known hostname/os/arch labels.
	Labels map[string]string
	// Taints are the taints the node is registered with (registerWithTaints).
	Taints []v1.Taint

	Machine Machine
	// MaxPods is the pods capacity. Default 110.
	MaxPods int
	// PodsPerCore, when > 0, caps the pods capacity at cores x PodsPerCore.
	PodsPerCore int
	// SystemReserved and KubeReserved are taken out of allocatable.
	SystemReserved v1.ResourceList
	KubeReserved   v1.ResourceList
	// EvictionHard: nil means DefaultEvictionHard; see ParseEvictionHard.
	EvictionHard map[string]string
	// PressureTransitionPeriod: nil means DefaultPressureTransitionPeriod; 0 clears a
	// pressure condition as soon as its threshold is no longer crossed.
	PressureTransitionPeriod *time.Duration
	// Pressure, when set, answers the pressure conditions instead of the manager's own
	// evaluation of EvictionHard: the kubelet's eviction manager (soft thresholds, minimum
	// reclaim), as upstream's setters read it.
	Pressure func(v1.NodeConditionType) bool

	Versions Versions
	// DeclaredFeatures are the node's status.declaredFeatures (NodeDeclaredFeatures), set
	// after every other setter as upstream's setNodeStatus does. Nil: none.
	DeclaredFeatures []string
	// OperatingSystem and Architecture default to the Go runtime's.
	OperatingSystem string
	Architecture    string
	// KubeletPort is the daemon endpoint port. Default 10255; see SetKubeletPort.
	KubeletPort int32
	// NodeStatusMaxImages: 0 means 50; -1 means no limit.
	NodeStatusMaxImages int32

	// NodeStatusUpdateFrequency is the status loop period. Default 10s.
	NodeStatusUpdateFrequency time.Duration
	// NodeStatusReportFrequency is the longest an unchanged status goes unreported.
	// Default 5m (the config loader sets it to NodeStatusUpdateFrequency when only that
	// was configured).
	NodeStatusReportFrequency time.Duration
	// NodeLeaseDurationSeconds is the lease duration; it is renewed every quarter of it.
	// Default 40.
	NodeLeaseDurationSeconds int32
	// Seed, with the node's name, seeds the random delay added to the report period after a
	// change (simulatorConfiguration.runtime.seed), so that runs repeat and the nodes of one
	// process, registered together, still report at different moments.
	Seed int64

	// Clock is required.
	Clock clock.PassiveClock
	// Health is required (runtimestate.State).
	Health RuntimeHealth
	// Images is required (the runtime's image service).
	Images ImageLister
	// Usage supplies simulated usage; nil means none.
	Usage UsageProvider
	// ShutdownErrors is an extra Ready error source (graceful node shutdown); may be nil.
	ShutdownErrors func() error
	// RuntimeFeatures are the runtime's features as last reported (runtimestate.State's
	// Features), for status.features; nil: none.
	RuntimeFeatures func() *cri.RuntimeFeatures
	// RuntimeHandlers are the runtime's handlers as last reported (runtimestate.State's
	// Handlers), for status.runtimeHandlers; nil: none.
	RuntimeHandlers func() []cri.RuntimeHandler
	// Recorder receives the node events; nil drops them.
	Recorder events.Recorder
	// Registry receives node_status_reports_total and node_status_update_duration_seconds;
	// nil uses a private unexposed registry.
	Registry *metrics.Registry
	// API is the API server of the cluster the node joined (cluster mode): the node is
	// registered there, each report is patched to nodes/status and each lease renewal
	// written. Nil: standalone, the node and lease live here only.
	API NodeAPI
}

// NodeAPI is what the node status manager asks of an API server (pkg/cluster.NodeAPI).
// Calls may wait (as tasks) for the network.
type NodeAPI interface {
	RegisterNode(ctx context.Context, node *v1.Node) (*v1.Node, error)
	PatchNodeStatus(ctx context.Context, old, node *v1.Node) (*v1.Node, error)
	// GetNode reads the node, from the API server's cache if fromCache, else from etcd; a
	// missing node is a NotFound error. The node may be shared (a watch's): read only.
	GetNode(ctx context.Context, name string, fromCache bool) (*v1.Node, error)
	UpdateLease(ctx context.Context, lease *coordinationv1.Lease) error
}

// Manager owns the node object and its lease. GetNode, GetLease and the pressure getters
// are safe for concurrent use; each step must be called by one goroutine at a time (its
// runner, or the simulate scheduler).
type Manager struct {
	cfg        Config
	clock      clock.PassiveClock
	loops      Loops
	nodeRef    *v1.ObjectReference
	setters    []Setter
	thresholds []evictionapi.Threshold
	leaseRenew time.Duration

	// The node's owner is the one caller of everything but GetNode, GetLease and Conditions,
	// so the manager keeps no lock: those three read the node and lease last published,
	// which are never changed once stored (a report or a renewal stores a new object).
	kubeletPort int32

	pressure *pressureTracker
	// allocMemory is the allocatable memory, fixed by the configuration: computed once.
	allocOnce   sync.Once
	allocMemory int64

	node atomic.Pointer[v1.Node] // last reported; nil before registration
	// registered: the API server has the Node (RegisterNode succeeded), though its first
	// status patch may not have got through yet. Then the next try patches, it does not
	// register again (upstream's registrationCompleted).
	registered bool
	lease      atomic.Pointer[coordinationv1.Lease]
	lastReport time.Time
	// reportDelay is added to NodeStatusReportFrequency until the next report (upstream's
	// delayAfterNodeStatusChange): drawn from [-50%, +50%) of it at a report of a change or
	// the first one, 0 after a report made because the period elapsed. Nodes started or
	// changed together (a thousand registered in a few seconds) so spread their 5-minute
	// reports instead of patching the API server at the same moment forever (kubelet v1.33,
	// kubernetes#130919).
	reportDelay  time.Duration
	rand         *rand.Rand
	images       []cri.Image
	underPress   map[v1.NodeConditionType]bool
	nodeVersion  int64
	leaseVersion int64

	reports  prometheus.Counter
	duration prometheus.Histogram
}

// New validates cfg, fills defaults and returns a Manager that has not registered the
// node yet (the first UpdateNodeStatus does).
func New(cfg Config) (*Manager, error) {
	if cfg.NodeName == "" {
		return nil, errors.New("nodestatus: Config.NodeName is required")
	}
	if cfg.Clock == nil {
		return nil, errors.New("nodestatus: Config.Clock is required")
	}
	if cfg.Health == nil {
		return nil, errors.New("nodestatus: Config.Health is required")
	}
	if cfg.Images == nil {
		return nil, errors.New("nodestatus: Config.Images is required")
	}
	if cfg.Hostname == "" {
		cfg.Hostname = cfg.NodeName
	}
	if cfg.NodeIP == "" {
		cfg.NodeIP = "127.0.0.1"
	}
	ip := net.ParseIP(cfg.NodeIP)
	if ip == nil {
		return nil, fmt.Errorf("nodestatus: node IP %q is not an IP address", cfg.NodeIP)
	}
	if ip.IsUnspecified() {
		cfg.NodeIP = "127.0.0.1"
	}
	if err := cfg.Machine.fillDefaults(cfg.NodeName); err != nil {
		return nil, fmt.Errorf("nodestatus: %w", err)
	}
	if cfg.MaxPods < 0 {
		return nil, fmt.Errorf("nodestatus: maxPods must not be negative, got %d", cfg.MaxPods)
	}
	if cfg.MaxPods == 0 {
		cfg.MaxPods = DefaultMaxPods
	}
	if cfg.PodsPerCore < 0 {
		return nil, fmt.Errorf("nodestatus: podsPerCore must not be negative, got %d", cfg.PodsPerCore)
	}
	thresholds, err := evictionapi.ParseEvictionHard(cfg.EvictionHard)
	if err != nil {
		return nil, fmt.Errorf("nodestatus: %w", err)
	}
	transition := evictionapi.DefaultPressureTransitionPeriod
	if cfg.PressureTransitionPeriod != nil {
		if *cfg.PressureTransitionPeriod < 0 {
			return nil, fmt.Errorf("nodestatus: evictionPressureTransitionPeriod must not be negative, got %v", *cfg.PressureTransitionPeriod)
		}
		transition = *cfg.PressureTransitionPeriod
	}
	cfg.Versions.fillDefaults()
	if cfg.OperatingSystem == "" {
		cfg.OperatingSystem = goruntime.GOOS
	}
	if cfg.Architecture == "" {
		cfg.Architecture = goruntime.GOARCH
	}
	if cfg.KubeletPort < 0 || cfg.KubeletPort > 65535 {
		return nil, fmt.Errorf("nodestatus: kubelet port must be within [0,65535], got %d", cfg.KubeletPort)
	}
	if cfg.KubeletPort == 0 {
		cfg.KubeletPort = DefaultKubeletPort
	}
	if cfg.NodeStatusMaxImages < -1 {
		return nil, fmt.Errorf("nodestatus: nodeStatusMaxImages must be -1 or more, got %d", cfg.NodeStatusMaxImages)
	}
	if cfg.NodeStatusMaxImages == 0 {
		cfg.NodeStatusMaxImages = DefaultNodeStatusMaxImages
	}
	for name, d := range map[string]time.Duration{"nodeStatusUpdateFrequency": cfg.NodeStatusUpdateFrequency, "nodeStatusReportFrequency": cfg.NodeStatusReportFrequency} {
		if d < 0 {
			return nil, fmt.Errorf("nodestatus: %s must not be negative, got %v", name, d)
		}
	}
	if cfg.NodeStatusUpdateFrequency == 0 {
		cfg.NodeStatusUpdateFrequency = DefaultNodeStatusUpdateFrequency
	}
	if cfg.NodeStatusReportFrequency == 0 {
		cfg.NodeStatusReportFrequency = DefaultNodeStatusReportFrequency
	}
	if cfg.NodeLeaseDurationSeconds < 0 {
		return nil, fmt.Errorf("nodestatus: nodeLeaseDurationSeconds must not be negative, got %d", cfg.NodeLeaseDurationSeconds)
	}
	if cfg.NodeLeaseDurationSeconds == 0 {
		cfg.NodeLeaseDurationSeconds = DefaultNodeLeaseDurationSeconds
	}
	if cfg.Registry == nil {
		cfg.Registry = metrics.NewRegistry("")
	}

	m := &Manager{
		cfg:         cfg,
		clock:       cfg.Clock,
		nodeRef:     events.NodeRef(cfg.NodeName),
		thresholds:  thresholds,
		leaseRenew:  time.Duration(float64(time.Duration(cfg.NodeLeaseDurationSeconds)*time.Second) * nodeLeaseRenewIntervalFraction),
		kubeletPort: cfg.KubeletPort,
		pressure:    newPressureTracker(thresholds, transition),
		underPress:  map[v1.NodeConditionType]bool{},
		rand:        rand.New(rand.NewPCG(uint64(cfg.Seed), binary.LittleEndian.Uint64(digest("report-delay", cfg.NodeName)))),
		reports: prometheus.NewCounter(prometheus.CounterOpts{
			Name: cfg.Registry.Name(metrics.NodeStatusReports),
			Help: "Number of times the node status was reported (changed, or the report period elapsed).",
		}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    cfg.Registry.Name(metrics.NodeStatusUpdateDuration),
			Help:    "Duration in seconds of one node status update (running the setters and reporting).",
			Buckets: prometheus.DefBuckets,
		}),
	}
	cfg.Registry.MustRegister(m.reports, m.duration)
	m.setters = m.defaultSetters()
	m.loops = m.newLoops()
	return m, nil
}

// Allocatable is the node's allocatable resources as the MachineInfo setter computes them
// (capacity minus systemReserved, kubeReserved and the hard eviction thresholds): what pod
// admission checks requests against (upstream: the kubelet's getNodeAnyWay().Status.Allocatable).
func (m *Manager) Allocatable() v1.ResourceList {
	c := &m.cfg
	node := &v1.Node{}
	_ = MachineInfo(c.MaxPods, c.PodsPerCore, c.Machine, func(capacity v1.ResourceList) v1.ResourceList {
		return NodeAllocatableReservation(capacity, c.SystemReserved, c.KubeReserved, m.thresholds)
	})(context.Background(), node) // MachineInfo never fails
	return node.Status.Allocatable
}

// defaultSetters is the chain in the upstream order.
func (m *Manager) defaultSetters() []Setter {
	c := &m.cfg
	now := m.clock.Now
	return []Setter{
		NodeAddress(c.NodeIP, c.Hostname),
		MachineInfo(c.MaxPods, c.PodsPerCore, c.Machine, func(capacity v1.ResourceList) v1.ResourceList {
			return NodeAllocatableReservation(capacity, c.SystemReserved, c.KubeReserved, m.thresholds)
		}),
		VersionInfo(c.Versions),
		DaemonEndpoints(m.getKubeletPort),
		Images(c.NodeStatusMaxImages, m.cachedImages),
		GoRuntime(c.OperatingSystem, c.Architecture),
		RuntimeHandlers(c.RuntimeHandlers),
		NodeFeatures(c.RuntimeFeatures),
		MemoryPressureCondition(now, m.pressureFunc(v1.NodeMemoryPressure), m.recordNodeStatusEvent),
		DiskPressureCondition(now, m.pressureFunc(v1.NodeDiskPressure), m.recordNodeStatusEvent),
		PIDPressureCondition(now, m.pressureFunc(v1.NodePIDPressure), m.recordNodeStatusEvent),
		ReadyCondition(now, c.Health.RuntimeErrors, c.Health.NetworkErrors, c.Health.StorageErrors, c.ShutdownErrors, m.recordNodeStatusEvent),
		VolumesInUse(),
		DeclaredFeatures(c.DeclaredFeatures),
	}
}

// recordNodeStatusEvent records "Node <name> status is now: <reason>" (upstream message).
func (m *Manager) recordNodeStatusEvent(eventType, reason string) {
	if m.cfg.Recorder == nil {
		return
	}
	m.cfg.Recorder.Eventf(m.nodeRef, eventType, reason, "Node %s status is now: %s", m.cfg.NodeName, reason)
}

func (m *Manager) pressureFunc(cond v1.NodeConditionType) func() bool {
	return func() bool {
		return m.underPress[cond]
	}
}

// IsUnderMemoryPressure reports the memory pressure found by the last status update
// (admission uses it upstream).
func (m *Manager) IsUnderMemoryPressure() bool { return m.pressureFunc(v1.NodeMemoryPressure)() }

// IsUnderDiskPressure reports the disk pressure found by the last status update.
func (m *Manager) IsUnderDiskPressure() bool { return m.pressureFunc(v1.NodeDiskPressure)() }

// IsUnderPIDPressure reports the PID pressure found by the last status update.
func (m *Manager) IsUnderPIDPressure() bool { return m.pressureFunc(v1.NodePIDPressure)() }

// SetKubeletPort changes the daemon endpoint port reported from the next update on (for a
// listener bound to port 0).
func (m *Manager) SetKubeletPort(port int32) {
	m.kubeletPort = port
}

func (m *Manager) getKubeletPort() int32 {
	return m.kubeletPort
}

func (m *Manager) cachedImages() ([]cri.Image, error) {
	return m.images, nil
}

// RefreshImages is one refresh of the image cache from the runtime (the upstream image
// manager refreshes every 30s, so a slow or hung ListImages never stalls the status
// loop). On error the previous list is kept and the error returned.
func (m *Manager) RefreshImages(ctx context.Context) error {
	images, err := m.cfg.Images.ListImages(ctx)
	if err != nil {
		return fmt.Errorf("failed to update image list: %w", err)
	}
	images = append([]cri.Image(nil), images...)
	SortImagesBySize(images)
	m.images = images
	return nil
}

// observe gathers the simulated usage into signal observations.
// Observe returns the signals' available amounts and capacities now: memory.available,
// nodefs/imagefs/containerfs.available (one simulated filesystem) and pid.available.
func (m *Manager) Observe() map[evictionapi.Signal]evictionapi.Observation { return m.observe() }

func (m *Manager) observe() map[evictionapi.Signal]observation {
	obs := map[evictionapi.Signal]observation{}
	if m.cfg.Usage == nil {
		return obs
	}
	u := m.cfg.Usage.Usage()
	memCap := m.cfg.Machine.Memory.Value()
	obs[evictionapi.SignalMemoryAvailable] = observation{Available: memCap - u.MemoryBytes, Capacity: memCap}
	if u.HasPodMemory {
		// The pods' memory against the node's allocatable memory (upstream's pod cgroup).
		m.allocOnce.Do(func() { q := m.Allocatable()[v1.ResourceMemory]; m.allocMemory = q.Value() })
		obs[evictionapi.SignalAllocatableMemoryAvailable] = observation{Available: m.allocMemory - u.PodMemoryBytes, Capacity: m.allocMemory}
	}
	diskCap := u.DiskCapacity
	if diskCap <= 0 {
		diskCap = m.cfg.Machine.EphemeralStorage.Value()
	}
	fs := observation{Available: diskCap - u.DiskBytes, Capacity: diskCap}
	obs[evictionapi.SignalNodeFsAvailable] = fs
	obs[evictionapi.SignalImageFsAvailable] = fs
	obs[evictionapi.SignalContainerFsAvailable] = fs
	obs[evictionapi.SignalPIDAvailable] = observation{Available: m.cfg.Machine.MaxPIDs - u.PIDs, Capacity: m.cfg.Machine.MaxPIDs}
	return obs
}

// NodeStatusUpdateRetry is how many times a status update is tried in one period, and
// MaxLeaseUpdateRetries how many times a lease renewal is (upstream nodeStatusUpdateRetry
// and the lease controller's maxUpdateRetries): a busy API server that drops one call does
// not cost the node a whole period (10 s) of its 40 s grace.
const (
	NodeStatusUpdateRetry = 5
	MaxLeaseUpdateRetries = 5
)

// UpdateNodeStatus is one iteration of the status loop (upstream syncNodeStatus ->
// updateNodeStatus): it evaluates the pressure thresholds, then tries the update up to
// NodeStatusUpdateRetry times while the API server fails it. A setter error does not stop
// the chain; the errors are returned together after the report decision.
func (m *Manager) UpdateNodeStatus(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	start := m.clock.Now()
	defer func() { m.duration.Observe(m.clock.Since(start).Seconds()) }()

	m.pressure.synchronize(start, m.observe())
	for cond, on := range m.pressure.active {
		if m.cfg.Pressure != nil {
			on = m.cfg.Pressure(cond)
		}
		m.underPress[cond] = on
	}
	for try := 0; ; try++ {
		apiErr, errs := m.tryUpdateNodeStatus(ctx, try)
		if apiErr == nil || ctx.Err() != nil {
			return errs
		}
		logger.Error(apiErr, "Error updating node status, will retry")
		if try+1 == NodeStatusUpdateRetry {
			logger.Error(errors.New("update node status exceeds retry count"), "Unable to update node status", "node", m.cfg.NodeName)
			return errs
		}
	}
}

// tryUpdateNodeStatus is one try (upstream tryUpdateNodeStatus): it runs every setter on a
// copy of the node as the API server has it (the last reported one standalone; registering
// the node on the first call) and reports the copy when the status changed, ignoring
// heartbeat times, or when NodeStatusReportFrequency has elapsed since the last report. It
// returns the API server's error, which another try may not meet, and the setters' errors.
func (m *Manager) tryUpdateNodeStatus(ctx context.Context, try int) (apiErr, setterErrs error) {
	logger := klog.FromContext(ctx)
	now := m.clock.Now()
	original, lastReport := m.node.Load(), m.lastReport

	if m.registered { // only an API server registers: standalone, the last report is the node
		// As the kubelet, the setters start from the node as the API server has it, not as
		// last reported: what someone else wrote there (the node lifecycle controller's
		// Ready=Unknown after missed heartbeats) counts as a change and is put right at this
		// update, not at the next report (5 min). The first try reads the API server's
		// cache, the others etcd. A deleted node is registered again.
		apiNode, err := m.cfg.API.GetNode(ctx, m.cfg.NodeName, try == 0)
		switch {
		case apierrors.IsNotFound(err):
			m.forgetRegistration(ctx)
			original = nil
		case err != nil:
			return fmt.Errorf("error getting node %q: %w", m.cfg.NodeName, err), nil
		default:
			original = apiNode
		}
	}
	register := original == nil
	if register {
		original = m.initialNode(now)
	}
	node := copyNode(original)
	var errs []error
	for i, set := range m.setters {
		logger.V(5).Info("Setting node status condition code", "position", i, "node", klog.KObj(node))
		if err := set(ctx, node); err != nil {
			errs = append(errs, err)
		}
	}

	changed := register || nodeStatusHasChanged(&original.Status, &node.Status)
	if !changed && !lastReport.IsZero() && m.clock.Since(lastReport) < m.cfg.NodeStatusReportFrequency+m.reportDelay {
		return nil, utilerrors.NewAggregate(errs)
	}
	// As upstream, the delay is drawn before the patch, whether or not it gets through.
	if changed || lastReport.IsZero() {
		m.reportDelay = time.Duration(float64(m.cfg.NodeStatusReportFrequency) * (m.rand.Float64() - 0.5))
	} else {
		m.reportDelay = 0
	}
	if m.cfg.API != nil {
		if err := m.reportToAPI(ctx, register, original, node); err != nil {
			// Not reported: the next try starts again from the API server's node.
			return err, utilerrors.NewAggregate(errs)
		}
	}

	m.nodeVersion++
	node.ResourceVersion = strconv.FormatInt(m.nodeVersion, 10)
	m.node.Store(node)
	m.lastReport = now
	m.reports.Inc()
	if register {
		logger.Info("Successfully registered node", "node", klog.KObj(node))
	}
	logger.V(2).Info("Reported node status", "node", klog.KObj(node), "changed", changed, "ready", readyStatus(node), "crossedThresholds", m.pressure.crossed)
	return nil, utilerrors.NewAggregate(errs)
}

// reportToAPI registers the node (the first time) and patches its status to the API
// server; it returns the API server's error. A registration refused is logged here, as
// upstream's registerWithAPIServer logs it.
func (m *Manager) reportToAPI(ctx context.Context, register bool, original, node *v1.Node) error {
	logger := klog.FromContext(ctx)
	if register {
		logger.Info("Attempting to register node", "node", klog.KObj(node))
		registered, err := m.cfg.API.RegisterNode(ctx, node)
		if err != nil {
			if ctx.Err() == nil {
				logger.Error(err, "Unable to register node with API server", "node", klog.KObj(node))
			}
			return fmt.Errorf("register node %q: %w", m.cfg.NodeName, err)
		}
		m.registered = true
		// The API server's identity of the node is the one that counts (owner references).
		node.UID, node.CreationTimestamp = registered.UID, registered.CreationTimestamp
		original = registered
	}
	if _, err := m.cfg.API.PatchNodeStatus(ctx, original, node); err != nil {
		if apierrors.IsNotFound(err) {
			m.forgetRegistration(ctx)
		}
		return err
	}
	return nil
}

// forgetRegistration makes the next update register the node again: someone deleted it from
// the API server. The kubelet registers once and then fails every update until it is
// restarted; the simulator registers again, with a lease owned by the new Node
// (docs/differences.md).
func (m *Manager) forgetRegistration(ctx context.Context) {
	klog.FromContext(ctx).Info("Node not found in the API server, registering it again", "node", m.cfg.NodeName)
	m.node.Store(nil)
	m.registered = false
	if lease := m.lease.Load(); lease != nil {
		lease = lease.DeepCopy() // a published lease is never changed: the edges read it
		lease.OwnerReferences = nil
		m.lease.Store(lease)
	}
}

func readyStatus(node *v1.Node) v1.ConditionStatus {
	for _, c := range node.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c.Status
		}
	}
	return v1.ConditionUnknown
}

// initialNode is the node as first registered (upstream initialNode): name, the
// well-known labels and a stable UID derived from the node name.
func (m *Manager) initialNode(now time.Time) *v1.Node {
	return &v1.Node{
		TypeMeta: metav1.TypeMeta{Kind: "Node", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{
			Name:              m.cfg.NodeName,
			UID:               types.UID(uuidFrom(digest("node-uid", m.cfg.NodeName))),
			Labels:            m.NodeLabels(),
			CreationTimestamp: metav1.NewTime(now),
		},
		Spec: v1.NodeSpec{Taints: append([]v1.Taint(nil), m.cfg.Taints...)},
	}
}

// NodeLabels are the labels the node is registered with: the kubelet's well-known ones and
// the configured ones (admission matches node selectors and affinity against them).
func (m *Manager) NodeLabels() map[string]string {
	labels := map[string]string{
		v1.LabelHostname:          m.cfg.Hostname,
		v1.LabelOSStable:          m.cfg.OperatingSystem,
		v1.LabelArchStable:        m.cfg.Architecture,
		"beta.kubernetes.io/os":   m.cfg.OperatingSystem,
		"beta.kubernetes.io/arch": m.cfg.Architecture,
	}
	for k, v := range m.cfg.Labels {
		labels[k] = v
	}
	return labels
}

// copyNode is the copy of the node the setters work on: a deep copy but for the images,
// which it shares with original. Nothing edits a node's images in place (the Images
// setter replaces the list when it changed), and a node of 50 images was half of what a
// status update allocated, 100 times a second at 1,000 nodes (docs/scale.md).
func copyNode(original *v1.Node) *v1.Node {
	shallow := *original
	shallow.Status.Images = nil
	node := shallow.DeepCopy()
	node.Status.Images = original.Status.Images
	return node
}

// nodeStatusHasChanged compares two statuses ignoring the conditions' heartbeat times and
// their order (upstream nodeStatusHasChanged, which compares deep copies with
// apiequality.Semantic). The conditions, the resource lists and the images, most of a
// status, are compared here as Semantic compares them, without its reflection (a
// reflective call per quantity and time: it was the biggest allocation of a node's steady
// state); the rest of the status, with Semantic still, so that a field a later API adds
// counts too.
func nodeStatusHasChanged(original, status *v1.NodeStatus) bool {
	if nodeConditionsHaveChanged(original.Conditions, status.Conditions) ||
		!quantity.ListsEqual(original.Capacity, status.Capacity) ||
		!quantity.ListsEqual(original.Allocatable, status.Allocatable) ||
		!imagesEqual(original.Images, status.Images) {
		return true
	}
	// Shallow copies, where upstream deep-copies both: only the copies' own fields are
	// changed.
	a, b := *original, *status
	a.Conditions, b.Conditions = nil, nil
	a.Capacity, b.Capacity = nil, nil
	a.Allocatable, b.Allocatable = nil, nil
	a.Images, b.Images = nil, nil
	return !apiequality.Semantic.DeepEqual(&a, &b)
}

// imagesEqual is Semantic's equality of two image lists.
func imagesEqual(a, b []v1.ContainerImage) bool {
	if len(a) != len(b) {
		return false
	}
	if len(a) == 0 || &a[0] == &b[0] {
		return true // shared: copyNode's, the Images setter found nothing changed
	}
	for i := range a {
		if a[i].SizeBytes != b[i].SizeBytes || !slices.Equal(a[i].Names, b[i].Names) {
			return false
		}
	}
	return true
}

// nodeConditionsHaveChanged compares the conditions in type order, ignoring their
// heartbeat times, as upstream (which sorts copies of both lists stably by type and
// compares them with Semantic, heartbeats zeroed); it orders indices instead.
func nodeConditionsHaveChanged(original, conditions []v1.NodeCondition) bool {
	if len(original) != len(conditions) {
		return true
	}
	var bufA, bufB [16]int
	ia, ib := byType(original, bufA[:0]), byType(conditions, bufB[:0])
	for k := range ia {
		a, b := &original[ia[k]], &conditions[ib[k]]
		if a.Type != b.Type || a.Status != b.Status || a.Reason != b.Reason || a.Message != b.Message ||
			!a.LastTransitionTime.Equal(&b.LastTransitionTime) {
			return true
		}
	}
	return false
}

// byType returns the conditions' indices, appended to buf, in the stable order of their
// types.
func byType(conditions []v1.NodeCondition, buf []int) []int {
	for i := range conditions {
		buf = append(buf, i)
		// insertion sort: stable, and a node has half a dozen conditions
		for j := len(buf) - 1; j > 0 && conditions[buf[j]].Type < conditions[buf[j-1]].Type; j-- {
			buf[j], buf[j-1] = buf[j-1], buf[j]
		}
	}
	return buf
}

// RenewLease is one renewal of the node lease (upstream lease controller sync): it
// creates the Lease on the first call, sets renewTime to now, and points its owner
// reference at the node once the node is registered. A renewal the API server fails is
// tried again at once, with a new renewTime, up to MaxLeaseUpdateRetries times.
func (m *Manager) RenewLease(ctx context.Context) {
	lease := m.renewLease(ctx)
	if m.cfg.API == nil {
		return
	}
	logger := klog.FromContext(ctx)
	for try := 1; ; try++ {
		err := m.cfg.API.UpdateLease(ctx, lease)
		if err == nil || ctx.Err() != nil {
			return
		}
		logger.Error(err, "Failed to update lease")
		if try == MaxLeaseUpdateRetries {
			logger.Error(fmt.Errorf("failed %d attempts to update lease", MaxLeaseUpdateRetries), "Will retry updating lease", "interval", m.leaseRenew)
			return
		}
		lease = m.renewLease(ctx)
	}
}

// renewLease renews the local lease and returns a copy of it.
func (m *Manager) renewLease(ctx context.Context) *coordinationv1.Lease {
	now := m.clock.Now()
	var lease *coordinationv1.Lease
	if m.lease.Load() == nil {
		holder := m.cfg.NodeName
		duration := m.cfg.NodeLeaseDurationSeconds
		lease = &coordinationv1.Lease{
			TypeMeta: metav1.TypeMeta{Kind: "Lease", APIVersion: "coordination.k8s.io/v1"},
			ObjectMeta: metav1.ObjectMeta{
				Name:              m.cfg.NodeName,
				Namespace:         LeaseNamespace,
				UID:               types.UID(uuidFrom(digest("lease-uid", m.cfg.NodeName))),
				CreationTimestamp: metav1.NewTime(now),
			},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &duration},
		}
		klog.FromContext(ctx).V(2).Info("Created node lease", "lease", klog.KObj(lease))
	} else {
		lease = m.lease.Load().DeepCopy()
	}
	lease.Spec.RenewTime = &metav1.MicroTime{Time: now}
	if node := m.node.Load(); len(lease.OwnerReferences) == 0 && node != nil {
		lease.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}}
	}
	m.leaseVersion++
	lease.ResourceVersion = strconv.FormatInt(m.leaseVersion, 10)
	m.lease.Store(lease)
	klog.FromContext(ctx).V(5).Info("Renewed node lease", "lease", klog.KObj(lease))
	return lease.DeepCopy()
}

// GetNode returns a copy of the last reported node, or nil before registration.
func (m *Manager) GetNode() *v1.Node {
	return m.node.Load().DeepCopy() // nil stays nil
}

// Conditions returns a copy of the node's conditions (nil before the first status update):
// cheaper than GetNode for a caller that looks often.
func (m *Manager) Conditions() []v1.NodeCondition {
	node := m.node.Load()
	if node == nil {
		return nil
	}
	out := make([]v1.NodeCondition, len(node.Status.Conditions))
	copy(out, node.Status.Conditions)
	return out
}

// GetLease returns a copy of the node lease, or nil before the first renewal.
func (m *Manager) GetLease() *coordinationv1.Lease {
	return m.lease.Load().DeepCopy() // nil stays nil
}

// NodeStatusUpdateFrequency is the status loop period.
func (m *Manager) NodeStatusUpdateFrequency() time.Duration { return m.cfg.NodeStatusUpdateFrequency }

// LeaseRenewInterval is the lease loop period (duration x 0.25).
func (m *Manager) LeaseRenewInterval() time.Duration { return m.leaseRenew }

// Loops are the node's status loops, entries of the loop table: the image list refresh
// every ImageCachePeriod, the status update every nodeStatusUpdateFrequency and the lease
// renewal every leaseDuration x 0.25, each measured from the end of the last run.
type Loops struct {
	Images, Status, Lease *runner.Periodic
}

func (m *Manager) newLoops() Loops {
	return Loops{
		Images: runner.NewPeriodic(m.clock, runner.Every(ImageCachePeriod), func(ctx context.Context) {
			if err := m.RefreshImages(ctx); err != nil && ctx.Err() == nil {
				klog.FromContext(ctx).Info("Failed to update image list", "err", err)
			}
		}),
		Status: runner.NewPeriodic(m.clock, runner.Every(m.cfg.NodeStatusUpdateFrequency), func(ctx context.Context) {
			if err := m.UpdateNodeStatus(ctx); err != nil && ctx.Err() == nil {
				klog.FromContext(ctx).Error(err, "Failed to set some node status fields", "node", m.cfg.NodeName)
			}
		}),
		Lease: runner.NewPeriodic(m.clock, runner.Every(m.leaseRenew), m.RenewLease),
	}
}

// Loops returns the status loops.
func (m *Manager) Loops() Loops { return m.loops }
