package featuregate

// What component-base could have returned and logged for a failing re-application of
// recorded values: it walks its map in random order, stops at the first unknown name and
// aggregates the errors met so far, so one input has many possible error texts.

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/version"
	upstream "k8s.io/component-base/featuregate"
	"k8s.io/klog/v2"
)

// outcomes holds the pieces of component-base's possible results for one input.
type outcomes struct {
	// unknown and other are the error texts of the keys that fail alone: unknown names,
	// and locked or pre-alpha ones.
	unknown, other map[string]bool
	// lines are the log lines component-base could emit before failing.
	lines map[string]bool
}

// outcomes works out, on fresh copies of p.theirs, what applying raw at emu/mc (nil: the
// gate's own versions) could return and log.
func (h *harness) outcomes(p *pair, raw map[string]bool, emu, mc *version.Version) outcomes {
	out := outcomes{unknown: map[string]bool{}, other: map[string]bool{}, lines: map[string]bool{}}
	fresh := func() upstream.MutableVersionedFeatureGate {
		g := p.theirs.DeepCopyAndReset()
		if emu != nil {
			h.capture(func() { _ = g.SetEmulationVersionAndMinCompatibilityVersion(emu, mc) })
		}
		return g
	}
	valid := map[string]bool{}
	for k, v := range raw {
		var err error
		g := fresh()
		h.capture(func() { err = g.SetFromMap(map[string]bool{k: v}) })
		switch {
		case err == nil:
			valid[k] = v
		case strings.HasPrefix(err.Error(), "unrecognized feature gate: "):
			out.unknown[err.Error()] = true
		default:
			out.other[err.Error()] = true
		}
	}
	g := fresh()
	logged, _ := h.capture(func() { _ = g.SetFromMap(valid) })
	for _, l := range logLines(logged) {
		out.lines[l] = true
	}
	if emu == nil {
		return out
	}
	// A failing SetEmulationVersion still warns about queried features, judged against
	// however far it got: any flip of any feature's current value is possible.
	current := p.theirs.DeepCopy()
	for name := range p.theirs.GetAllVersioned() {
		old := current.Enabled(name)
		logged, _ := h.capture(func() {
			klog.Background().Info("Warning: SetEmulationVersionAndMinCompatibilityVersion will change already queried feature",
				"featureGate", name, "oldValue", old, "newValue", !old)
		})
		for _, l := range logLines(logged) {
			out.lines[l] = true
		}
	}
	return out
}

// possible reports whether s is an error text component-base could return: with unknown
// names, some of the other errors in any order followed by one unknown-name error;
// without, all the other errors in any order. Several errors are "[e1, e2]".
func (o outcomes) possible(s string) bool {
	if len(o.unknown) == 0 {
		if len(o.other) == 1 {
			return o.other[s]
		}
		inner, ok := bracketed(s)
		return ok && o.joined(inner, map[string]bool{}, len(o.other))
	}
	if o.unknown[s] {
		return true
	}
	inner, ok := bracketed(s)
	if !ok {
		return false
	}
	for u := range o.unknown {
		if prefix, found := strings.CutSuffix(inner, ", "+u); found && o.joined(prefix, map[string]bool{}, -1) {
			return true
		}
	}
	return false
}

func bracketed(s string) (string, bool) {
	if len(s) < 2 || s[0] != '[' || s[len(s)-1] != ']' {
		return "", false
	}
	return s[1 : len(s)-1], true
}

// joined reports whether s is distinct texts of o.other joined by ", ", none of them in
// used, and want of them in all (any number if want < 0).
func (o outcomes) joined(s string, used map[string]bool, want int) bool {
	for m := range o.other {
		if used[m] {
			continue
		}
		if s == m && (want < 0 || len(used)+1 == want) {
			return true
		}
		if rest, ok := strings.CutPrefix(s, m+", "); ok {
			used[m] = true
			if o.joined(rest, used, want) {
				return true
			}
			delete(used, m)
		}
	}
	return false
}
