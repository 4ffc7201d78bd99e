package podsource

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/pkg/events"
	"github.com/minikubelet/minikubelet/pkg/kubetypes"
)

// DefaultUpdatesBuffer is the capacity of the merged updates channel, as upstream's PodConfig.
const DefaultUpdatesBuffer = 50

// MergerConfig configures a Merger.
type MergerConfig struct {
	// Clock stamps the kubernetes.io/config.seen annotation of new pods. Default: real clock.
	Clock clock.PassiveClock
	// Recorder receives FailedValidation events for duplicate pod names within a source. Optional.
	Recorder events.Recorder
	// Sources are the sources that must each deliver a snapshot before SeenAllSources is
	// true (housekeeping waits for it). Default: the file source.
	Sources []string
	// BufferSize is the capacity of Updates(). Default DefaultUpdatesBuffer.
	BufferSize int
	// Notify is called after updates were put on Updates(), so the reader (the sync loop's
	// Wake) looks at them. Optional.
	Notify func()
}

// BackpressurePoll is how often a merger whose updates channel is full looks again for
// room: the channel's reader does not tell it when it takes an update. Upstream blocks the
// source instead; a source here never waits, so its updates queue in order in the merger.
const BackpressurePoll = 10 * time.Millisecond

// Merger merges the pods of every source into one store and turns each change into
// incremental updates, like upstream's PodConfig in PodConfigNotificationIncremental mode:
// REMOVE (gone from the source), ADD (new UID), UPDATE (spec, labels, deletion fields or
// annotations other than the kubelet's own changed), DELETE (the change set a deletion
// timestamp) and RECONCILE (only the status changed). Merge/Apply are the step and return
// the updates; Push also delivers them, in order, on Updates(). Not safe for concurrent
// use: the node's owner is its one caller (the API pod watch hands its pods over through
// the owner).
type Merger struct {
	cfg     MergerConfig
	updates chan kubetypes.PodUpdate

	backlog []kubetypes.PodUpdate // merged updates waiting for room on the channel, in order

	pods map[string]map[types.UID]*v1.Pod // source -> uid -> pod
	seen sets.Set[string]                 // sources that delivered a snapshot
}

// NewMerger validates cfg and fills its defaults.
func NewMerger(cfg MergerConfig) (*Merger, error) {
	if cfg.BufferSize < 0 {
		return nil, fmt.Errorf("invalid merger config: bufferSize %d must not be negative", cfg.BufferSize)
	}
	if cfg.BufferSize == 0 {
		cfg.BufferSize = DefaultUpdatesBuffer
	}
	if cfg.Clock == nil {
		// No silent real clock: every loop must be able to run on a fake one.
		return nil, errors.New("pod config merger: Config.Clock is required")
	}
	if len(cfg.Sources) == 0 {
		cfg.Sources = []string{kubetypes.FileSource}
	}
	for _, src := range cfg.Sources {
		if src == "" || src == kubetypes.AllSource {
			return nil, fmt.Errorf("invalid merger config: source name %q is reserved", src)
		}
	}
	return &Merger{
		cfg:     cfg,
		updates: make(chan kubetypes.PodUpdate, cfg.BufferSize),
		pods:    map[string]map[types.UID]*v1.Pod{},
		seen:    sets.New[string](),
	}, nil
}

// Updates is the config channel the sync loop reads.
func (m *Merger) Updates() <-chan kubetypes.PodUpdate { return m.updates }

// Merge takes a full snapshot of source's pods (a SET) and returns the resulting updates in
// upstream's delivery order: REMOVE, ADD, UPDATE, DELETE, RECONCILE. The first snapshot of a
// source with nothing to add still yields an empty ADD so the sync loop marks the source seen.
// Nothing is sent; see Push.
func (m *Merger) Merge(source string, pods []*v1.Pod) []kubetypes.PodUpdate {
	return m.Apply(kubetypes.PodUpdate{Pods: pods, Op: kubetypes.SET, Source: source})
}

// Apply merges one update of any kind from a source (SET is a snapshot; ADD, UPDATE and
// DELETE upsert; REMOVE drops the listed UIDs) and returns the resulting updates. The
// incoming pods are copied. The returned pods are the merger's own, shared with the
// receiver, who may keep them but must never modify them: the merger never changes a pod it
// has handed out (an update replaces it with a changed copy), so at 10,000 pods the node
// holds one copy of each pod instead of two (upstream's pod config shares them too).
func (m *Merger) Apply(change kubetypes.PodUpdate) []kubetypes.PodUpdate {
	source := change.Source
	seenBefore := m.seen.Has(source)

	var adds, updates, deletes, removes, reconciles []*v1.Pod
	pods := m.pods[source]
	if pods == nil {
		pods = map[types.UID]*v1.Pod{}
	}
	upsert := func(newPods []*v1.Pod, oldPods, into map[types.UID]*v1.Pod) {
		for _, ref := range m.filterDuplicates(newPods, source) {
			existing, found := oldPods[ref.UID]
			if found && !podsDifferSemantically(existing, ref) {
				// The common case of a periodic snapshot: nothing to copy unless the status moved.
				if reflect.DeepEqual(&existing.Status, &ref.Status) {
					into[ref.UID] = existing
					continue
				}
				if ref.Annotations[kubetypes.ConfigSourceAnnotationKey] == source && sameLocalAnnotations(existing, ref) {
					// The source annotated its pod as the one handed out before
					// (AnnotateSourcePod, the API server's pods): it is handed out as it
					// is, with nothing copied and nothing of the previous version kept.
					into[ref.UID] = ref
					reconciles = append(reconciles, ref)
					continue
				}
				// Copy on write: the pod handed out before is the receiver's to read. A
				// shallow copy is enough, as nothing here changes what the fields point to;
				// the spec, equal, is taken from ref too, so that the source's previous
				// object is not kept alive for it (a deep copy per status change held 89 MB
				// at 10,000 pods, docs/scale.md).
				shallow := *existing
				updated := &shallow
				updated.Spec, updated.Status = ref.Spec, ref.Status
				into[ref.UID] = updated
				reconciles = append(reconciles, updated)
				continue
			}
			if !found && ref.Annotations[kubetypes.ConfigSourceAnnotationKey] == source && ref.Annotations[kubetypes.ConfigFirstSeenAnnotationKey] != "" {
				// The source set the kubelet's annotations itself (the file source does, for
				// the pods it keeps): nothing to add, nothing to copy.
				into[ref.UID] = ref
				adds = append(adds, ref)
				continue
			}
			// Never change the caller's pod: a shallow copy with annotations of its own. The
			// rest (spec, labels, status) is shared with the source, which never changes a pod
			// it has handed out (the file source's parse cache, the informer's cache), so a
			// static pod costs one copy, not two.
			shared := *ref
			shared.Annotations = make(map[string]string, len(ref.Annotations)+len(localAnnotations))
			for k, v := range ref.Annotations {
				shared.Annotations[k] = v
			}
			ref = &shared
			ref.Annotations[kubetypes.ConfigSourceAnnotationKey] = source
			if found {
				shallow := *existing // copy on write, as above: checkAndUpdatePod only assigns fields
				updated := &shallow
				into[ref.UID] = updated
				needUpdate, needReconcile, needDelete := checkAndUpdatePod(updated, ref)
				switch {
				case needUpdate:
					updates = append(updates, updated)
				case needReconcile:
					reconciles = append(reconciles, updated)
				case needDelete:
					deletes = append(deletes, updated)
				}
				continue
			}
			ref.Annotations[kubetypes.ConfigFirstSeenAnnotationKey] = m.cfg.Clock.Now().Format(time.RFC3339Nano)
			into[ref.UID] = ref
			adds = append(adds, ref)
		}
	}

	switch change.Op {
	case kubetypes.ADD, kubetypes.UPDATE, kubetypes.DELETE:
		upsert(change.Pods, pods, pods)
	case kubetypes.REMOVE:
		for _, p := range change.Pods {
			if existing, found := pods[p.UID]; found {
				delete(pods, p.UID)
				removes = append(removes, existing)
			}
		}
	case kubetypes.SET:
		m.seen.Insert(source)
		old := pods
		pods = make(map[types.UID]*v1.Pod, len(change.Pods))
		upsert(change.Pods, old, pods)
		for uid, existing := range old {
			if _, found := pods[uid]; !found {
				removes = append(removes, existing)
			}
		}
		// Map order is random; keep REMOVE deterministic for tests and simulate mode.
		sort.Slice(removes, func(i, j int) bool { return removes[i].UID < removes[j].UID })
	default:
		klog.ErrorS(nil, "Received invalid update type", "operation", change.Op, "source", source)
	}
	m.pods[source] = pods
	firstSet := !seenBefore && m.seen.Has(source)

	var out []kubetypes.PodUpdate
	emit := func(op kubetypes.PodOperation, ps []*v1.Pod, force bool) {
		if len(ps) > 0 || force {
			out = append(out, kubetypes.PodUpdate{Pods: ps, Op: op, Source: source})
		}
	}
	emit(kubetypes.REMOVE, removes, false)
	emit(kubetypes.ADD, adds, false)
	emit(kubetypes.UPDATE, updates, false)
	emit(kubetypes.DELETE, deletes, false)
	emit(kubetypes.ADD, nil, firstSet && len(adds) == 0 && len(updates) == 0 && len(deletes) == 0)
	emit(kubetypes.RECONCILE, reconciles, false)
	if len(out) > 0 {
		klog.V(4).InfoS("Merged pod source change", "source", source, "operation", change.Op, "add", len(adds), "update", len(updates),
			"delete", len(deletes), "remove", len(removes), "reconcile", len(reconciles))
	}
	return out
}

// Push merges a snapshot and puts the resulting updates on Updates() in merge order. It
// never waits: what does not fit waits in the merger, in order, and goes out at the next
// Push or Step (see Due). The error is for SnapshotSink; a merger never fails a push.
func (m *Merger) Push(_ context.Context, source string, pods []*v1.Pod) error {
	m.backlog = append(m.backlog, m.Merge(source, pods)...)
	sent := m.flush()
	if sent && m.cfg.Notify != nil {
		m.cfg.Notify()
	}
	return nil
}

// flush moves what fits from the backlog to the channel, in merge order.
func (m *Merger) flush() (sent bool) {
	for len(m.backlog) > 0 {
		select {
		case m.updates <- m.backlog[0]:
			m.backlog[0] = kubetypes.PodUpdate{}
			m.backlog = m.backlog[1:]
			sent = true
		default:
			return sent
		}
	}
	m.backlog = nil
	return sent
}

// Due is when updates waiting for room on the channel should be tried again: every
// BackpressurePoll while there are any; zero otherwise.
func (m *Merger) Due(now time.Time) time.Time {
	if len(m.backlog) == 0 {
		return time.Time{}
	}
	if len(m.updates) < cap(m.updates) {
		return now
	}
	return now.Add(BackpressurePoll)
}

// Step sends what fits of the waiting updates.
func (m *Merger) Step(context.Context) {
	sent := m.flush()
	if sent && m.cfg.Notify != nil {
		m.cfg.Notify()
	}
}

// SeenAllSources reports whether every configured source has delivered a snapshot here and
// the sync loop has seen an update from each (seen holds the sources it saw). Housekeeping
// waits for it so it never kills pods of a source that has not reported yet.
func (m *Merger) SeenAllSources(seen sets.Set[string]) bool {
	for _, src := range m.cfg.Sources {
		if !m.seen.Has(src) || !seen.Has(src) {
			return false
		}
	}
	return true
}

// Pods returns a copy of every merged pod, sorted by source then UID.
func (m *Merger) Pods() []*v1.Pod {
	var out []*v1.Pod
	srcs := make([]string, 0, len(m.pods))
	for s := range m.pods {
		srcs = append(srcs, s)
	}
	sort.Strings(srcs)
	for _, s := range srcs {
		start := len(out)
		for _, p := range m.pods[s] {
			out = append(out, p.DeepCopy())
		}
		part := out[start:]
		sort.Slice(part, func(i, j int) bool { return part[i].UID < part[j].UID })
	}
	return out
}

// filterDuplicates drops pods whose namespace/name an earlier pod of the same change already
// uses (upstream filterInvalidPods). The file source refuses such files itself; this guards
// every other source.
func (m *Merger) filterDuplicates(pods []*v1.Pod, source string) []*v1.Pod {
	names := make(map[string]bool, len(pods))
	out := make([]*v1.Pod, 0, len(pods))
	for i, pod := range pods {
		full := pod.Name + "_" + pod.Namespace
		if names[full] {
			klog.InfoS("Pod failed validation due to duplicate pod name, ignoring", "index", i, "pod", klog.KObj(pod), "source", source)
			if m.cfg.Recorder != nil {
				m.cfg.Recorder.Eventf(events.PodRef(pod), v1.EventTypeWarning, EventFailedValidation,
					"Error validating pod %s_%s(%s) from %s due to duplicate pod name %q, ignoring", pod.Name, pod.Namespace, pod.UID, source, pod.Name)
			}
			continue
		}
		names[full] = true
		out = append(out, pod)
	}
	return out
}

// AnnotateSourcePod sets on pod, a source's own and not handed out yet, the annotations the
// merger would set on a copy of it: its source, and when it was first seen, now or, when
// old is an earlier version of the same pod from the same source, old's. The merger then
// keeps the source's pod itself when it first sees it and at each change of its status,
// instead of a copy each time (the API server's source does this on its watch's pods, as
// upstream's config sets them on the informer's pods: 30 MB of copies at 10,000 pods).
func AnnotateSourcePod(pod, old *v1.Pod, source string, now time.Time) {
	seen := ""
	if old != nil && old.UID == pod.UID && old.Annotations[kubetypes.ConfigSourceAnnotationKey] == source {
		seen = old.Annotations[kubetypes.ConfigFirstSeenAnnotationKey]
	}
	if seen == "" {
		seen = now.Format(time.RFC3339Nano)
	}
	if pod.Annotations == nil {
		pod.Annotations = make(map[string]string, 2)
	}
	pod.Annotations[kubetypes.ConfigSourceAnnotationKey] = source
	pod.Annotations[kubetypes.ConfigFirstSeenAnnotationKey] = seen
}

// sameLocalAnnotations: a and b carry the same kubelet annotations.
func sameLocalAnnotations(a, b *v1.Pod) bool {
	for _, k := range localAnnotations {
		if a.Annotations[k] != b.Annotations[k] {
			return false
		}
	}
	return true
}

// Annotations the kubelet itself sets; a change in them is not a change of the pod.
var localAnnotations = []string{
	kubetypes.ConfigSourceAnnotationKey,
	kubetypes.ConfigMirrorAnnotationKey,
	kubetypes.ConfigFirstSeenAnnotationKey,
}

func isLocalAnnotation(k string) bool {
	for _, l := range localAnnotations {
		if k == l {
			return true
		}
	}
	return false
}

// annotationsEqual compares two annotation maps ignoring the kubelet's local annotations.
func annotationsEqual(existing, candidate map[string]string) bool {
	for k, v := range candidate {
		if isLocalAnnotation(k) {
			continue
		}
		if ev, ok := existing[k]; !ok || ev != v {
			return false
		}
	}
	for k := range existing {
		if isLocalAnnotation(k) {
			continue
		}
		if _, ok := candidate[k]; !ok {
			return false
		}
	}
	return true
}

// The specs and statuses are compared through pointers: a spec passed by value is copied
// into the interface, 1 KB a compare, at every watch event of a pod.
func podsDifferSemantically(existing, ref *v1.Pod) bool {
	return !(reflect.DeepEqual(&existing.Spec, &ref.Spec) &&
		reflect.DeepEqual(existing.Labels, ref.Labels) &&
		reflect.DeepEqual(existing.DeletionTimestamp, ref.DeletionTimestamp) &&
		reflect.DeepEqual(existing.DeletionGracePeriodSeconds, ref.DeletionGracePeriodSeconds) &&
		annotationsEqual(existing.Annotations, ref.Annotations))
}

// checkAndUpdatePod folds ref into existing and says what kind of change it was: an update
// (meaningful change), a graceful delete (meaningful change that sets a deletion timestamp),
// or a reconcile (only the status changed). At most one is true.
func checkAndUpdatePod(existing, ref *v1.Pod) (needUpdate, needReconcile, needGracefulDelete bool) {
	if !podsDifferSemantically(existing, ref) {
		if !reflect.DeepEqual(&existing.Status, &ref.Status) {
			existing.Status = ref.Status
			needReconcile = true
		}
		return
	}
	// The first-seen time is the kubelet's own; an update keeps it.
	ref.Annotations[kubetypes.ConfigFirstSeenAnnotationKey] = existing.Annotations[kubetypes.ConfigFirstSeenAnnotationKey]
	existing.Spec = ref.Spec
	existing.Labels = ref.Labels
	existing.DeletionTimestamp = ref.DeletionTimestamp
	existing.DeletionGracePeriodSeconds = ref.DeletionGracePeriodSeconds
	existing.Generation = ref.Generation // what the status's observedGeneration reports
	existing.Status = ref.Status
	annotations := make(map[string]string, len(ref.Annotations)+len(localAnnotations))
	for k, v := range ref.Annotations {
		annotations[k] = v
	}
	for _, k := range localAnnotations {
		if v, ok := existing.Annotations[k]; ok {
			annotations[k] = v
		}
	}
	existing.Annotations = annotations
	if ref.DeletionTimestamp != nil {
		needGracefulDelete = true
	} else {
		needUpdate = true
	}
	return
}
