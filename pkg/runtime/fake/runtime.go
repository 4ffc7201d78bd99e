package fake

import (
	"container/heap"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/pkg/cgroupfs"
	"github.com/minikubelet/minikubelet/pkg/container"
	"github.com/minikubelet/minikubelet/pkg/cpubudget"
	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/memcg"
	"github.com/minikubelet/minikubelet/pkg/metrics"
	"github.com/minikubelet/minikubelet/pkg/runner"
	"github.com/minikubelet/minikubelet/pkg/runtime/behavior"
	"github.com/minikubelet/minikubelet/pkg/runtime/fault"
	"github.com/minikubelet/minikubelet/pkg/runtime/view"
	"github.com/minikubelet/minikubelet/pkg/shell"
	"github.com/minikubelet/minikubelet/pkg/simnet"
	"github.com/minikubelet/minikubelet/pkg/task"
	"github.com/minikubelet/minikubelet/pkg/vfs"
)

// Container roles, re-exported from package behavior so the kubelet can label containers
// without importing the fake (see behavior.ContainerTypeAnnotation).
const (
	ContainerTypeAnnotation = behavior.ContainerTypeAnnotation
	ContainerTypeInit       = behavior.ContainerTypeInit
	ContainerTypeSidecar    = behavior.ContainerTypeSidecar
	ContainerTypeApp        = behavior.ContainerTypeApp
)

// Exit reasons a container status carries, as containerd reports them.
const (
	ReasonCompleted = "Completed"
	ReasonError     = "Error"
	ReasonOOMKilled = "OOMKilled"
)

// Exit codes of killed containers: SIGKILL (and the OOM killer) give 128+9.
const ExitCodeKilled int32 = 137

// Defaults.
const (
	DefaultInitContainerDuration = time.Second
	DefaultEventBufferSize       = 10000
)

// Config configures a Runtime. The zero value is usable: real clock, seed 0, defaults.
type Config struct {
	// Clock drives every delay and scripted transition. Required.
	Clock clock.Clock
	// Seed seeds ids and random (rate) faults: the same seed and the same calls give the
	// same history.
	Seed int64
	// InitContainerDuration is how long an init container without instructions runs
	// before it exits 0; default 1s.
	InitContainerDuration time.Duration
	// DefaultBehavior, in annotation syntax ("startDelay=500ms,memoryUsage=64Mi"), scripts
	// every container whose pod has no behaviour annotation for it.
	DefaultBehavior string
	// Faults are injected from the start (SimulatorConfiguration runtime.faults).
	Faults []fault.Spec
	// EventBufferSize is how many container events may wait for a slow GetContainerEvents
	// subscriber before its stream is broken; default 10000.
	EventBufferSize int
	// Metrics, when set, gets runtime_injected_faults_total{method,type}.
	Metrics *metrics.Registry
	// OnFault, when set, is called (outside the runtime's lock, in the calling goroutine)
	// every time a fault fires. Simulate mode prints it on its timeline.
	OnFault func(spec fault.Spec, method string)
	// Logger; default klog.Background().
	Logger klog.Logger
	// LogMaxBytes bounds what ContainerLog returns of a container's log: the current log
	// file's size limit (containerLogMaxSize). Default DefaultLogMaxBytes.
	LogMaxBytes int64
	// Network is the pod network the node's pods are on (shared by the nodes of one
	// process, so their pods reach each other); default a network of its own.
	Network *simnet.Network
	// PodCIDR is the range pod IPs are taken from, in order from its third address
	// (the first two are the network's and its gateway's), as a CNI's host-local IPAM;
	// default 10.88.0.0/16, containerd's default. Nodes sharing a Network need ranges of
	// their own.
	PodCIDR string
	// NodeFS is the node's filesystem, which the kubelet writes volumes to and containers'
	// mounts bind from; default a fresh empty one.
	NodeFS *vfs.View
	// LogMaxFiles is how many log files of LogMaxBytes a container keeps
	// (containerLogMaxFiles): its log takes at most their product on disk. Default 5.
	LogMaxFiles int64
	// CPUCapacityMilli is the node's CPU in millicores: busy containers share it by their
	// CPU shares (each at most its limit). 0: every busy container gets a core.
	CPUCapacityMilli int64
	// ProgramCPU, when set, bounds the real CPU the runtime spends stepping programs (with
	// the other nodes' runtimes that share it), measured on Clock: a step waits while the
	// budget is spent. Programs then run only in the runtime loop's own Step, for at most
	// ProgramSlice of Clock's time each, the rest waiting for the next, so the kubelet's
	// loops and calls come between. Both bounds are inert on a fake clock, where no step
	// takes time.
	ProgramCPU *cpubudget.Budget
	// PodPidsLimit is the most processes a pod's programs may run together
	// (podPidsLimit); 0 or less: no limit but each container's shell.DefaultMaxProcs.
	PodPidsLimit int64
	// Cgroups is the node's cgroup v2 hierarchy, which New binds at /sys/fs/cgroup of
	// NodeFS: the kubelet makes its pods' cgroups there (PodSandboxConfig.CgroupParent)
	// and the runtime each container's under its pod's. Default a new one.
	Cgroups *cgroupfs.Tree
	// PodsMemoryLimit is the memory the node's pods may hold together (the kubepods
	// cgroup's limit: the node's allocatable memory when the kubelet enforces it), in
	// bytes; past it the OOM killer kills a container by its oom_score_adj. 0: no limit.
	PodsMemoryLimit int64
	// Features are what Status reports the runtime supports, and what it does: nil is
	// DefaultFeatures (containerd 2.1's). Without SupplementalGroupsPolicy, as containerd
	// 1.7, the Strict policy is ignored and container statuses report no user.
	Features *cri.RuntimeFeatures
	// Handlers are the runtime's handlers Status reports, and what they support: nil is
	// DefaultHandlers. A sandbox with a user namespace of its own needs the default
	// handler ("") to support them.
	Handlers []cri.RuntimeHandler
}

// DefaultFeatures are the features of a runtime whose Config gives none: those of
// containerd 2.1, which the kubelet v1.37 is tested with.
var DefaultFeatures = cri.RuntimeFeatures{SupplementalGroupsPolicy: true}

// DefaultHandlers are containerd's default handler and runc's, both with user namespaces
// (containerd 2.0 and later on Linux 6.3 and later). Recursive read-only mounts are not
// modelled: the simulated filesystem has no sub-mounts.
var DefaultHandlers = []cri.RuntimeHandler{{Name: "", UserNamespaces: true}, {Name: "runc", UserNamespaces: true}}

// ProgramSlice is how long one step of the runtime loop steps programs at most when
// Config.ProgramCPU is set: what is left waits for its next step, after the loops due
// meanwhile.
const ProgramSlice = time.Millisecond

// ProgramMaxWait is how long programs waiting to run wait at most for the kubelet's loops
// (with Config.ProgramCPU, on the real clock): the programs loop comes last in the node's
// table, so the kubelet's work goes first, as a node's kubelet runs on CPU its pods do not
// take (system-reserved); past ProgramMaxWait the runtime's own loop runs a slice of them,
// so a kubelet busy for seconds (10,000 pods starting) slows its programs, never stops them.
const ProgramMaxWait = 100 * time.Millisecond

// runProgramsLocked steps the programs waiting in the run queue, oldest first, for at most
// ProgramSlice and while the process's budget lasts, measured on the runtime's clock (no
// time passes on a fake one). Only the runtime loop's own step runs them: the kubelet's
// calls never wait for a program.
func (r *Runtime) runProgramsLocked() {
	if r.budget == nil {
		return
	}
	r.programsRan = r.clk.Now()
	var spent time.Duration
	n := 0
	for n < len(r.runq) && spent < ProgramSlice {
		start := r.clk.Now()
		if !r.budget.ReadyAt(start).IsZero() {
			break
		}
		t := r.runq[n]
		n++
		if !t.live() {
			continue
		}
		// A step that waited runs at the instant it runs: the program's clock moves on.
		r.stepMachineLocked(t.c, max(t.at, start.UnixNano()))
		end := r.clk.Now()
		d := end.Sub(start)
		spent += d
		r.programTime += d
		r.budget.Spend(end, d)
	}
	clear(r.runq[:n])
	r.runq = r.runq[n:]
	if len(r.runq) == 0 {
		r.runq = nil
	}
}

// DefaultPodCIDR is containerd's default CNI range.
const DefaultPodCIDR = "10.88.0.0/16"

// DefaultLogMaxBytes is the kubelet's containerLogMaxSize default, 10Mi.
const DefaultLogMaxBytes = 10 << 20

// DefaultLogMaxFiles is the kubelet's containerLogMaxFiles default.
const DefaultLogMaxFiles = 5

// Runtime is an in-memory container runtime shaped like the CRI (see the package doc).
// All methods are safe for concurrent use.
type Runtime struct {
	clk          clock.Clock
	logger       klog.Logger
	initDuration time.Duration
	defaultBeh   behavior.Behavior
	eventBufSize int
	onFault      func(fault.Spec, string)
	faultsFired  *prometheus.CounterVec
	view         *view.View
	// workers run the containers' programs while they are awake (Close ends them).
	workers *shell.Workers

	// wake tells the runtime's loop that the schedule changed.
	wake *runner.Signal
	// nFaults mirrors len(faults) so calls skip the fault path without the lock.
	nFaults atomic.Int32

	mu           sync.Mutex
	rng          *rand.Rand
	lines        lineTexts   // the log lines containers print alike
	pods         []*podEntry // in order of their first sandbox; listing order
	podByUID     map[string]*podEntry
	sandboxes    map[string]*sandbox
	sandboxNames map[string]string // reserved sandbox name -> id
	containers   map[string]*ctr
	ctrNames     map[ctrName]string // reserved container name -> id
	nContainers  int
	images       []*cri.Image              // in pull order
	imageInfos   map[*cri.Image]*imageInfo // what each pulled image gives its containers (imageInfoLocked)
	ipSeq        uint32
	queue        transitionQueue
	compactAt    int // queue length that triggers the next compaction
	seq          uint64
	sub          *eventStream
	// imageMounts are the image volumes of the containers that have some, as
	// ContainerStatus reports them: kept here, not in every container.
	imageMounts map[*ctr][]cri.ImageMount
	// deferred runs once the lock is released: operation completions and wake-ups call
	// other components, which must never run under the runtime's lock.
	deferred    []func()
	faults      []*faultState
	faultSeq    int
	memBase     int64
	logMaxBytes int64
	logMaxFiles int64
	cpuGone     uint64               // CPU of the sandboxes removed, so the node's total never drops
	pid1Dirs    map[string]*vfs.Node // containers' /proc/1 by content (pid1Locked)
	stallGone   uint64               // and their CPU stall, in microseconds
	diskUsage   int64
	pidUsage    int64
	nodeFS      *vfs.View
	mem         *memcg.Root // the pods' memory cgroup
	cpuCap      int64       // CPUCapacityMilli
	podPids     int64       // PodPidsLimit
	busyShares  int64       // the CPU shares of the containers whose programs are busy
	budget      *cpubudget.Budget
	runq        []transition  // programs' steps due, waiting for the budget (FIFO)
	programTime time.Duration // what runProgramsLocked's steps took, on the runtime's clock
	// programsRan is when runProgramsLocked last ran, or when the run queue last filled
	// from empty: programs waiting past it plus ProgramMaxWait run in the runtime loop.
	programsRan time.Time
	oomQ        []*ctr // containers the OOM killer killed, for reapOOMLocked
	network     *simnet.Network
	bootedAt    int64 // when the node booted: the runtime's start (its /proc/uptime)
	podNet      netip.Prefix
	cgroups     *cgroupfs.Tree
	features    cri.RuntimeFeatures
	// One value for each distinct security context and container user (user.go): the
	// containers of a template share them.
	securities  map[string]*cri.SecurityContext
	users       map[string]*cri.ContainerUser
	usersBySpec map[userKey]*cri.ContainerUser
	procTrees   map[string]*procTree // by masked and read-only paths (proc.go)
	handlers    []cri.RuntimeHandler
	userns      map[*sandbox]*cri.UserNamespace // the sandboxes with a user namespace of their own

	// Lines servers' handlers wrote from other goroutines, by container, for the next lock.
	detachedMu sync.Mutex
	detachedQ  []*ctr
	detachedN  atomic.Int32
}

var (
	_ cri.RuntimeService        = (*Runtime)(nil)
	_ cri.ImageService          = (*Runtime)(nil)
	_ container.PodLister       = (*Runtime)(nil)
	_ container.PodStatusGetter = (*Runtime)(nil)
)

// podEntry groups a pod's sandboxes so listings come out grouped by pod.
type podEntry struct {
	uid       string
	sandboxes []*sandbox // creation order
	// snap is the pod as GetPods(all=true) returns it, shared by every call until the pod
	// changes (nil: stale).
	snap *container.Pod
}

type sandbox struct {
	info       cri.PodSandbox // the listing entry, kept current
	ip         string
	ns         *simnet.Namespace // the pod's network namespace, on the pod network while ready
	sysctls    *vfs.Node         // the pod's /proc/sys when it sets sysctls (nil: the defaults)
	pids       *shell.Pids       // the pod's pids cgroup, its containers' machines' together
	hostname   string
	name       string // reserved name
	pod        *podEntry
	containers []*ctr // creation order
	cpuGone    uint64 // CPU of the containers removed, so the sandbox's total never drops
	stallGone  uint64 // and their CPU stall, in microseconds (cpu.pressure's total)
	// cgroup is the pod's cgroup, its containers' are under (CgroupParent); ownCgroup says
	// the runtime chose it, the kubelet giving none, and removes it with the sandbox.
	cgroup    string
	ownCgroup bool
}

type ctr struct {
	info       cri.Container // the listing entry, kept current
	sb         *sandbox
	role       string
	beh        *behavior.Behavior // noBehavior unless the pod's annotation gave one
	annotation string             // the behaviour annotation key, when the pod had one
	logs       logBuffer          // what the program and the simulator wrote to the container's log (addLog)
	memLimit   int64              // the memory limit (0: none)
	memRequest int64              // the memory request: the use when the behaviour gives none
	// The CPU limit's CFS bandwidth and the request's shares (cri.ContainerResources).
	cpuPeriod, cpuQuota, cpuShares int32
	// res are the resources as created or last updated (ContainerStatus.Resources, shared:
	// read only); nil when created without.
	res  *cri.ContainerResources
	envs []cri.KeyValue
	// cgroup: it has a cgroup in the node's hierarchy, made with its machine
	// (ensureCgroupLocked).
	cgroup bool

	// The simulated machine the container's processes run on (program.go): nil until a
	// process first runs, made from spec then, with proc.
	m            *shell.Machine
	*proc        // nil while m is
	spec         *machineSpec
	mounts       []cri.Mount
	img          *imageInfo // shared by the image's containers
	workDir      string
	argv         []string
	stdin        bool
	notSimulated bool   // its program is not one the simulator knows: it runs until stopped
	opaque       bool   // counted in its sandbox's namespace as serving anything
	wakeGen      uint64 // invalidates queued wake-ups of the machine

	startedAt, finishedAt int64
	exitCode              int32
	reason, message       string
	startPending          bool // StartContainer called, startDelay running
	sigterm               bool // a graceful stop was asked for
	removed               bool

	// At most one transition is pending per container; gen invalidates queued ones.
	due int64
	gen uint64
	// stopWaiters are the StopContainer calls waiting for the container to exit or go.
	stopWaiters []*task.Op
}

// ctrName is a container's reserved name: its name, sandbox and attempt, as containerd
// reserves "name_sandboxID_attempt". A key of its parts, not that text: 80 bytes less for
// each container of a big node.
type ctrName struct {
	sb      *sandbox
	name    string
	attempt uint32
}

// reservedName is the name c reserved when it was created.
func (c *ctr) reservedName() ctrName {
	return ctrName{sb: c.sb, name: c.info.Metadata.Name, attempt: c.info.Metadata.Attempt}
}

// String is the name as containerd's errors print it.
func (n ctrName) String() string { return fmt.Sprintf("%s_%s_%d", n.name, n.sb.info.ID, n.attempt) }

// proc is what a container has once its machine is made (machineLocked), read only where
// the machine exists. Most containers of a big node never run a simulated process (an image
// the simulator has no program for), and these fields were a quarter of their record.
type proc struct {
	id         shell.Identity
	env        []string
	in         *shell.Input
	mainPID    int
	mainExited bool
	// oom is set when the OOM killer killed it (the container exits OOMKilled, 137).
	oom bool
	// busy: a process used its whole slice in its last step (cpu.go).
	busy       bool
	mainStatus int
	// partial is stdout's and stderr's unterminated last lines, made when a program
	// leaves one: most print whole lines only.
	partial *[2][]byte
	// mem is the container's memory cgroup, charged for what its programs hold.
	mem *memcg.Group
	// The CPU its programs used (cpu.go): core-nanoseconds up to cpuAt, the rate since
	// (millicores) and the time spent throttled by the CFS quota.
	cpuAcc    uint64
	cpuAt     int64
	cpuRate   int64
	throttled int64
	// Its CPU pressure up to cpuAt (psi.go): the time it stalled, in nanoseconds, and the
	// kernel's averages then.
	stall    int64
	stallAvg [3]float64
}

type transitionKind uint8

const (
	transitionStart transitionKind = iota
	transitionExit
	// transitionOp completes a pending operation: a latency that ends, a pull that finishes,
	// a hang's "for" or a caller's deadline.
	transitionOp
	// transitionWake steps a container's machine: a process's sleep ends.
	transitionWake
)

// transition is one entry of the runtime's discrete-event queue: a container that starts or
// exits, or an operation that completes.
type transition struct {
	at       int64 // unix ns
	seq      uint64
	c        *ctr
	gen      uint64
	kind     transitionKind
	exitCode int32
	reason   string
	op       *task.Op
	err      error
}

// live reports whether the entry still has an effect: a container transition not since
// rescheduled, or an operation not yet completed.
func (t *transition) live() bool {
	switch t.kind {
	case transitionOp:
		return !t.op.Done()
	case transitionWake:
		return t.gen == t.c.wakeGen && !t.c.removed
	}
	return t.gen == t.c.gen && !t.c.removed
}

// transitionQueue is a min-heap by (at, seq): ties resolve in scheduling order, so
// histories are deterministic.
type transitionQueue []transition

func (q transitionQueue) Len() int { return len(q) }
func (q transitionQueue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}
func (q transitionQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *transitionQueue) Push(x any)   { *q = append(*q, x.(transition)) }
func (q *transitionQueue) Pop() any {
	old := *q
	t := old[len(old)-1]
	old[len(old)-1] = transition{}
	*q = old[:len(old)-1]
	return t
}

// New returns a runtime with no sandboxes, containers or images.
func New(cfg Config) (*Runtime, error) {
	if cfg.Clock == nil {
		// No silent real clock: every loop must be able to run on a fake one.
		return nil, errors.New("fake runtime: Config.Clock is required")
	}
	if cfg.InitContainerDuration < 0 {
		return nil, fmt.Errorf("create fake runtime: config field \"initContainerDuration\": must not be negative, got %v", cfg.InitContainerDuration)
	}
	if cfg.InitContainerDuration == 0 {
		cfg.InitContainerDuration = DefaultInitContainerDuration
	}
	if cfg.EventBufferSize < 0 {
		return nil, fmt.Errorf("create fake runtime: config field \"eventBufferSize\": must not be negative, got %d", cfg.EventBufferSize)
	}
	if cfg.EventBufferSize == 0 {
		cfg.EventBufferSize = DefaultEventBufferSize
	}
	def, err := behavior.ParseValue(cfg.DefaultBehavior)
	if err != nil {
		return nil, fmt.Errorf("create fake runtime: config field \"defaultBehavior\": %w", err)
	}
	if cfg.Logger.GetSink() == nil {
		cfg.Logger = klog.Background()
	}
	r := &Runtime{
		workers:      shell.NewWorkers(),
		clk:          cfg.Clock,
		logger:       cfg.Logger,
		initDuration: cfg.InitContainerDuration,
		logMaxBytes:  cfg.LogMaxBytes,
		logMaxFiles:  cfg.LogMaxFiles,
		defaultBeh:   def,
		eventBufSize: cfg.EventBufferSize,
		onFault:      cfg.OnFault,
		wake:         runner.NewSignal(),
		compactAt:    minCompact,
		rng:          rand.New(rand.NewPCG(uint64(cfg.Seed), 0x6d696e696b75)),
		podByUID:     map[string]*podEntry{},
		sandboxes:    map[string]*sandbox{},
		sandboxNames: map[string]string{},
		containers:   map[string]*ctr{},
		ctrNames:     map[ctrName]string{},
		nodeFS:       cfg.NodeFS,
		mem:          memcg.NewRoot(cfg.PodsMemoryLimit),
		cpuCap:       cfg.CPUCapacityMilli,
		pid1Dirs:     map[string]*vfs.Node{},
		podPids:      cfg.PodPidsLimit,
		budget:       cfg.ProgramCPU,
		network:      cfg.Network,
		features:     DefaultFeatures,
	}
	r.bootedAt = r.now()
	if cfg.Features != nil {
		r.features = *cfg.Features
	}
	r.handlers = DefaultHandlers
	if cfg.Handlers != nil {
		r.handlers = slices.Clone(cfg.Handlers)
	}
	if r.network == nil {
		r.network = simnet.New()
	}
	cidr := cfg.PodCIDR
	if cidr == "" {
		cidr = DefaultPodCIDR
	}
	if r.podNet, err = netip.ParsePrefix(cidr); err != nil || !r.podNet.Addr().Is4() || r.podNet.Bits() > 30 {
		return nil, fmt.Errorf("create fake runtime: pod CIDR %q: want an IPv4 range of at least 4 addresses (10.88.0.0/16)", cidr)
	}
	r.podNet = r.podNet.Masked()
	if r.nodeFS == nil {
		r.nodeFS = vfs.New(cfg.Clock.Now)
	}
	if r.cgroups = cfg.Cgroups; r.cgroups == nil {
		r.cgroups = cgroupfs.New()
	}
	if err := r.cgroups.Mount(r.nodeFS, CgroupRoot); err != nil {
		return nil, fmt.Errorf("create fake runtime: %w", err)
	}
	name := metrics.RuntimeFaultsFired
	if cfg.Metrics != nil {
		name = cfg.Metrics.Name(name)
	}
	r.faultsFired = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: name,
		Help: "Runtime faults injected into CRI calls, by CRI method and fault type.",
	}, []string{"method", "type"})
	if cfg.Metrics != nil {
		cfg.Metrics.MustRegister(r.faultsFired)
	}
	r.view, err = view.New(view.Config{Runtime: r, Clock: cfg.Clock})
	if err != nil {
		return nil, fmt.Errorf("create fake runtime: %w", err)
	}
	for i, spec := range cfg.Faults {
		if _, err := r.AddFault(spec); err != nil {
			return nil, fmt.Errorf("create fake runtime: config field \"faults[%d]\": %w", i, err)
		}
	}
	return r, nil
}

// now reads the clock as unix nanoseconds.
func (r *Runtime) now() int64 { return r.clk.Now().UnixNano() }

// after is the instant d after at (both in Unix nanoseconds), the last representable instant
// (year 2262) when the sum would not fit: a behaviour may say runFor=2562047h, and the sum
// wrapping round to the past would make that container exit at once.
func after(at int64, d time.Duration) int64 {
	return int64(cri.AddDurations(time.Duration(at), d)) // at as nanoseconds since the epoch
}

// lock takes the lock and materialises every transition due by now, so any observation at
// virtual time t sees everything scheduled at or before t. It returns now.
func (r *Runtime) lock() int64 {
	r.mu.Lock()
	now := r.now()
	r.advanceLocked(now)
	r.detachedLocked()
	return now
}

// unlock materialises transitions the call itself made due (runFor=0, a kill) and unlocks.
func (r *Runtime) unlock(now int64) {
	r.advanceLocked(now)
	r.release()
}

// release unlocks and then runs what was deferred under the lock.
func (r *Runtime) release() {
	fns := r.deferred
	r.deferred = nil
	r.mu.Unlock()
	for _, f := range fns {
		f()
	}
}

// deferLocked queues f to run once the lock is released.
func (r *Runtime) deferLocked(f func()) { r.deferred = append(r.deferred, f) }

// completeLocked completes op with err once the lock is released.
func (r *Runtime) completeLocked(op *task.Op, err error) {
	r.deferLocked(func() { op.Complete(err) })
}

// NextTransition returns the virtual time of the earliest entry of the event queue (a
// delayed start, an exit, a stop, an operation that completes) and false when nothing is
// scheduled.
func (r *Runtime) NextTransition() (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.dropStaleLocked()
	if len(r.queue) == 0 {
		return time.Time{}, false
	}
	return time.Unix(0, r.queue[0].at), true
}

// Advance applies every entry due at the clock's current time, stamping each with its
// scheduled time (not the time it is observed), emits their events and completes their
// operations. Every API call does the same first.
func (r *Runtime) Advance() {
	now := r.lock()
	if len(r.runq) > 0 && !r.clk.Now().Before(r.programsRan.Add(ProgramMaxWait)) {
		r.runProgramsLocked() // they waited long enough for the kubelet's loops
	}
	r.unlock(now)
}

// ProgramsDue is the programs loop's next due time (Config.ProgramCPU): when the budget
// lets the programs waiting to run go on, zero when none waits. The loop comes last in the
// node's table: the kubelet's loops due at the same time go first.
func (r *Runtime) ProgramsDue(now time.Time) time.Time {
	r.mu.Lock()
	waiting := len(r.runq) > 0
	r.mu.Unlock()
	if !waiting {
		return time.Time{}
	}
	if ready := r.budget.ReadyAt(now); !ready.IsZero() {
		return ready
	}
	return now
}

// StepPrograms is the programs loop's step: it steps the programs waiting to run for at
// most ProgramSlice, while the budget lasts.
func (r *Runtime) StepPrograms(context.Context) {
	now := r.lock()
	r.runProgramsLocked()
	r.unlock(now)
}

// Due is the runtime loop's next due time: the earliest queued transition, or zero when the
// queue is empty; with programs waiting to run (Config.ProgramCPU), at the latest when
// they have waited ProgramMaxWait for the programs loop (and the budget lets them).
func (r *Runtime) Due(now time.Time) time.Time {
	// One lock for both: the owner asks at every turn of its loop.
	r.mu.Lock()
	r.dropStaleLocked()
	var t time.Time
	ok := len(r.queue) > 0
	if ok {
		t = time.Unix(0, r.queue[0].at)
	}
	waiting := len(r.runq) > 0
	starved := r.programsRan.Add(ProgramMaxWait)
	r.mu.Unlock()
	if waiting {
		// The programs loop runs them; this one only once they have waited too long.
		ready := r.budget.ReadyAt(now)
		if ready.IsZero() || ready.Before(starved) {
			ready = starved
		}
		if !ok || ready.Before(t) {
			return ready
		}
	}
	return t
}

// Step is the runtime loop's step: Advance.
func (r *Runtime) Step(context.Context) { r.Advance() }

// Wake is notified whenever something is queued, so the daemon's runtime loop re-reads Due.
func (r *Runtime) Wake() *runner.Signal { return r.wake }

func (r *Runtime) dropStaleLocked() {
	for len(r.queue) > 0 {
		if r.queue[0].live() {
			return
		}
		heap.Pop(&r.queue)
	}
}

func (r *Runtime) advanceLocked(now int64) {
	for {
		r.dropStaleLocked()
		if len(r.queue) == 0 || r.queue[0].at > now {
			return
		}
		t := heap.Pop(&r.queue).(transition)
		if t.kind == transitionOp {
			r.completeLocked(t.op, t.err)
			continue
		}
		if t.kind == transitionWake {
			if r.budget != nil {
				// Programs run on what is left (runProgramsLocked): a step due waits in
				// the run queue, not here, whoever's call made it due.
				if len(r.runq) == 0 {
					r.programsRan = r.clk.Now() // its wait for the kubelet's loops starts
				}
				r.runq = append(r.runq, t)
				continue
			}
			r.stepMachineLocked(t.c, t.at)
			continue
		}
		t.c.due = 0
		switch t.kind {
		case transitionStart:
			_ = r.startLocked(t.c, t.at) // a failed start is recorded in the container's status
		case transitionExit:
			r.exitLocked(t.c, t.at, t.exitCode, t.reason, "")
		}
	}
}

// scheduleLocked makes t the container's single pending transition.
func (r *Runtime) scheduleLocked(c *ctr, at int64, kind transitionKind, exitCode int32, reason string) {
	c.gen++
	c.due = at
	r.pushLocked(transition{at: at, c: c, gen: c.gen, kind: kind, exitCode: exitCode, reason: reason})
}

// scheduleOpLocked queues the completion of op with err at time at.
func (r *Runtime) scheduleOpLocked(at int64, op *task.Op, err error) {
	r.pushLocked(transition{at: at, kind: transitionOp, op: op, err: err})
}

func (r *Runtime) pushLocked(t transition) {
	r.seq++
	t.seq = r.seq
	r.compactLocked()
	heap.Push(&r.queue, t)
	r.wake.Notify()
}

// minCompact is the smallest queue worth compacting.
const minCompact = 64

// compactLocked drops dead queue entries (rescheduled or removed containers, completed
// operations) each time the queue has doubled since the last compaction, so it stays within
// a constant factor of its live entries however many long runFor or oomAfter containers
// and deadlines come and go, at amortised constant cost.
func (r *Runtime) compactLocked() {
	if len(r.queue) < r.compactAt {
		return
	}
	live := r.queue[:0]
	for _, t := range r.queue {
		if t.live() {
			live = append(live, t)
		}
	}
	clear(r.queue[len(live):])
	r.queue = live
	heap.Init(&r.queue)
	r.compactAt = max(minCompact, 2*len(live))
}

func (r *Runtime) cancelPendingLocked(c *ctr) {
	c.gen++
	c.due = 0
}

// newIDLocked returns a fresh 64-hex-digit id from the seeded source.
func (r *Runtime) newIDLocked() string {
	var b [32]byte
	for {
		for i := 0; i < len(b); i += 8 {
			v := r.rng.Uint64()
			for j := 0; j < 8; j++ {
				b[i+j] = byte(v >> (8 * j))
			}
		}
		id := hex.EncodeToString(b[:])
		if _, ok := r.sandboxes[id]; ok {
			continue
		}
		if _, ok := r.containers[id]; ok {
			continue
		}
		return id
	}
}

// delay waits d on the clock as a pending operation completed by the event queue (a task
// gives control back meanwhile), or until ctx ends or its deadline passes.
func (r *Runtime) delay(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	op := task.NewOp()
	r.mu.Lock()
	r.scheduleOpLocked(after(r.now(), d), op, nil)
	r.release()
	return r.await(ctx, op)
}

// await waits for op as the caller's context allows (task.Await). A deadline set with
// task.WithDeadline (the kubelet's CRI client does, per call) fails the call at that
// instant with the error a gRPC client reports; the operation itself goes on.
func (r *Runtime) await(ctx context.Context, op *task.Op) error {
	if op.Done() {
		return op.Err()
	}
	if dl, ok := task.Deadline(ctx); ok {
		call := task.NewOp()
		op.OnDone(func() { call.Complete(op.Err()) })
		r.mu.Lock()
		now := r.now()
		r.scheduleOpLocked(max(dl.UnixNano(), now), call, cri.ErrDeadlineExceeded)
		r.advanceLocked(now)
		r.release()
		op = call
	}
	return task.Await(ctx, op)
}

// DefaultCPUMilli is the CPU a running container uses when its behaviour has no cpuUsage.
const DefaultCPUMilli = 5

// Usage is what the node uses, for node status pressure conditions.
type Usage struct {
	// MemoryBytes is the base set by SetMemoryUsage plus the memory every running container
	// uses now (see ContainerStats); PodMemoryBytes the containers' part alone.
	MemoryBytes    int64
	PodMemoryBytes int64
	// DiskBytes is the base set by SetDiskUsage, plus every image pulled, plus every
	// container's writable layer (diskUsage, diskGrowth) and log, exited containers'
	// included until they are removed.
	DiskBytes int64
	// PIDs is set by SetPIDUsage, plus the processes the containers' programs run.
	PIDs int64
}

// Usage returns the node's current usage.
func (r *Runtime) Usage() Usage {
	now := r.lock()
	defer r.unlock(now)
	mem, disk := r.memBase, r.diskUsage
	for _, img := range r.images {
		disk += int64(img.Size)
	}
	pids := r.pidUsage
	for _, c := range r.containers {
		mem += c.memoryAt(now)
		disk += c.diskAt(now) + r.logBytes(c, now)
		pids += int64(c.processes())
	}
	return Usage{MemoryBytes: mem, PodMemoryBytes: mem - r.memBase, DiskBytes: disk, PIDs: pids}
}

// memoryAt is the memory the container uses at now: while it runs, its memoryUsage (or, with
// none, its memory request) plus its memoryGrowth since it started; nothing otherwise.
func (c *ctr) memoryAt(now int64) int64 {
	if c.info.State != cri.ContainerRunning {
		return 0
	}
	use := c.memoryModel().MemoryAt(time.Duration(now - c.startedAt))
	if c.proc != nil && c.mem != nil {
		// What the programs hold, once more than the model says (the request stands in
		// for the use of a container until its programs hold more).
		use = max(use, c.mem.Used())
	}
	return use
}

// diskAt is the container's writable layer at now: its diskUsage plus its diskGrowth for
// as long as it ran, plus what its programs wrote outside its mounts.
func (c *ctr) diskAt(now int64) int64 {
	if c.startedAt == 0 {
		return 0
	}
	n := c.beh.DiskAt(time.Duration(c.ranFor(now)))
	if c.m != nil {
		n += c.m.FS().UpperBytes() // what its programs wrote to its writable layer
	}
	return n
}

// logBytes is the size of the container's log on disk at now: its periodic lines and the
// simulator's, at most containerLogMaxSize x containerLogMaxFiles (rotation drops the rest).
func (r *Runtime) logBytes(c *ctr, now int64) int64 {
	n := c.beh.LogBytes(c.periodicLines(now)) + c.logs.written
	size, files := r.logMaxBytes, r.logMaxFiles
	if size <= 0 {
		size = DefaultLogMaxBytes
	}
	if files <= 0 {
		files = DefaultLogMaxFiles
	}
	return min(n, size*files)
}

// memoryModel is the behaviour with the request standing in for a missing memoryUsage.
func (c *ctr) memoryModel() behavior.Behavior {
	b := *c.beh
	if b.MemoryUsage == 0 {
		b.MemoryUsage = c.memRequest
	}
	return b
}

// cpuMilli is the CPU the container uses while it runs, in millicores: what it asks for,
// at most its CPU limit (the CFS quota throttles the rest).
func (c *ctr) cpuMilli() int64 {
	if c.proc != nil {
		return c.cpuRate
	}
	d := c.cpuDemand()
	if l := c.cpuLimitMilli(); l > 0 && d > l {
		return l
	}
	return d
}

// cpuLimitMilli is the CPU limit in millicores (0: none).
func (c *ctr) cpuLimitMilli() int64 {
	if c.cpuQuota <= 0 || c.cpuPeriod <= 0 {
		return 0
	}
	return int64(c.cpuQuota) * 1000 / int64(c.cpuPeriod)
}

// cfsPeriods are the CFS periods the container ran by now and those it was throttled in: a
// container that asks for more than its limit uses up its quota early in every period and
// waits for the next (cAdvisor's container_cpu_cfs_*periods_total). Zero without a limit.
func (c *ctr) cfsPeriods(now int64) (periods, throttled uint64) {
	if c.cpuLimitMilli() == 0 {
		return 0, 0
	}
	periods = uint64(c.ranFor(now) / (int64(c.cpuPeriod) * 1000))
	if c.proc != nil {
		t := c.throttled
		if c.busy && c.throttles() {
			t += max(c.cpuEnd(now)-c.cpuAt, 0)
		}
		return periods, uint64(t / (int64(c.cpuPeriod) * 1000))
	}
	if c.cpuDemand() > c.cpuLimitMilli() {
		throttled = periods
	}
	return periods, throttled
}

// cpuDemand is the CPU the container's processes ask for while it runs, in millicores.
func (c *ctr) cpuDemand() int64 {
	if c.m != nil && c.m.Busy() {
		return 1000 // a busy loop uses a whole core
	}
	if c.beh.CPUMilli > 0 {
		return c.beh.CPUMilli
	}
	return DefaultCPUMilli
}

// cpuCoreNanos is the CPU the container used from its start to now (or to its exit), in
// core-nanoseconds: cumulative, monotonic on the runtime's clock.
func (c *ctr) cpuCoreNanos(now int64) uint64 {
	if c.proc != nil {
		return c.cpuAcc + uint64(c.cpuRate)*uint64(max(c.cpuEnd(now)-c.cpuAt, 0)/1000)
	}
	// millicores x microseconds = cores x nanoseconds, without overflowing on long runs.
	return uint64(c.cpuMilli()) * uint64(c.ranFor(now)/1000)
}

// ranFor is how long, in nanoseconds, the container has run by now (until its exit once it
// exited; 0 before it started).
func (c *ctr) ranFor(now int64) int64 {
	if c.startedAt == 0 {
		return 0
	}
	end := now
	if c.info.State == cri.ContainerExited {
		end = c.finishedAt
	}
	return max(end-c.startedAt, 0)
}

// cpuCoreNanos is the CPU every container of the sandbox used, removed ones included: the
// pod cgroup's cumulative counter.
func (sb *sandbox) cpuCoreNanos(now int64) uint64 {
	total := sb.cpuGone
	for _, c := range sb.containers {
		total += c.cpuCoreNanos(now)
	}
	return total
}

// ListPodSandboxStats returns the resource use of every sandbox, as CRI's ListPodSandboxStats:
// what its running containers use now, and the CPU all of them have used since it was created.
func (r *Runtime) ListPodSandboxStats(ctx context.Context) ([]cri.PodSandboxStats, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := r.inject(ctx, methodListPodSandboxStats, one); err != nil {
		return nil, err
	}
	now := r.lock()
	defer r.unlock(now)
	return r.sandboxStatsLocked(now), nil
}

func (r *Runtime) sandboxStatsLocked(now int64) []cri.PodSandboxStats {
	out := make([]cri.PodSandboxStats, 0, len(r.sandboxes))
	for _, pe := range r.pods {
		for _, sb := range pe.sandboxes {
			s := cri.PodSandboxStats{ID: sb.info.ID, Metadata: sb.info.Metadata, Timestamp: now, UsageCoreNanoSeconds: sb.cpuCoreNanos(now),
				CPUPressure: sb.cpuPressure(now)}
			for _, c := range sb.containers {
				if c.info.State == cri.ContainerRunning {
					s.UsageNanoCores += uint64(c.cpuMilli()) * 1_000_000
					s.WorkingSetBytes += uint64(c.memoryAt(now))
					s.Processes += uint64(c.processes())
				}
			}
			out = append(out, s)
		}
	}
	return out
}

// Cgroups is what cAdvisor reads from the node's cgroups: the running containers' and the
// pods' use now. Not a CRI call: no fault or latency applies (a hung runtime does not stop
// cAdvisor), and it never waits.
func (r *Runtime) Cgroups() ([]cri.ContainerStats, []cri.PodSandboxStats) {
	now := r.lock()
	defer r.unlock(now)
	return r.containerStatsLocked(now, nil), r.sandboxStatsLocked(now)
}

// NodeCPUPressure is the node's cpu.pressure (/proc/pressure/cpu): its pods' some summed,
// the removed ones' included, capped at all of the time; full is zero, as the kernel's
// system-wide CPU full line is. Nil while nothing stalled.
func (r *Runtime) NodeCPUPressure() *cri.PSI {
	now := r.lock()
	defer r.unlock(now)
	var p *cri.PSI
	if r.stallGone > 0 {
		p = &cri.PSI{Some: cri.PSIData{Total: r.stallGone}}
	}
	for _, sb := range r.sandboxes {
		addPressure(&p, sb.cpuPressure(now))
	}
	if p != nil {
		p.Full = cri.PSIData{}
	}
	return p
}

// NodeCPU is the CPU every container on the node used since the runtime started (removed
// ones included), in core-nanoseconds, and the CPU in use now, in nanocores.
func (r *Runtime) NodeCPU() (coreNanoSeconds, nanoCores uint64) {
	now := r.lock()
	defer r.unlock(now)
	coreNanoSeconds = r.cpuGone
	for _, sb := range r.sandboxes {
		coreNanoSeconds += sb.cpuCoreNanos(now)
		for _, c := range sb.containers {
			if c.info.State == cri.ContainerRunning {
				nanoCores += uint64(c.cpuMilli()) * 1_000_000
			}
		}
	}
	return coreNanoSeconds, nanoCores
}

// ListContainerStats returns the resource use of the running containers that match filter,
// computed on the runtime's clock from each container's behaviour (cpuUsage, memoryUsage,
// memoryGrowth; the defaults DefaultCPUMilli and the memory request).
func (r *Runtime) ListContainerStats(ctx context.Context, filter *cri.ContainerStatsFilter) ([]cri.ContainerStats, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var cf *cri.ContainerFilter
	if filter != nil {
		cf = &cri.ContainerFilter{ID: filter.ID, PodSandboxID: filter.PodSandboxID}
	}
	if err := r.inject(ctx, methodListContainerStats, func() int { return r.count(nil, cf) }); err != nil {
		return nil, err
	}
	now := r.lock()
	defer r.unlock(now)
	return r.containerStatsLocked(now, cf), nil
}

func (r *Runtime) containerStatsLocked(now int64, cf *cri.ContainerFilter) []cri.ContainerStats {
	var out []cri.ContainerStats
	r.eachContainerLocked(cf, func(n int) { out = make([]cri.ContainerStats, 0, n) }, func(c *ctr) {
		if c.info.State != cri.ContainerRunning {
			return
		}
		out = append(out, cri.ContainerStats{
			ID:                   c.info.ID,
			PodSandboxID:         c.info.PodSandboxID,
			Metadata:             c.info.Metadata,
			Labels:               c.info.Labels,
			Timestamp:            now,
			UsageCoreNanoSeconds: c.cpuCoreNanos(now),
			UsageNanoCores:       uint64(c.cpuMilli()) * 1_000_000,
			WorkingSetBytes:      uint64(c.memoryAt(now)),
			WritableLayerBytes:   uint64(c.diskAt(now)),
			LogBytes:             uint64(r.logBytes(c, now)),
			Image:                c.info.Image.Image,
			StartedAt:            c.startedAt,
			MemoryLimitBytes:     c.memLimit,
			CPUPeriod:            int64(c.cpuPeriod),
			CPUQuota:             int64(c.cpuQuota),
			CPUShares:            int64(c.cpuShares),
		})
		last := &out[len(out)-1]
		last.CFSPeriods, last.CFSThrottled = c.cfsPeriods(now)
		last.CPUPressure = c.cpuPressure(now)
	})
	return out
}

// SetMemoryUsage sets the node's memory use outside containers, in bytes.
func (r *Runtime) SetMemoryUsage(bytes int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.memBase = bytes
}

// SetDiskUsage sets the node's disk use in bytes (scripted disk pressure).
func (r *Runtime) SetDiskUsage(bytes int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.diskUsage = bytes
}

// SetPIDUsage sets the number of processes on the node (scripted PID pressure).
func (r *Runtime) SetPIDUsage(n int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pidUsage = n
}

// ContainerMemoryUsage returns the memory use of a container now (see ListContainerStats)
// while it runs, else 0. An unknown id is an error wrapping cri.ErrNotFound.
func (r *Runtime) ContainerMemoryUsage(id string) (int64, error) {
	now := r.lock()
	defer r.unlock(now)
	c, ok := r.containers[id]
	if !ok {
		return 0, notFound("container", id)
	}
	return c.memoryAt(now), nil
}

// residentBaseline is what a running container's processes hold before they hold
// anything of their own: a shell and a sleep of busybox, about what memory.current shows
// of such a container on a node.
const residentBaseline = 512 << 10

// ContainerResidentMemory is what a running container holds now, without the request that
// stands in for the use of a container whose behaviour scripts none (memoryAt): its scripted
// use, or what its programs hold over a resident baseline. The kubelet compares it with a
// memory limit a resize would lower. 0 for a container that does not run; an unknown id is
// an error wrapping cri.ErrNotFound.
func (r *Runtime) ContainerResidentMemory(id string) (int64, error) {
	now := r.lock()
	defer r.unlock(now)
	c, ok := r.containers[id]
	if !ok {
		return 0, notFound("container", id)
	}
	if c.info.State != cri.ContainerRunning {
		return 0, nil
	}
	use := c.beh.MemoryAt(time.Duration(now - c.startedAt))
	if c.mem != nil {
		use = max(use, c.mem.Used()+residentBaseline)
	}
	return max(use, residentBaseline), nil
}

func notFound(kind, id string) error {
	return fmt.Errorf("%s %q: %w", kind, id, cri.ErrNotFound)
}

// errStreamBusy is returned to a second concurrent GetContainerEvents subscriber.
var errStreamBusy = errors.New("get container events: another subscriber is connected (one at a time)")

// errStreamClosed is what Recv reports on a stream its subscriber closed.
var errStreamClosed = errors.New("get container events: stream closed by the subscriber")

// Scheduled is how many transitions (starts, exits, operation completions) are queued,
// including ones made stale by a later change that the queue drops lazily.
func (r *Runtime) Scheduled() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.queue)
}

// Network is the pod network the runtime's pods are on: the kubelet's probes and hooks
// reach their servers through it.
func (r *Runtime) Network() *simnet.Network { return r.network }

// NodeFS is the node's filesystem, which containers' mounts bind from.
func (r *Runtime) NodeFS() *vfs.View { return r.nodeFS }

// CgroupRoot is where the node's filesystem, and each container's, has its cgroup2 mount.
const CgroupRoot = "/sys/fs/cgroup"

// CgroupFS is the node's cgroup hierarchy (Config.Cgroups), bound at CgroupRoot of NodeFS.
func (r *Runtime) CgroupFS() *cgroupfs.Tree { return r.cgroups }

// After is a pending operation completed d from now on the runtime's clock, by its event
// queue (the kubelet's sleep lifecycle hooks wait on it).
func (r *Runtime) After(d time.Duration) *task.Op {
	op := task.NewOp()
	r.mu.Lock()
	r.scheduleOpLocked(after(r.now(), d), op, nil)
	r.release()
	return op
}

// Close ends every simulated process of every container (their coroutines unwind): the
// node is going away. The containers' records stay as they are. Safe to call more than
// once; the runtime must not run programs afterwards.
func (r *Runtime) Close() {
	r.mu.Lock()
	for _, c := range r.containers {
		c.killMachineLocked()
	}
	r.release()
	r.workers.Close()
}
