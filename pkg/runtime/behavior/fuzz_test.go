package behavior

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

// FuzzBehavior feeds an arbitrary container name and annotation value to the behaviour
// parser, as a pod's annotations would. A refused value gets an *Error that names the
// annotation, and ValidatePod refuses the pod; an accepted one has no negative duration or
// amount, memory and disk use that never go negative or down as the container runs, and
// renders (String) to a value that parses back to the same behaviour. Seeds:
// testdata/fuzz/FuzzBehavior run as regression tests under plain go test.
func FuzzBehavior(f *testing.F) {
	f.Add("main", "runFor=30s,exitCode=1")
	f.Add("app", "memoryUsage=64Mi,memoryGrowth=100Mi/1m,cpuUsage=250m,diskUsage=1Gi,diskGrowth=1Mi/1s")
	f.Add("web", "logEvery=1s,logLine=GET / {n},readinessFailFor=5s,livenessFailAfter=1m,startupFailFor=2s,probeDelay=1s")
	f.Add("c", "pullDelay=5s,pullError=ErrImagePull,oomAfter=1m,stopDelay=3s,startDelay=1s")
	f.Fuzz(func(t *testing.T, name, value string) {
		key := AnnotationKey(name)
		annotations := map[string]string{key: value, "other": value}
		b, err := Parse(annotations, name)
		verr := ValidatePod(annotations, []string{name})
		if err != nil {
			var be *Error
			if !errors.As(err, &be) || be.Annotation != key || !strings.HasPrefix(err.Error(), "annotation ") {
				t.Fatalf("error %T %q does not name annotation %q", err, err, key)
			}
			if verr == nil {
				t.Fatalf("Parse refused %q (%v) but ValidatePod accepted it", value, err)
			}
			return
		}
		if verr != nil {
			t.Fatalf("Parse accepted %q but ValidatePod refused it: %v", value, verr)
		}
		// A behaviour for a container the pod does not have is refused, naming the container.
		if err := ValidatePod(annotations, []string{name + "x"}); err == nil || !strings.Contains(err.Error(), "no container named") {
			t.Fatalf("ValidatePod accepted an annotation for a missing container: %v", err)
		}
		checkBehaviorInRange(t, b)

		again, err := ParseValue(b.String())
		if err != nil {
			t.Fatalf("String() %q of an accepted behaviour is refused: %v", b.String(), err)
		}
		if !reflect.DeepEqual(again, b) {
			t.Fatalf("%q parses to %+v, its String() %q to %+v", value, b, b.String(), again)
		}
	})
}

// checkBehaviorInRange fails on any value the runtime would turn into a negative duration
// or amount.
func checkBehaviorInRange(t *testing.T, b Behavior) {
	t.Helper()
	for name, d := range map[string]time.Duration{
		"runFor": b.RunFor, "startDelay": b.StartDelay, "pullDelay": b.PullDelay, "oomAfter": b.OOMAfter,
		"stopDelay": b.StopDelay, "memoryGrowthPer": b.MemoryGrowthPer, "diskGrowthPer": b.DiskGrowthPer,
		"logEvery": b.LogEvery, "readinessFailFor": b.ReadinessFailFor, "livenessFailAfter": b.LivenessFailAfter,
		"startupFailFor": b.StartupFailFor, "probeDelay": b.ProbeDelay,
	} {
		if d < 0 {
			t.Fatalf("%s %v is negative", name, d)
		}
	}
	if b.ExitCode < 0 || b.ExitCode > 255 || b.MemoryUsage < 0 || b.CPUMilli < 0 || b.MemoryGrowth < 0 || b.DiskUsage < 0 || b.DiskGrowth < 0 {
		t.Fatalf("amount out of range: %+v", b)
	}
	if b.LogEvery != 0 && b.LogEvery < time.Millisecond {
		t.Fatalf("logEvery %v under 1ms", b.LogEvery)
	}
	// Memory and disk use over a year of running: never negative, never shrinking.
	prevMem, prevDisk := int64(0), int64(0)
	for _, d := range []time.Duration{0, time.Nanosecond, time.Second, time.Hour, 365 * 24 * time.Hour, math.MaxInt64} {
		mem, disk := b.MemoryAt(d), b.DiskAt(d)
		if mem < prevMem || disk < prevDisk {
			t.Fatalf("after %v: memory %d (before %d), disk %d (before %d)", d, mem, prevMem, disk, prevDisk)
		}
		prevMem, prevDisk = mem, disk
	}
	if lb := b.LogBytes(1_000_000); lb < 0 {
		t.Fatalf("LogBytes(1e6) = %d", lb)
	}
	if limit := b.MemoryUsage + 1; limit > 0 {
		if d, ok := b.TimeToReach(limit); ok && (d < 0 || b.MemoryAt(d) < limit) {
			t.Fatalf("TimeToReach(%d) = %v, but MemoryAt then is %d", limit, d, b.MemoryAt(d))
		}
	}
}
