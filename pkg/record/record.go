package record

import (
	"bytes"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/yaml"

	"github.com/minikubelet/minikubelet/pkg/runtime/fault"
)

// Options describe the node being recorded: what the scenario's header says.
type Options struct {
	// Path is the file written (created or truncated).
	Path string
	// MaxBytes bounds the file: the step that would pass it ends the recording.
	MaxBytes int64
	// Clock is the node's; the recording's T+0 is its time at Open.
	Clock clock.PassiveClock
	// Node is the node's name.
	Node string
	// Args are the daemon flags the replay runs with (config.ReplayArgs).
	Args []string
	// Config is the content of the --config file, or empty.
	Config string
	// Seed is the runtime's seed (the replay's random choices follow it).
	Seed int64
	// Cluster: the node joined a cluster; the replay runs against simulate's in-process API.
	Cluster bool
	// Logger reports the end of a recording cut short.
	Logger klog.Logger
}

// Recorder appends steps to a scenario file as inputs arrive. Its methods are safe for
// concurrent use (the edges call some of them) and do nothing once the recording ended.
type Recorder struct {
	opts  Options
	start time.Time

	mu          sync.Mutex
	f           *os.File
	written     int64
	last        time.Duration     // the last step's offset: steps stay in time order
	files       map[string]uint64 // manifest file name -> content hash, as last recorded
	pods        map[types.UID]recordedPod
	objects     map[string]uint64 // kind/namespace/name -> hash of what was last recorded
	ended       bool              // the size limit was reached, or Close ran
	tailWritten bool
	endAt       time.Duration
	err         error
}

type recordedPod struct {
	ref        objectRef
	generation int64
	deleting   bool
}

type objectRef struct {
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
}

// Open creates the file and writes the scenario's header.
func Open(opts Options) (*Recorder, error) {
	f, err := os.Create(opts.Path)
	if err != nil {
		return nil, fmt.Errorf("--record: %w", err)
	}
	r := &Recorder{opts: opts, start: opts.Clock.Now(), f: f, files: map[string]uint64{}, pods: map[types.UID]recordedPod{}, objects: map[string]uint64{}}
	header := map[string]any{
		"name":        "recorded-" + opts.Node,
		"description": fmt.Sprintf("Recorded by minikubelet --record from node %s, started %s.", opts.Node, r.start.UTC().Format(time.RFC3339)),
		"seed":        opts.Seed,
	}
	if len(opts.Args) > 0 {
		header["args"] = opts.Args
	}
	if opts.Config != "" {
		header["config"] = opts.Config
	}
	if opts.Cluster {
		header["cluster"] = true
	}
	out, err := yaml.Marshal(header)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("--record: %w", err)
	}
	var b bytes.Buffer
	b.WriteString("# A flight recording: replay it with `minikubelet simulate -f " + filepath.Base(opts.Path) + "`.\n")
	b.WriteString("# Its duration is written when the recording ends.\n")
	b.Write(out)
	b.WriteString("steps:\n")
	if err := r.write(b.Bytes()); err != nil {
		f.Close()
		return nil, err
	}
	return r, nil
}

// ManifestRead records a manifest file's content as the node read it (a write step), unless
// the recording already holds that content for the file.
func (r *Recorder) ManifestRead(name string, data []byte) {
	r.stepOnce(r.files, name, data, map[string]any{"write": map[string]string{name: string(data)}})
}

// stepOnce writes step unless seen[key] already holds content's hash, and remembers it
// once written.
func (r *Recorder) stepOnce(seen map[string]uint64, key string, content []byte, step map[string]any) {
	r.stepOnceAt(seen, key, content, step, time.Time{})
}

// stepOnceAt is stepOnce at the instant at (zero: now).
func (r *Recorder) stepOnceAt(seen map[string]uint64, key string, content []byte, step map[string]any, at time.Time) {
	h := fnv.New64a()
	h.Write(content)
	sum := h.Sum64()
	r.mu.Lock()
	defer r.mu.Unlock()
	if prev, ok := seen[key]; ok && prev == sum {
		return
	}
	if r.stepAt(step, at) {
		seen[key] = sum
	}
}

// ManifestsListed records the removal of every recorded file not in names, the files the
// node found at a listing of its manifest directory.
func (r *Recorder) ManifestsListed(names []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.files) == 0 {
		return
	}
	listed := make(map[string]struct{}, len(names))
	for _, n := range names {
		listed[n] = struct{}{}
	}
	var gone []string
	for name := range r.files {
		if _, ok := listed[name]; !ok {
			gone = append(gone, name)
		}
	}
	if len(gone) == 0 {
		return
	}
	slices.Sort(gone)
	if r.step(map[string]any{"remove": gone}) {
		for _, name := range gone {
			delete(r.files, name)
		}
	}
}

// FaultAdded records a fault the runtime accepted, with the ID it was given, so that a
// recorded clearFault names it in the replay too.
func (r *Recorder) FaultAdded(spec fault.Spec) {
	r.locked(map[string]any{"fault": spec})
}

// FaultCleared records the removal of one fault; FaultsCleared, of every fault.
func (r *Recorder) FaultCleared(id string) { r.locked(map[string]any{"clearFault": id}) }

// FaultsCleared records the removal of every fault.
func (r *Recorder) FaultsCleared() { r.locked(map[string]any{"clearFaults": true}) }

// Shutdown records the node shutdown signal.
func (r *Recorder) Shutdown() { r.locked(map[string]any{"shutdown": true}) }

// APIPods records what changed in the API server's pods bound to the node (the whole set,
// as the pod watch sees it, mirror pods left out): a new pod or a new generation of one is
// applied, a pod being deleted or gone is deleted.
func (r *Recorder) APIPods(pods []*v1.Pod) {
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := map[types.UID]bool{}
	var apply []*v1.Pod
	var del []objectRef
	for _, p := range pods {
		seen[p.UID] = true
		ref := objectRef{Kind: "Pod", Name: p.Name, Namespace: p.Namespace}
		prev, known := r.pods[p.UID]
		switch {
		case p.DeletionTimestamp != nil:
			if known && !prev.deleting {
				del = append(del, ref)
				prev.deleting = true
				r.pods[p.UID] = prev
			}
		case !known || prev.generation != p.Generation:
			apply = append(apply, p)
			r.pods[p.UID] = recordedPod{ref: ref, generation: p.Generation}
		}
	}
	for uid, prev := range r.pods {
		if !seen[uid] {
			if !prev.deleting {
				del = append(del, prev.ref)
			}
			delete(r.pods, uid)
		}
	}
	if len(apply) > 0 {
		docs := make([]string, 0, len(apply))
		for _, p := range apply {
			out, err := yaml.Marshal(specOf(p))
			if err != nil {
				continue
			}
			docs = append(docs, string(out))
		}
		r.step(map[string]any{"apply": strings.Join(docs, "---\n")})
	}
	if len(del) > 0 {
		slices.SortFunc(del, func(a, b objectRef) int {
			return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
		})
		r.step(map[string]any{"delete": del})
	}
}

// Redacted is what a recorded Secret holds in place of each value: a recording is meant to
// be attached to bug reports.
const Redacted = "redacted"

// APIObject records a ConfigMap or a Secret the node read from the API server (for its
// pods' volumes and environment) as an apply, unless the recording holds it as it is. A
// Secret's keys are kept and each value is Redacted. Other objects are ignored.
//
// The step is at began, when the read started (or at the last step, if that is later): the
// sync that waited for the object needed it then, and a replay, whose reads take no time,
// must hold it by then.
func (r *Recorder) APIObject(obj any, began time.Time) {
	var key string
	var doc map[string]any
	switch o := obj.(type) {
	case *v1.ConfigMap:
		key = "ConfigMap/" + o.Namespace + "/" + o.Name
		doc = map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": metaOf(o.ObjectMeta)}
		if len(o.Data) > 0 {
			doc["data"] = o.Data
		}
		if len(o.BinaryData) > 0 {
			doc["binaryData"] = o.BinaryData
		}
	case *v1.Secret:
		key = "Secret/" + o.Namespace + "/" + o.Name
		data := make(map[string][]byte, len(o.Data))
		for k := range o.Data {
			data[k] = []byte(Redacted)
		}
		doc = map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": metaOf(o.ObjectMeta), "data": data}
		if o.Type != "" {
			doc["type"] = o.Type
		}
	default:
		return
	}
	out, err := yaml.Marshal(doc)
	if err != nil {
		return
	}
	r.stepOnceAt(r.objects, key, out, map[string]any{"apply": string(out)}, began)
}

func metaOf(m metav1.ObjectMeta) map[string]any {
	meta := map[string]any{"name": m.Name, "namespace": m.Namespace}
	if len(m.Labels) > 0 {
		meta["labels"] = m.Labels
	}
	return meta
}

// specOf is what a user would apply to make p: its name, namespace, labels, annotations and
// owners, and its spec; nothing the API server fills in, no status.
func specOf(p *v1.Pod) map[string]any {
	meta := map[string]any{"name": p.Name, "namespace": p.Namespace}
	if len(p.Labels) > 0 {
		meta["labels"] = p.Labels
	}
	if len(p.Annotations) > 0 {
		meta["annotations"] = p.Annotations
	}
	if len(p.OwnerReferences) > 0 {
		meta["ownerReferences"] = p.OwnerReferences
	}
	return map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": p.Spec}
}

// Close ends the recording at now: it writes the scenario's duration.
func (r *Recorder) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		return r.err
	}
	end := r.endAt
	if !r.ended {
		end = r.offset(time.Time{})
	}
	r.ended = true
	r.writeTail(end)
	if err := r.f.Close(); err != nil && r.err == nil {
		r.err = fmt.Errorf("--record: %w", err)
	}
	r.f = nil
	return r.err
}

func (r *Recorder) locked(step map[string]any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.step(step)
}

// offset is at (zero: now) as the scenario's time: from T+0, to the millisecond, never
// before the last step.
func (r *Recorder) offset(when time.Time) time.Duration {
	if when.IsZero() {
		when = r.opts.Clock.Now()
	}
	at := when.Sub(r.start).Truncate(time.Millisecond)
	return max(at, r.last)
}

// step appends one step at the current instant and reports whether it was written: at the
// size limit the recording ends instead, closed at the last instant it holds.
func (r *Recorder) step(step map[string]any) bool { return r.stepAt(step, time.Time{}) }

// stepAt is step at the instant when (zero: now).
func (r *Recorder) stepAt(step map[string]any, when time.Time) bool {
	if r.ended || r.f == nil {
		return false
	}
	at := r.offset(when)
	out, err := yaml.Marshal(step)
	if err != nil {
		r.err = fmt.Errorf("--record: %w", err)
		return false
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "- at: %s\n", at)
	for _, line := range strings.SplitAfter(strings.TrimSuffix(string(out), "\n"), "\n") {
		b.WriteString("  ")
		b.WriteString(line)
	}
	b.WriteString("\n")
	if r.written+int64(b.Len())+tailRoom > r.opts.MaxBytes {
		r.ended, r.endAt = true, at
		r.opts.Logger.Info("Flight recording ended: the file reached --record-max-bytes; the node goes on", "file", r.opts.Path, "maxBytes", r.opts.MaxBytes, "at", at)
		r.writeTail(at)
		return false
	}
	if err := r.write(b.Bytes()); err != nil {
		return false
	}
	r.last = at
	return true
}

// tailRoom is kept for the duration line at the end.
const tailRoom = 128

func (r *Recorder) writeTail(end time.Duration) {
	if r.f == nil || r.tailWritten {
		return
	}
	r.tailWritten = true
	_ = r.write([]byte(fmt.Sprintf("duration: %s\n", end)))
}

func (r *Recorder) write(b []byte) error {
	n, err := r.f.Write(b)
	r.written += int64(n)
	if err != nil && r.err == nil {
		r.err = fmt.Errorf("--record %s: %w", r.opts.Path, err)
	}
	return err
}
