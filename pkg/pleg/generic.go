package pleg

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/pkg/container"
	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/metrics"
	"github.com/minikubelet/minikubelet/pkg/runner"
	"github.com/minikubelet/minikubelet/pkg/task"
)

// Runtime is what the generic PLEG reads: the pod listing, one pod's listing (the per-pod
// relist) and one pod's status. Listed pods
// must not be modified once returned; a runtime may return the same *container.Pod again
// for a pod that did not change (the fake runtime does), and the PLEG then skips comparing
// its containers.
type Runtime interface {
	container.PodLister
	container.PodGetter
	container.PodStatusGetter
}

// Config configures a GenericPLEG. Zero durations and capacity take the kubelet's defaults.
type Config struct {
	// Runtime is listed every relist and asked for the status of pods with changes. Required.
	Runtime Runtime
	// Cache receives the statuses and the relist timestamp. Required.
	Cache container.Cache
	// Clock drives the relist. Required.
	Clock clock.Clock
	// RelistPeriod defaults to 1s, RelistThreshold to 3m (the wiring passes 300s/10m under
	// v1.30's EventedPLEG, LegacyEvented).
	RelistPeriod    time.Duration
	RelistThreshold time.Duration
	// ChannelCapacity is the event channel's buffer; 1000 by default.
	ChannelCapacity int
	// Registry receives the PLEG metrics; a private one is made when nil.
	Registry *metrics.Registry
	// OnDemandRelist is the PLEGOnDemandRelist gate (GA and locked on in v1.37): RequestRelist
	// then queues a relist of one pod, which Step runs between global relists. Off,
	// RequestRelist does nothing, as before v1.36.
	OnDemandRelist bool
	// PodRelistMetric registers kubelet_pleg_pod_relist_duration_seconds, which kubelets
	// serve from v1.36 on (whether pods are relisted or not).
	PodRelistMetric bool
	// RelistRequestCapacity bounds the queue of pod relist requests; 200 by default, as
	// upstream. A request that does not fit is dropped (the next global relist covers it).
	RelistRequestCapacity int
	// LegacyEvented is v1.30's EventedPLEG gate, with LegacyEventedPLEG beside this PLEG: the
	// cache then keeps the newest write, and a relist whose write the cache dropped neither
	// advances the pod's record nor sends its events. v1.37's EventedPLEG leaves the
	// generic PLEG as it is and needs nothing here.
	LegacyEvented bool
	// Notify is called after an event was put on the channel, so the reader (the sync
	// loop's Wake) looks at it. Optional.
	Notify func()
}

// GenericPLEG finds container changes by relisting the runtime periodically and comparing
// each listing with the previous one. It is the only writer of the pod status cache and the
// only source of pod lifecycle events (v1.37): besides the global relist it relists single
// pods on request (RequestRelist: after a sync that changed the runtime, or a container exit
// the EventedPLEG saw), so those changes are seen in milliseconds rather than at the next
// relist.
//
// It assumes a container is not created, terminated and removed within one relist period:
// such a container goes unseen, as upstream. It is a loop of the node's loop table: Due says
// when the next relist starts (relistPeriod after the end of the last, as upstream's
// wait.Until), and Step runs it as a task, so a relist held up by a slow or hung runtime
// waits without blocking anything and ends when the runtime answers (or the call's
// deadline passes). Step dispatches as upstream's workerLoopIteration: a due global relist
// first, then one queued pod relist; one runs at a time.
type GenericPLEG struct {
	runtime     Runtime
	cache       container.Cache
	clock       clock.Clock
	eventCh     chan *PodLifecycleEvent
	metrics     *plegMetrics
	eventedGate bool
	notify      func()
	// eventedInUse is set by the LegacyEventedPLEG while it is in charge; the cache write
	// then takes the status's own timestamp.
	eventedInUse atomic.Bool

	onDemand bool
	// requests is the bounded queue of pod relists: RequestRelist may be called from any
	// goroutine (a sync task, the event stream), Step drains it on the owner.
	requests chan relistRequest
	// relistSeq numbers the global relists as they start; servedSeq is the number of the
	// last one that listed the runtime. A request made before that one started is served.
	relistSeq, servedSeq atomic.Uint64
	// podRun is the pod relist in flight (a task, as the global relist).
	podRun *task.Task

	period    atomic.Int64 // time.Duration
	threshold atomic.Int64 // time.Duration

	// The last successful relist, in unix nanoseconds; relisted says there was one.
	relistNanos atomic.Int64
	relisted    atomic.Bool

	// The relist state below is only touched by the relist task: one relist at a time.
	records map[types.UID]*podRecord
	// order holds every record: this relist's listing order, then the unlisted ones. Reused
	// between relists with spare, so a steady relist allocates no bookkeeping.
	order, spare []*podRecord
	gen          uint64
	events       []*PodLifecycleEvent // scratch for one pod's events

	// loop runs Relist every period after the end of the last, as a task.
	loop *runner.Periodic
}

// NewGenericPLEG validates cfg, fills its defaults and returns a stopped PLEG.
func NewGenericPLEG(cfg Config) (*GenericPLEG, error) {
	if cfg.Runtime == nil {
		return nil, errors.New("pleg config: runtime is required")
	}
	if cfg.Cache == nil {
		return nil, errors.New("pleg config: cache is required")
	}
	if cfg.Clock == nil {
		// No silent real clock: every loop must be able to run on a fake one.
		return nil, errors.New("generic PLEG: Config.Clock is required")
	}
	if cfg.RelistPeriod == 0 {
		cfg.RelistPeriod = DefaultRelistPeriod
	}
	if cfg.RelistThreshold == 0 {
		cfg.RelistThreshold = DefaultRelistThreshold
	}
	if cfg.ChannelCapacity == 0 {
		cfg.ChannelCapacity = DefaultChannelCapacity
	}
	if cfg.RelistRequestCapacity == 0 {
		cfg.RelistRequestCapacity = DefaultRelistRequestCapacity
	}
	if err := validateDuration(RelistDuration{cfg.RelistPeriod, cfg.RelistThreshold}); err != nil {
		return nil, fmt.Errorf("pleg config: %w", err)
	}
	if cfg.ChannelCapacity < 0 {
		return nil, fmt.Errorf("pleg config: channelCapacity must not be negative, got %d", cfg.ChannelCapacity)
	}
	if cfg.RelistRequestCapacity < 0 {
		return nil, fmt.Errorf("pleg config: relistRequestCapacity must not be negative, got %d", cfg.RelistRequestCapacity)
	}
	if cfg.Registry == nil {
		cfg.Registry = metrics.NewRegistry("")
	}
	g := &GenericPLEG{
		runtime:     cfg.Runtime,
		cache:       cfg.Cache,
		clock:       cfg.Clock,
		eventCh:     make(chan *PodLifecycleEvent, cfg.ChannelCapacity),
		metrics:     newMetrics(cfg.Registry, cfg.PodRelistMetric),
		eventedGate: cfg.LegacyEvented,
		notify:      cfg.Notify,
		records:     make(map[types.UID]*podRecord),
		onDemand:    cfg.OnDemandRelist,
		requests:    make(chan relistRequest, cfg.RelistRequestCapacity),
	}
	g.loop = runner.NewPeriodic(cfg.Clock, g.relistPeriod, g.Relist)
	g.Update(RelistDuration{cfg.RelistPeriod, cfg.RelistThreshold})
	return g, nil
}

// validateDuration accepts any positive pair. A threshold below the period is allowed on
// purpose: it makes the health check fail between relists, which is how one rehearses
// PLEG alerts.
func validateDuration(d RelistDuration) error {
	if d.RelistPeriod <= 0 {
		return fmt.Errorf("relistPeriod must be positive, got %v", d.RelistPeriod)
	}
	if d.RelistThreshold <= 0 {
		return fmt.Errorf("relistThreshold must be positive, got %v", d.RelistThreshold)
	}
	return nil
}

// Records is how many pods the PLEG keeps a record for. Only the relisting loop changes
// them, so call it between steps (the virtual-time scheduler, leak checks).
func (g *GenericPLEG) Records() int { return len(g.records) }

// Name is the health check's name, as the kubelet registers it.
func (g *GenericPLEG) Name() string { return "PLEG" }

// Watch returns the event channel (one subscriber).
func (g *GenericPLEG) Watch() chan *PodLifecycleEvent { return g.eventCh }

// Update changes the relist period and threshold; the next relist keeps its schedule (the
// period applies from the end of the current one). See Restart for upstream's
// Stop/Update/Start.
func (g *GenericPLEG) Update(d RelistDuration) {
	g.period.Store(int64(d.RelistPeriod))
	g.threshold.Store(int64(d.RelistThreshold))
}

// Restart schedules the next relist now, as upstream's Stop + Start does (wait.Until relists
// at once), so a shortened period applies at once rather than after a 300s wait. A relist in
// flight goes on.
func (g *GenericPLEG) Restart() { g.loop.Trigger() }

// RelistDuration returns the current period and threshold.
func (g *GenericPLEG) RelistDuration() RelistDuration {
	return RelistDuration{time.Duration(g.period.Load()), time.Duration(g.threshold.Load())}
}

func (g *GenericPLEG) relistPeriod() time.Duration { return time.Duration(g.period.Load()) }

// Due is when the PLEG loop next has work: now when the relist in flight (global or of one
// pod) can go on or a pod relist is queued, else the next global relist; zero while a
// relist waits for the runtime.
func (g *GenericPLEG) Due(now time.Time) time.Time {
	if t := g.podRun; t != nil {
		if t.Ready() {
			return now
		}
		return time.Time{}
	}
	due := g.loop.Due(now)
	if !g.loop.Running() && len(g.requests) > 0 {
		return now
	}
	return due
}

// Wake is notified when the relist in flight can go on or a relist was asked for.
func (g *GenericPLEG) Wake() *runner.Signal { return g.loop.Wake() }

// Step is upstream's workerLoopIteration, one unit of work at a time: it goes on with the
// relist in flight, else starts the global relist if it is due, else the next queued pod
// relist. It returns as soon as that work finishes or has to wait for the runtime.
func (g *GenericPLEG) Step(ctx context.Context) {
	if g.podRun != nil {
		g.resumePodRun()
		return
	}
	now := g.clock.Now()
	if due := g.loop.Due(now); g.loop.Running() || (!due.IsZero() && !due.After(now)) {
		g.loop.Step(ctx)
		return
	}
	for {
		select {
		case req := <-g.requests:
			if g.servedSeq.Load() > req.seq {
				// A global relist that started after the request listed the runtime: served.
				continue
			}
			g.podRun = task.New(ctx, func(ctx context.Context) { g.relistPod(ctx, req.uid) })
			g.resumePodRun()
		default:
		}
		return
	}
}

func (g *GenericPLEG) resumePodRun() {
	if !g.podRun.Resume() {
		g.podRun.Waiting().OnDone(g.loop.Wake().Notify)
		return
	}
	g.podRun = nil
}

// Stop abandons the relist in flight, if any (daemon shutdown). Idempotent.
func (g *GenericPLEG) Stop() {
	g.loop.Stop()
	if t := g.podRun; t != nil {
		g.podRun = nil
		t.Stop()
	}
}

// relistRequest is one queued pod relist.
type relistRequest struct {
	uid types.UID
	// seq is the number of the last global relist started when the request was made.
	// Upstream compares the request's wall-clock time with the last relist's start; a count
	// orders them exactly, which simulate mode's virtual clock (many steps at one instant)
	// needs.
	seq uint64
}

// RequestRelist queues a relist of one pod (upstream's RequestRelist, PLEGOnDemandRelist):
// the kubelet asks for it after a sync that changed the runtime, the EventedPLEG after a
// container exit. A full queue drops the request with an error log; the next global relist
// covers the pod. Safe for concurrent use; a no-op with OnDemandRelist off.
func (g *GenericPLEG) RequestRelist(ctx context.Context, uid types.UID) {
	if !g.onDemand {
		return
	}
	select {
	case g.requests <- relistRequest{uid: uid, seq: g.relistSeq.Load()}:
		// The pod changed since it was last observed (that is why the relist was asked for):
		// a pod worker must wait for this relist, not count the older observation.
		g.cache.ClearObservedTime(uid)
		g.loop.Wake().Notify()
	default:
		klog.FromContext(ctx).Error(nil, "Relist request channel full; dropping relist request", "podUID", uid)
	}
}

// QueuedRelists is how many pod relists wait in the queue.
func (g *GenericPLEG) QueuedRelists() int { return len(g.requests) }

// relistPod is upstream's relistPod: list the one pod, compare it with its record as a
// global relist would (the same events, cache write and reinspection), and mark its cache
// entry observed now even if nothing changed, since no global timestamp covers it. A pod the
// runtime no longer has is left to the next global relist, as upstream (GetPod fails).
func (g *GenericPLEG) relistPod(ctx context.Context, uid types.UID) {
	logger := klog.FromContext(ctx)
	if v := logger.V(5); v.Enabled() {
		v.Info("GenericPLEG: Relisting Pod", "podUID", uid)
	}
	timestamp := g.clock.Now()
	defer func() {
		if g.metrics.podRelist != nil {
			g.metrics.podRelist.Observe(g.clock.Since(timestamp).Seconds())
		}
	}()
	pod, err := g.runtime.GetPod(ctx, uid)
	if err != nil {
		if interrupted(ctx, err) {
			logger.V(4).Info("GenericPLEG: Pod relist interrupted", "podUID", uid, "err", err)
			return
		}
		logger.Error(err, "GenericPLEG: Unable to retrieve pod", "podUID", uid)
		return
	}
	r := g.records[uid]
	if r == nil {
		// Not listed by a global relist yet: a record like setCurrent's, which the next
		// global relist finds in g.order (listed or not).
		r = &podRecord{uid: uid}
		g.records[uid] = r
		g.order = append(g.order, r)
	}
	g.inspect(ctx, logger, r, pod)
	g.cache.SetObservedTime(uid, timestamp)
}

// DiscardedEvents is how many events were dropped because the channel was full (by this
// PLEG and the evented one sharing its channel): pleg_discard_events' value.
func (g *GenericPLEG) DiscardedEvents() uint64 { return g.metrics.discarded.Load() }

// sent tells the channel's reader an event is waiting.
func (g *GenericPLEG) sent() {
	if g.notify != nil {
		g.notify()
	}
}

// Healthy reports an error before the first successful relist and when the last one is
// older than the threshold. It exports the last relist time as pleg_last_seen_seconds.
func (g *GenericPLEG) Healthy() (bool, error) {
	last, ok := g.relistTime()
	if !ok {
		return false, errors.New("pleg has yet to be successful")
	}
	g.metrics.lastSeen.Set(float64(last.Unix()))
	elapsed := g.clock.Since(last)
	if threshold := time.Duration(g.threshold.Load()); elapsed > threshold {
		return false, fmt.Errorf("pleg was last seen active %v ago; threshold is %v", elapsed, threshold)
	}
	return true, nil
}

// LastRelistTime is the start time of the last successful relist; ok is false before one.
func (g *GenericPLEG) LastRelistTime() (t time.Time, ok bool) { return g.relistTime() }

func (g *GenericPLEG) relistTime() (time.Time, bool) {
	if !g.relisted.Load() {
		return time.Time{}, false
	}
	return time.Unix(0, g.relistNanos.Load()), true
}

func (g *GenericPLEG) setRelistTime(t time.Time) {
	g.relistNanos.Store(t.UnixNano())
	g.relisted.Store(true)
}

// plegState is a container's state as relist compares it.
type plegState uint8

const (
	stateNonExistent plegState = iota
	stateRunning
	stateExited
	// stateUnknown covers created and unknown: the kubelet does not use "created".
	stateUnknown
)

func (s plegState) String() string {
	switch s {
	case stateRunning:
		return "running"
	case stateExited:
		return "exited"
	case stateUnknown:
		return "unknown"
	default:
		return "non-existent"
	}
}

// convertState maps a listed state. Upstream panics on a state it does not know; a
// simulator treats it as unknown instead.
func convertState(s container.State) plegState {
	switch s {
	case container.ContainerStateRunning:
		return stateRunning
	case container.ContainerStateExited:
		return stateExited
	default:
		return stateUnknown
	}
}

// appendEvents appends the events of one container's transition: the kubelet's table.
func appendEvents(events []*PodLifecycleEvent, pid types.UID, cid string, from, to plegState) []*PodLifecycleEvent {
	if from == to {
		return events
	}
	switch to {
	case stateRunning:
		return append(events, &PodLifecycleEvent{ID: pid, Type: ContainerStarted, Data: cid})
	case stateExited:
		return append(events, &PodLifecycleEvent{ID: pid, Type: ContainerDied, Data: cid})
	case stateUnknown:
		return append(events, &PodLifecycleEvent{ID: pid, Type: ContainerChanged, Data: cid})
	default: // non-existent
		if from == stateExited {
			// The death was reported before.
			return append(events, &PodLifecycleEvent{ID: pid, Type: ContainerRemoved, Data: cid})
		}
		return append(events,
			&PodLifecycleEvent{ID: pid, Type: ContainerDied, Data: cid},
			&PodLifecycleEvent{ID: pid, Type: ContainerRemoved, Data: cid})
	}
}

// ctrRecord is one container (or sandbox) of a pod as last reported. raw is the listed
// state: comparing it costs a pointer comparison when the runtime reuses its constants.
type ctrRecord struct {
	id    string
	raw   container.State
	state plegState
}

// podRecord is one pod's relist bookkeeping. old is what the events sent so far describe
// (containers then sandboxes, deduplicated).
type podRecord struct {
	uid types.UID
	old []ctrRecord
	// last is the listed pod old was taken from or last matched: the same pointer again
	// means the same containers in the same states.
	last *container.Pod
	gen  uint64 // the relist that listed it last
	// curIdx is the pod's index in the listing when gen is the current relist. An index, not
	// a pointer: a steady relist then writes no pointers (no GC write barriers).
	curIdx    int
	reinspect bool // the last status read failed, or one was asked for: inspect again even without changes
	dead      bool // removed from the records during this relist
	// inline backs old for typical pods (a sandbox and two containers), so the steady-state
	// comparison reads one block of memory per pod.
	inline [3]ctrRecord
}

// entry is the k-th of a pod's containers followed by its sandboxes (upstream treats
// sandboxes as containers).
func entry(p *container.Pod, k int) *container.Container {
	if k < len(p.Containers) {
		return p.Containers[k]
	}
	return p.Sandboxes[k-len(p.Containers)]
}

func entries(p *container.Pod) int { return len(p.Containers) + len(p.Sandboxes) }

// unchanged is the steady-state fast path: the pod lists the same containers in the same
// order and states as last reported.
func (r *podRecord) unchanged(p *container.Pod) bool {
	if p == r.last {
		return true
	}
	if entries(p) != len(r.old) {
		return false
	}
	k := 0
	for _, c := range p.Containers {
		if o := &r.old[k]; o.id != c.ID.ID || o.raw != c.State {
			return false
		}
		k++
	}
	for _, c := range p.Sandboxes {
		if o := &r.old[k]; o.id != c.ID.ID || o.raw != c.State {
			return false
		}
		k++
	}
	// Point at the current listing, so the record does not keep an old one alive.
	r.last = p
	return true
}

func (r *podRecord) oldIndex(id string, hint int) int {
	if hint < len(r.old) && r.old[hint].id == id {
		return hint
	}
	for i := range r.old {
		if r.old[i].id == id {
			return i
		}
	}
	return -1
}

// find returns the first entry of p with the id (trying position hint first), or -1.
func find(p *container.Pod, id string, hint int) int {
	n := entries(p)
	if hint < n && entry(p, hint).ID.ID == id {
		// Only the first occurrence counts; an earlier duplicate is rare enough to scan for.
		for k := 0; k < hint; k++ {
			if entry(p, k).ID.ID == id {
				return k
			}
		}
		return hint
	}
	for k := 0; k < n; k++ {
		if entry(p, k).ID.ID == id {
			return k
		}
	}
	return -1
}

// advance makes the current listing the reported state.
func (r *podRecord) advance(p *container.Pod) {
	r.last = p
	if r.old == nil {
		r.old = r.inline[:0]
	}
	r.old = r.old[:0]
	n := entries(p)
	for k := 0; k < n; k++ {
		c := entry(p, k)
		if r.oldIndex(c.ID.ID, len(r.old)) >= 0 {
			continue // a duplicate id: keep the first, as upstream's container set
		}
		r.old = append(r.old, ctrRecord{id: c.ID.ID, raw: c.State, state: convertState(c.State)})
	}
}

// computeEvents compares the record with the current listing (nil: the pod is gone) over
// the union of old and current containers, in upstream's order: old containers and
// sandboxes first, then new ones.
func (g *GenericPLEG) computeEvents(logger klog.Logger, r *podRecord, cur *container.Pod, events []*PodLifecycleEvent) []*PodLifecycleEvent {
	v4 := logger.V(4)
	log := v4.Enabled()
	for i := range r.old {
		o := &r.old[i]
		to := stateNonExistent
		if cur != nil {
			if k := find(cur, o.id, i); k >= 0 {
				to = convertState(entry(cur, k).State)
			}
		}
		if log && to != o.state {
			v4.Info("GenericPLEG", "podUID", r.uid, "containerID", o.id, "oldState", o.state, "newState", to)
		}
		events = appendEvents(events, r.uid, o.id, o.state, to)
	}
	if cur == nil {
		return events
	}
	n := entries(cur)
	for k := 0; k < n; k++ {
		c := entry(cur, k)
		if r.oldIndex(c.ID.ID, k) >= 0 || find(cur, c.ID.ID, k) != k {
			continue // reported above, or a duplicate of an earlier entry
		}
		to := convertState(c.State)
		if log {
			v4.Info("GenericPLEG", "podUID", r.uid, "containerID", c.ID.ID, "oldState", stateNonExistent, "newState", to)
		}
		events = appendEvents(events, r.uid, c.ID.ID, stateNonExistent, to)
	}
	return events
}

// Relist lists all pods, generates events for every container whose state changed since
// the last relist, refreshes the cache for the pods with events and sends the events. Step
// runs it as a task; it must not run twice at once.
func (g *GenericPLEG) Relist(ctx context.Context) {
	logger := klog.FromContext(ctx)
	if v := logger.V(5); v.Enabled() {
		v.Info("GenericPLEG: Relisting")
	}

	if last, ok := g.relistTime(); ok {
		g.metrics.relistInterval.Observe(g.clock.Since(last).Seconds())
	}
	timestamp := g.clock.Now()
	defer func() { g.metrics.relistDuration.Observe(g.clock.Since(timestamp).Seconds()) }()
	seq := g.relistSeq.Add(1)

	pods, err := g.runtime.GetPods(ctx, true)
	if err != nil {
		// The relist time stays put, so Healthy turns false once the threshold passes.
		if interrupted(ctx, err) {
			// Stopping (daemon shutdown): an interrupted listing is not a runtime problem.
			logger.V(4).Info("GenericPLEG: Relist interrupted", "err", err)
			return
		}
		logger.Error(err, "GenericPLEG: Unable to retrieve pods")
		return
	}
	g.setRelistTime(timestamp)
	g.servedSeq.Store(seq)

	g.setCurrent(pods)
	died := false
	for _, r := range g.order {
		var cur *container.Pod
		if r.gen == g.gen {
			cur = pods[r.curIdx]
		}
		g.inspect(ctx, logger, r, cur)
		died = died || r.dead
	}
	if died {
		g.compact()
	}

	// After every pod's entry is written: all cached data is now at least this fresh.
	g.cache.UpdateTime(timestamp)
}

// setCurrent marks the records of the listed pods (creating records for new pods) and puts
// g.order in listing order followed by the records of pods not listed. When the listing
// starts like the last one it only updates the records in place.
func (g *GenericPLEG) setCurrent(pods []*container.Pod) {
	g.gen++
	prev := g.order
	i := 0
	for ; i < len(pods) && i < len(prev) && (prev[i].last == pods[i] || prev[i].uid == pods[i].ID); i++ {
		prev[i].gen, prev[i].curIdx = g.gen, i
	}
	if i == len(pods) && i == len(prev) {
		return // the same pods in the same order: g.order stays
	}
	next := append(g.spare[:0], prev[:i]...)
	for ; i < len(pods); i++ {
		p := pods[i]
		var r *podRecord
		if i < len(prev) && prev[i].uid == p.ID {
			r = prev[i] // same position as last time: skip the map
		} else if r = g.records[p.ID]; r == nil {
			r = &podRecord{uid: p.ID}
			g.records[p.ID] = r
		}
		seen := r.gen == g.gen
		r.gen, r.curIdx = g.gen, i // a pod listed twice: the later entry wins, as upstream
		if !seen {
			next = append(next, r)
		}
	}
	for _, r := range prev {
		if r.gen != g.gen {
			next = append(next, r)
		}
	}
	clear(prev) // release the records the spare buffer would otherwise keep alive
	g.order, g.spare = next, prev[:0]
}

// compact drops the records deleted during this relist from g.order.
func (g *GenericPLEG) compact() {
	live := g.order[:0]
	for _, r := range g.order {
		if !r.dead {
			live = append(live, r)
		}
	}
	clear(g.order[len(live):])
	g.order = live
}

func (g *GenericPLEG) deleteRecord(r *podRecord) {
	r.dead, r.last = true, nil
	delete(g.records, r.uid)
}

// inspect handles one pod of a relist; cur is its listing, nil when it was not listed.
func (g *GenericPLEG) inspect(ctx context.Context, logger klog.Logger, r *podRecord, cur *container.Pod) {
	if cur != nil && !r.reinspect && r.unchanged(cur) {
		return
	}
	events := g.computeEvents(logger, r, cur, g.events[:0])
	defer func() { clear(events); g.events = events[:0] }()

	if len(events) == 0 && !r.reinspect {
		// The same containers in the same states, listed in another order (or the pod and
		// its containers are gone without a trace). Upstream keeps the old record; the two
		// are equivalent, and taking the new one keeps the next relist on the fast path.
		if cur == nil {
			g.deleteRecord(r)
		} else {
			r.advance(cur)
		}
		return
	}

	status, updated, err := g.updateCache(ctx, logger, cur, r.uid)
	if err != nil {
		// Keep the record as it is so the same changes are found again next relist.
		if v := logger.V(4); v.Enabled() {
			v.Error(err, "PLEG: Ignoring events for pod", "pod", klog.KRef(cur.Namespace, cur.Name))
		}
		r.reinspect = true
		r.last = nil // old no longer matches any listing: do not pin one
		return
	}
	if len(events) == 0 {
		// A reinspection without a state change (an in-place resize changed what the
		// runtime reports of a container): the pod is synced all the same, as upstream.
		events = append(events, &PodLifecycleEvent{ID: r.uid, Type: PodSync})
	}
	r.reinspect = false
	if g.eventedGate && !updated {
		// The cache holds a newer status from the event stream; upstream skips the pod
		// without advancing its record.
		r.last = nil
		return
	}
	if cur == nil {
		g.deleteRecord(r)
	} else {
		r.advance(cur)
	}

	for _, ev := range events {
		if ev.Type == ContainerChanged {
			continue // not reliable and not consumed, as upstream
		}
		select {
		case g.eventCh <- ev:
			g.sent()
		default:
			g.metrics.discard()
			logger.Error(nil, "Event channel is full, discard this relist() cycle event")
		}
		if ev.Type == ContainerDied && status != nil {
			if v := logger.V(2); v.Enabled() {
				cid := ev.Data.(string)
				for _, cs := range status.ContainerStatuses {
					if cs.ID.ID == cid {
						v.Info("Generic (PLEG): container finished", "podID", status.ID, "containerID", cid, "exitCode", cs.ExitCode)
						break
					}
				}
			}
		}
	}
}

// RequestReinspect asks the next relist to read pod uid's status again even if its
// containers' states did not change, and to sync it (upstream's RequestReinspect, after an
// in-place resize). Called from the node's owner, as Relist.
func (g *GenericPLEG) RequestReinspect(uid types.UID) {
	if r, ok := g.records[uid]; ok {
		r.reinspect = true
		r.last = nil
	}
}

// UpdateCache reads the pod's status and writes it to the cache; updated is false when the
// cache kept a newer status (EventedPLEG). The kubelet calls it after syncing a pod while
// EventedPLEG is in use.
func (g *GenericPLEG) UpdateCache(ctx context.Context, pod *container.Pod, pid types.UID) (updated bool, err error) {
	if pod == nil {
		return false, errors.New("update pod status cache: pod cannot be nil")
	}
	_, updated, err = g.updateCache(ctx, klog.FromContext(ctx), pod, pid)
	return updated, err
}

// updateCache refreshes the pod's cache entry, or deletes it when the pod is gone. A read
// error is stored with the status (pod workers see it) and returned.
func (g *GenericPLEG) updateCache(ctx context.Context, logger klog.Logger, pod *container.Pod, pid types.UID) (*container.PodStatus, bool, error) {
	if pod == nil {
		// The pod has no visible containers or sandboxes any more.
		if v := logger.V(4); v.Enabled() {
			v.Info("PLEG: Delete status for pod", "podUID", string(pid))
		}
		g.cache.Delete(pid)
		return nil, true, nil
	}
	// Upstream holds a mutex across the read so relist and UpdateCache write in timestamp
	// order. Here the read may wait for the runtime inside a task, and no lock is held
	// across a wait; with EventedPLEG on, the cache drops a write older than the one it has,
	// which is what the ordering protects.
	timestamp := g.clock.Now()
	status, err := g.runtime.GetPodStatus(ctx, pod.ID, pod.Name, pod.Namespace)
	if err != nil {
		err = fmt.Errorf("get status of pod %s/%s: %w", pod.Namespace, pod.Name, err)
		if interrupted(ctx, err) {
			// Stopping: not the pod's status, so nothing is cached or logged as an error.
			return nil, false, err
		}
		logger.Error(err, "PLEG: Write status", "pod", klog.KRef(pod.Namespace, pod.Name))
	} else {
		if v := logger.V(4); v.Enabled() {
			v.Info("PLEG: Write status", "pod", klog.KRef(pod.Namespace, pod.Name))
		}
		// Keep the pod IP across a teardown: the API shows a finished pod's IP.
		status.IPs = podIPs(g.cache, pid, status)
	}
	// While the event stream is in charge, the cache orders writes by the runtime's own
	// timestamps (KEP-3386); a status without one keeps the read time.
	if g.eventedGate && g.eventedInUse.Load() && status != nil && !status.TimeStamp.IsZero() {
		timestamp = status.TimeStamp
	}
	return status, g.cache.Set(pod.ID, status, err, timestamp), err
}

// podIPs keeps the cached IPs when the new status has none and no ready sandbox.
func podIPs(cache container.Cache, pid types.UID, status *container.PodStatus) []string {
	if len(status.IPs) != 0 {
		return status.IPs
	}
	old, err := cache.Get(pid)
	if err != nil || old == nil || len(old.IPs) == 0 {
		return nil
	}
	for _, s := range status.SandboxStatuses {
		if s != nil && s.State == cri.SandboxReady {
			return status.IPs
		}
	}
	return old.IPs
}

// interrupted reports whether err is the work being stopped (the daemon shutting down, the
// loop abandoning its task) rather than a runtime failure.
func interrupted(ctx context.Context, err error) bool {
	return ctx.Err() != nil || errors.Is(err, task.ErrStopped)
}
