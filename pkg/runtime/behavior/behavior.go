package behavior

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"sort"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/minikubelet/minikubelet/pkg/quantity"
)

// AnnotationPrefix starts the pod annotation that scripts one container:
// "minikubelet.io/behavior.<container-name>: runFor=30s,exitCode=1".
const AnnotationPrefix = "minikubelet.io/behavior."

// AnnotationKey returns the behaviour annotation key for a container.
func AnnotationKey(containerName string) string { return AnnotationPrefix + containerName }

// ContainerTypeAnnotation is the container label (or annotation) with which the kubelet tells
// the runtime what role a container plays, so that an unscripted init container completes
// while an unscripted app container or sidecar runs until stopped. A missing value means app.
const ContainerTypeAnnotation = "io.kubernetes.container.type"

// Values of ContainerTypeAnnotation.
const (
	ContainerTypeInit = "init"
	// ContainerTypeSidecar is a restartable init container (restartPolicy: Always).
	ContainerTypeSidecar = "sidecar"
	ContainerTypeApp     = "app"
)

// Keys of the annotation value.
const (
	KeyRunFor      = "runFor"
	KeyExitCode    = "exitCode"
	KeyStartDelay  = "startDelay"
	KeyPullDelay   = "pullDelay"
	KeyPullError   = "pullError"
	KeyOOMAfter    = "oomAfter"
	KeyStopDelay   = "stopDelay"
	KeyMemoryUsage = "memoryUsage"
	// Usage keys: what the running container consumes (stats, resource metrics, pressure).
	KeyCPUUsage     = "cpuUsage"
	KeyMemoryGrowth = "memoryGrowth"
	KeyDiskUsage    = "diskUsage"
	KeyDiskGrowth   = "diskGrowth"
	// Log keys: what the container prints (kubectl logs).
	KeyLogEvery = "logEvery"
	KeyLogLine  = "logLine"
	// Probe keys: what the container answers to its probes (a container with none passes
	// every probe).
	KeyReadinessFailFor  = "readinessFailFor"
	KeyLivenessFailAfter = "livenessFailAfter"
	KeyStartupFailFor    = "startupFailFor"
	KeyProbeDelay        = "probeDelay"
)

// Keys lists every key the annotation accepts, in documentation order.
var Keys = []string{KeyRunFor, KeyExitCode, KeyStartDelay, KeyPullDelay, KeyPullError, KeyOOMAfter, KeyStopDelay, KeyMemoryUsage,
	KeyCPUUsage, KeyMemoryGrowth, KeyDiskUsage, KeyDiskGrowth, KeyLogEvery, KeyLogLine,
	KeyReadinessFailFor, KeyLivenessFailAfter, KeyStartupFailFor, KeyProbeDelay}

// Behavior is one container's script. The zero value is "no instructions": an app container
// runs until stopped, an init container completes after the runtime's default init duration.
// Behavior is comparable.
type Behavior struct {
	// RunFor is how long the container runs before it exits on its own (HasRunFor says it was given).
	RunFor    time.Duration
	HasRunFor bool
	// ExitCode is the code of that exit (default 0). Given without runFor, an app container or
	// sidecar exits with it right after starting and an init container after the default init
	// duration.
	ExitCode    int32
	HasExitCode bool
	// StartDelay keeps a started container CREATED this long before it is RUNNING.
	StartDelay time.Duration
	// PullDelay makes pulling the container's image take this long.
	PullDelay time.Duration
	// PullError makes pulling the container's image fail with this reason (e.g. ErrImagePull).
	PullError string
	// OOMAfter kills the running container with exit code 137, reason OOMKilled, after this long.
	OOMAfter    time.Duration
	HasOOMAfter bool
	// StopDelay is how long the container ignores SIGTERM; a stop whose grace period is
	// shorter kills it (exit code 137).
	StopDelay time.Duration
	// MemoryUsage is the memory in bytes the running container uses (node memory pressure).
	MemoryUsage int64
	// CPUMilli is the CPU the running container uses, in millicores (cpuUsage=250m); 0 means
	// the runtime's default (DefaultCPUMilli).
	CPUMilli int64
	// MemoryGrowth bytes every MemoryGrowthPer while the container runs, on top of
	// MemoryUsage: a leak (memoryGrowth=100Mi/1m). Past the container's memory limit it is
	// OOM-killed.
	MemoryGrowth    int64
	MemoryGrowthPer time.Duration
	// DiskUsage is what the container writes to its writable layer at start, and
	// DiskGrowth bytes every DiskGrowthPer while it runs more (diskGrowth=100Mi/1m); the
	// layer stays until the container is removed. Both count on the node's filesystem
	// (nodefs.available) and against the container's ephemeral-storage limit.
	DiskUsage     int64
	DiskGrowth    int64
	DiskGrowthPer time.Duration
	// LogEvery makes the running container print LogLine (DefaultLogLine when empty) every
	// this long; {n} in the line is its number, from 1 for each instance.
	LogEvery time.Duration
	LogLine  string
	// ReadinessFailFor: the readiness probe fails for this long after each start, then passes.
	ReadinessFailFor time.Duration
	// LivenessFailAfter: the liveness probe passes for this long after each start, then
	// fails (HasLivenessFailAfter says it was given: 0 fails from the start).
	LivenessFailAfter    time.Duration
	HasLivenessFailAfter bool
	// StartupFailFor: the startup probe fails for this long after each start, then passes.
	StartupFailFor time.Duration
	// ProbeDelay is how long every probe of the container takes to answer (a probe whose
	// timeoutSeconds is shorter times out).
	ProbeDelay time.Duration
}

// DefaultLogLine is what a container with logEvery and no logLine prints.
const DefaultLogLine = "log line {n}"

// LogText is the n-th periodic line of the container (from 1).
func (b Behavior) LogText(n int64) string {
	line := b.LogLine
	if line == "" {
		line = DefaultLogLine
	}
	return strings.ReplaceAll(line, "{n}", strconv.FormatInt(n, 10))
}

// LogBytes is the size of the first k periodic log lines, newlines included: the
// template's fixed part k times, plus the digits of every line number the {n}s expand to.
func (b Behavior) LogBytes(k int64) int64 {
	if k <= 0 {
		return 0
	}
	line := b.LogLine
	if line == "" {
		line = DefaultLogLine
	}
	holes := int64(strings.Count(line, "{n}"))
	fixed := int64(len(line)) - 3*holes + 1
	var digits int64 // the digits of 1..k
	for d, lo := int64(1), int64(1); lo <= k; d, lo = d+1, lo*10 {
		hi := min(k, lo*10-1)
		digits += d * (hi - lo + 1)
	}
	return k*fixed + holes*digits
}

// MemoryAt is the container's memory use after running for d: MemoryUsage plus the growth.
func (b Behavior) MemoryAt(d time.Duration) int64 {
	if b.MemoryGrowthPer <= 0 || d <= 0 {
		return b.MemoryUsage
	}
	return grow(b.MemoryUsage, b.MemoryGrowth, b.MemoryGrowthPer, d)
}

// grow is base plus rate per period for d, rounded down and saturated at math.MaxInt64 (a
// leak of 1Ei/1ns reaches it within a second). Integer arithmetic, 128 bits wide: float64
// has 53 bits, so at 1Ei it cannot tell one byte of growth from none, and TimeToReach's
// instant would find the use still under the limit.
func grow(base, rate int64, per, d time.Duration) int64 {
	hi, lo := bits.Mul64(uint64(rate), uint64(d))
	if hi >= uint64(per) { // the quotient does not fit in 64 bits
		return math.MaxInt64
	}
	inc, _ := bits.Div64(hi, lo, uint64(per))
	if inc > uint64(math.MaxInt64-base) {
		return math.MaxInt64
	}
	return base + int64(inc)
}

// DiskAt is the container's writable layer after it ran for d.
func (b Behavior) DiskAt(d time.Duration) int64 {
	if b.DiskGrowthPer <= 0 || d <= 0 {
		return b.DiskUsage
	}
	return grow(b.DiskUsage, b.DiskGrowth, b.DiskGrowthPer, d)
}

// TimeToReach is how long the container runs before its memory use reaches limit; ok is
// false when it never does (no growth, and MemoryUsage below limit).
func (b Behavior) TimeToReach(limit int64) (time.Duration, bool) {
	if b.MemoryUsage >= limit {
		return 0, true
	}
	if b.MemoryGrowth <= 0 || b.MemoryGrowthPer <= 0 {
		return 0, false
	}
	// (limit-use)*per/growth rounded up, so that at that instant the use (grow, rounded
	// down) is at the limit; saturated at the longest duration.
	hi, lo := bits.Mul64(uint64(limit-b.MemoryUsage), uint64(b.MemoryGrowthPer))
	if hi >= uint64(b.MemoryGrowth) {
		return math.MaxInt64, true
	}
	q, r := bits.Div64(hi, lo, uint64(b.MemoryGrowth))
	if q >= math.MaxInt64 {
		return math.MaxInt64, true
	}
	if r != 0 {
		q++
	}
	return time.Duration(q), true
}

// IsZero reports whether b has no instructions.
func (b Behavior) IsZero() bool { return b == Behavior{} }

// String renders b in annotation syntax (keys in documentation order), so that
// Parse(String(b)) == b.
func (b Behavior) String() string {
	var parts []string
	if b.HasRunFor {
		parts = append(parts, KeyRunFor+"="+b.RunFor.String())
	}
	if b.HasExitCode {
		parts = append(parts, KeyExitCode+"="+strconv.Itoa(int(b.ExitCode)))
	}
	if b.StartDelay != 0 {
		parts = append(parts, KeyStartDelay+"="+b.StartDelay.String())
	}
	if b.PullDelay != 0 {
		parts = append(parts, KeyPullDelay+"="+b.PullDelay.String())
	}
	if b.PullError != "" {
		parts = append(parts, KeyPullError+"="+b.PullError)
	}
	if b.HasOOMAfter {
		parts = append(parts, KeyOOMAfter+"="+b.OOMAfter.String())
	}
	if b.StopDelay != 0 {
		parts = append(parts, KeyStopDelay+"="+b.StopDelay.String())
	}
	if b.MemoryUsage != 0 {
		parts = append(parts, KeyMemoryUsage+"="+resource.NewQuantity(b.MemoryUsage, resource.BinarySI).String())
	}
	if b.CPUMilli != 0 {
		parts = append(parts, KeyCPUUsage+"="+resource.NewMilliQuantity(b.CPUMilli, resource.DecimalSI).String())
	}
	if b.MemoryGrowthPer != 0 {
		parts = append(parts, KeyMemoryGrowth+"="+resource.NewQuantity(b.MemoryGrowth, resource.BinarySI).String()+"/"+b.MemoryGrowthPer.String())
	}
	if b.DiskUsage != 0 {
		parts = append(parts, KeyDiskUsage+"="+resource.NewQuantity(b.DiskUsage, resource.BinarySI).String())
	}
	if b.DiskGrowthPer != 0 {
		parts = append(parts, KeyDiskGrowth+"="+resource.NewQuantity(b.DiskGrowth, resource.BinarySI).String()+"/"+b.DiskGrowthPer.String())
	}
	if b.LogEvery != 0 {
		parts = append(parts, KeyLogEvery+"="+b.LogEvery.String())
	}
	if b.LogLine != "" {
		parts = append(parts, KeyLogLine+"="+b.LogLine)
	}
	if b.ReadinessFailFor != 0 {
		parts = append(parts, KeyReadinessFailFor+"="+b.ReadinessFailFor.String())
	}
	if b.HasLivenessFailAfter {
		parts = append(parts, KeyLivenessFailAfter+"="+b.LivenessFailAfter.String())
	}
	if b.StartupFailFor != 0 {
		parts = append(parts, KeyStartupFailFor+"="+b.StartupFailFor.String())
	}
	if b.ProbeDelay != 0 {
		parts = append(parts, KeyProbeDelay+"="+b.ProbeDelay.String())
	}
	return strings.Join(parts, ",")
}

// Error is a bad behaviour annotation. Annotation is the annotation key (empty when the text
// came from elsewhere, such as the simulator's default behaviour); Key and Value are the bad
// item when one item is at fault.
type Error struct {
	Annotation string
	Key        string
	Value      string
	Reason     string
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.Annotation != "" {
		fmt.Fprintf(&b, "annotation %q: ", e.Annotation)
	}
	if e.Key != "" {
		fmt.Fprintf(&b, "key %q: ", e.Key)
	}
	if e.Value != "" {
		fmt.Fprintf(&b, "bad value %q: ", e.Value)
	}
	b.WriteString(e.Reason)
	return b.String()
}

// Parse returns the behaviour the pod annotations script for containerName; no annotation
// is the zero Behavior. The error is an *Error naming the annotation, the key and the value.
// Parse is pure and safe to call from anywhere (the kubelet validates pods early with it).
func Parse(annotations map[string]string, containerName string) (Behavior, error) {
	key := AnnotationKey(containerName)
	v, ok := annotations[key]
	if !ok {
		return Behavior{}, nil
	}
	b, err := ParseValue(v)
	if err != nil {
		var be *Error
		if errors.As(err, &be) {
			be.Annotation = key
		}
		return Behavior{}, err
	}
	return b, nil
}

// ParseValue parses an annotation value such as "runFor=30s,exitCode=1". Empty items are
// skipped; a key may appear once.
func ParseValue(v string) (Behavior, error) {
	var b Behavior
	seen := map[string]bool{}
	for _, item := range strings.Split(v, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		k, val, ok := strings.Cut(item, "=")
		k, val = strings.TrimSpace(k), strings.TrimSpace(val)
		if !ok {
			return Behavior{}, &Error{Value: item, Reason: "want key=value"}
		}
		if seen[k] {
			return Behavior{}, &Error{Key: k, Reason: "given more than once"}
		}
		seen[k] = true
		if err := set(&b, k, val); err != nil {
			return Behavior{}, err
		}
	}
	return b, nil
}

// Largest amounts a key accepts: the runtime counts CPU in millicores and bytes as int64,
// and a bigger quantity reads back negative (9223372036854775808) or as zero (1e400).
var (
	maxCPU    = resource.MustParse("1P")
	maxAmount = resource.MustParse("1Ei")
)

// amount parses a quantity from 0 to max.
func amount(val string, max resource.Quantity) (resource.Quantity, bool) {
	q, err := quantity.Parse(val) // refuses a huge exponent, which ParseQuantity and Cmp take hours over
	return q, err == nil && q.Sign() >= 0 && q.Cmp(max) <= 0
}

func set(b *Behavior, k, val string) error {
	dur := func() (time.Duration, error) {
		d, err := time.ParseDuration(val)
		if err != nil {
			return 0, &Error{Key: k, Value: val, Reason: "want a duration such as 30s or 1m"}
		}
		if d < 0 {
			return 0, &Error{Key: k, Value: val, Reason: "must not be negative"}
		}
		return d, nil
	}
	var err error
	switch k {
	case KeyRunFor:
		b.RunFor, err = dur()
		b.HasRunFor = true
	case KeyStartDelay:
		b.StartDelay, err = dur()
	case KeyPullDelay:
		b.PullDelay, err = dur()
	case KeyOOMAfter:
		b.OOMAfter, err = dur()
		b.HasOOMAfter = true
	case KeyStopDelay:
		b.StopDelay, err = dur()
	case KeyReadinessFailFor:
		b.ReadinessFailFor, err = dur()
	case KeyLivenessFailAfter:
		b.LivenessFailAfter, err = dur()
		b.HasLivenessFailAfter = true
	case KeyStartupFailFor:
		b.StartupFailFor, err = dur()
	case KeyProbeDelay:
		b.ProbeDelay, err = dur()
	case KeyExitCode:
		n, perr := strconv.Atoi(val)
		if perr != nil || n < 0 || n > 255 {
			return &Error{Key: k, Value: val, Reason: "want an integer from 0 to 255"}
		}
		b.ExitCode, b.HasExitCode = int32(n), true
	case KeyPullError:
		if val == "" || strings.ContainsAny(val, " \t") {
			return &Error{Key: k, Value: val, Reason: "want a reason without spaces, such as ErrImagePull"}
		}
		b.PullError = val
	case KeyMemoryUsage:
		q, ok := amount(val, maxAmount)
		if !ok {
			return &Error{Key: k, Value: val, Reason: "want a non-negative quantity up to 1Ei, such as 256Mi"}
		}
		b.MemoryUsage = q.Value()
	case KeyDiskUsage:
		q, ok := amount(val, maxAmount)
		if !ok {
			return &Error{Key: k, Value: val, Reason: "want a non-negative quantity up to 1Ei, such as 1Gi"}
		}
		b.DiskUsage = q.Value()
	case KeyLogEvery:
		if b.LogEvery, err = dur(); err == nil && b.LogEvery < time.Millisecond {
			return &Error{Key: k, Value: val, Reason: "must be at least 1ms"}
		}
	case KeyLogLine:
		if val == "" || strings.ContainsAny(val, "\n\r") {
			return &Error{Key: k, Value: val, Reason: "want one line of text (no commas; {n} is the line's number)"}
		}
		b.LogLine = val
	case KeyCPUUsage:
		q, ok := amount(val, maxCPU)
		if !ok || q.Sign() == 0 {
			return &Error{Key: k, Value: val, Reason: "want a positive CPU quantity up to 1P, such as 250m or 1"}
		}
		b.CPUMilli = q.MilliValue()
		if b.CPUMilli == 0 {
			b.CPUMilli = 1 // a positive quantity under 1m still uses something
		}
	case KeyMemoryGrowth:
		n, per, ok := strings.Cut(val, "/")
		q, qok := amount(strings.TrimSpace(n), maxAmount)
		d, derr := time.ParseDuration(strings.TrimSpace(per))
		if !ok || !qok || derr != nil || d <= 0 {
			return &Error{Key: k, Value: val, Reason: "want a quantity up to 1Ei per positive duration, such as 100Mi/1m"}
		}
		b.MemoryGrowth, b.MemoryGrowthPer = q.Value(), d
	case KeyDiskGrowth:
		n, per, ok := strings.Cut(val, "/")
		q, qok := amount(strings.TrimSpace(n), maxAmount)
		d, derr := time.ParseDuration(strings.TrimSpace(per))
		if !ok || !qok || derr != nil || d <= 0 {
			return &Error{Key: k, Value: val, Reason: "want a quantity up to 1Ei per positive duration, such as 100Mi/1m"}
		}
		b.DiskGrowth, b.DiskGrowthPer = q.Value(), d
	default:
		return &Error{Key: k, Reason: "unknown key (known: " + strings.Join(Keys, ", ") + ")"}
	}
	return err
}

// ParseAll parses every behaviour annotation of a pod, keyed by container name. Every bad
// annotation is reported (joined, in key order), so a user fixes them in one go.
func ParseAll(annotations map[string]string) (map[string]Behavior, error) {
	var keys []string
	for k := range annotations {
		if strings.HasPrefix(k, AnnotationPrefix) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	out := make(map[string]Behavior, len(keys))
	var errs []error
	for _, k := range keys {
		name := strings.TrimPrefix(k, AnnotationPrefix)
		b, err := Parse(annotations, name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out[name] = b
	}
	return out, errors.Join(errs...)
}

// ValidatePod checks a pod's behaviour annotations against its container names (init,
// sidecar and app containers alike): every annotation must parse and name a container of
// the pod, since a typo in the name would otherwise silently script nothing.
func ValidatePod(annotations map[string]string, containerNames []string) error {
	byName, err := ParseAll(annotations)
	errs := []error{err}
	known := make(map[string]bool, len(containerNames))
	for _, n := range containerNames {
		known[n] = true
	}
	var names []string
	for n := range byName {
		if !known[n] {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		errs = append(errs, &Error{Annotation: AnnotationKey(n), Reason: fmt.Sprintf("no container named %q in the pod (containers: %s)", n, strings.Join(containerNames, ", "))})
	}
	return errors.Join(errs...)
}

// ProbePasses reports whether a probe of kind ("Liveness", "Readiness", "Startup") passes
// sinceStart after the container started, by the script.
func (b Behavior) ProbePasses(kind string, sinceStart time.Duration) bool {
	switch kind {
	case "Readiness":
		return sinceStart >= b.ReadinessFailFor
	case "Liveness":
		return !b.HasLivenessFailAfter || sinceStart < b.LivenessFailAfter
	case "Startup":
		return sinceStart >= b.StartupFailFor
	}
	return true
}
