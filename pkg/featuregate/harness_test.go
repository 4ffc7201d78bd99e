package featuregate

// Shared machinery for the oracle and fuzz tests: it drives one of our gates and one
// k8s.io/component-base/featuregate gate side by side and reports the first observable
// difference (result, error text, panic message, klog output, metrics).

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/spf13/pflag"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/version"
	upstream "k8s.io/component-base/featuregate"
	"k8s.io/component-base/metrics/legacyregistry"
	featuremetrics "k8s.io/component-base/metrics/prometheus/feature"
	"k8s.io/klog/v2"
)

// captureKlog sends klog output, without headers and at -v=1, to the returned buffer until
// tb ends. Tests using it must not run in parallel with each other.
func captureKlog(tb testing.TB) *bytes.Buffer {
	tb.Helper()
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	settings := map[string]string{
		"v":               "1",
		"skip_headers":    "true",
		"one_output":      "true",
		"logtostderr":     "false",
		"alsologtostderr": "false",
		"stderrthreshold": "FATAL",
	}
	saved := map[string]string{}
	for name, val := range settings {
		saved[name] = fs.Lookup(name).Value.String()
		if err := fs.Set(name, val); err != nil {
			tb.Fatalf("setting klog flag %s: %v", name, err)
		}
	}
	buf := &bytes.Buffer{}
	klog.SetOutput(buf)
	tb.Cleanup(func() {
		for name, val := range saved {
			_ = fs.Set(name, val)
		}
		klog.SetOutput(os.Stderr)
	})
	return buf
}

// pair is one of our gates and the component-base gate it must behave like.
type pair struct {
	ours   MutableVersionedFeatureGate
	theirs upstream.MutableVersionedFeatureGate
	// Flag sets the gates were added to by AddFlag, if any.
	oursFS, theirsFS *pflag.FlagSet
	// raw models what both gates recorded as explicitly set (their enabledRaw): every
	// parsed Set/SetFromMap merges into it, failed or not. checkState checks it through
	// ExplicitlySet; the outcome checks need the values, which no method returns.
	raw map[string]bool
}

func newPair(ours MutableVersionedFeatureGate, theirs upstream.MutableVersionedFeatureGate) *pair {
	return &pair{ours: ours, theirs: theirs, raw: map[string]bool{}}
}

// harness compares pairs. stats counts what was exercised, so callers can check that a run
// actually hit the interesting paths.
type harness struct {
	log   *bytes.Buffer
	stats map[string]int
}

func newHarness(log *bytes.Buffer) *harness {
	return &harness{log: log, stats: map[string]int{}}
}

// capture runs fn and returns the klog output it produced and its panic message, if any.
func (h *harness) capture(fn func()) (logged, panicked string) {
	h.log.Reset()
	panicked = catchPanic(fn)
	logged = h.log.String()
	h.log.Reset()
	return logged, panicked
}

// catchPanic returns "" if fn returns normally, else a description of what it panicked with.
func catchPanic(fn func()) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			if err, ok := r.(error); ok {
				msg = "panic(error): " + err.Error()
			} else {
				msg = fmt.Sprintf("panic(%T): %v", r, r)
			}
		}
	}()
	fn()
	return ""
}

func errText(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

func toUpstreamSpec(s FeatureSpec) upstream.FeatureSpec {
	out := upstream.FeatureSpec{
		Default: s.Default, LockToDefault: s.LockToDefault,
		Version: s.Version, MinCompatibilityVersion: s.MinCompatibilityVersion,
	}
	switch s.PreRelease {
	case PreAlpha:
		out.PreRelease = upstream.PreAlpha
	case Alpha:
		out.PreRelease = upstream.Alpha
	case Beta:
		out.PreRelease = upstream.Beta
	case GA:
		out.PreRelease = upstream.GA
	case Deprecated:
		out.PreRelease = upstream.Deprecated
	case "WEIRD":
		out.PreRelease = "WEIRD"
	default:
		panic(fmt.Sprintf("no upstream equivalent for stage %q", s.PreRelease))
	}
	return out
}

func fromUpstreamSpec(s upstream.FeatureSpec) FeatureSpec {
	return FeatureSpec{
		Default: s.Default, LockToDefault: s.LockToDefault, PreRelease: prerelease(string(s.PreRelease)),
		Version: s.Version, MinCompatibilityVersion: s.MinCompatibilityVersion,
	}
}

func toUpstreamSpecs(in map[Feature]FeatureSpec) map[upstream.Feature]upstream.FeatureSpec {
	out := make(map[upstream.Feature]upstream.FeatureSpec, len(in))
	for name, spec := range in {
		out[upstream.Feature(name)] = toUpstreamSpec(spec)
	}
	return out
}

func fromUpstreamSpecs(in map[upstream.Feature]upstream.FeatureSpec) map[Feature]FeatureSpec {
	out := make(map[Feature]FeatureSpec, len(in))
	for name, spec := range in {
		out[Feature(name)] = fromUpstreamSpec(spec)
	}
	return out
}

func toUpstreamVersioned(in map[Feature]VersionedSpecs) map[upstream.Feature]upstream.VersionedSpecs {
	out := make(map[upstream.Feature]upstream.VersionedSpecs, len(in))
	for name, specs := range in {
		var conv upstream.VersionedSpecs
		if specs != nil {
			conv = upstream.VersionedSpecs{}
		}
		for _, s := range specs {
			conv = append(conv, toUpstreamSpec(s))
		}
		out[upstream.Feature(name)] = conv
	}
	return out
}

func fromUpstreamVersioned(in map[upstream.Feature]upstream.VersionedSpecs) map[Feature]VersionedSpecs {
	out := make(map[Feature]VersionedSpecs, len(in))
	for name, specs := range in {
		conv := VersionedSpecs{}
		for _, s := range specs {
			conv = append(conv, fromUpstreamSpec(s))
		}
		out[Feature(name)] = conv
	}
	return out
}

// checkState compares everything observable without mutating: String, the versions,
// KnownFeatures, GetAll, GetAllVersioned, Validate, and ExplicitlySet and Enabled (value
// or panic) for every registered name plus extraNames.
func (h *harness) checkState(p *pair, extraNames []string) error {
	if o, t := p.ours.(fmt.Stringer).String(), p.theirs.(fmt.Stringer).String(); o != t {
		return fmt.Errorf("String(): ours %q, upstream %q", o, t)
	}
	if o, t := p.ours.EmulationVersion(), p.theirs.EmulationVersion(); !o.EqualTo(t) {
		return fmt.Errorf("EmulationVersion(): ours %v, upstream %v", o, t)
	}
	if o, t := p.ours.MinCompatibilityVersion(), p.theirs.MinCompatibilityVersion(); !o.EqualTo(t) {
		return fmt.Errorf("MinCompatibilityVersion(): ours %v, upstream %v", o, t)
	}
	if o, t := p.ours.KnownFeatures(), p.theirs.KnownFeatures(); !reflect.DeepEqual(o, t) {
		return fmt.Errorf("KnownFeatures():\n ours     %q\n upstream %q", o, t)
	}
	oursAll, theirsAll := p.ours.GetAll(), fromUpstreamSpecs(p.theirs.GetAll())
	if !reflect.DeepEqual(oursAll, theirsAll) {
		return fmt.Errorf("GetAll():\n ours     %v\n upstream %v", oursAll, theirsAll)
	}
	oursV, theirsV := p.ours.GetAllVersioned(), fromUpstreamVersioned(p.theirs.GetAllVersioned())
	if !reflect.DeepEqual(oursV, theirsV) {
		return fmt.Errorf("GetAllVersioned():\n ours     %v\n upstream %v", oursV, theirsV)
	}
	if err := h.compareValidate(p); err != nil {
		return err
	}
	names := append([]string(nil), extraNames...)
	for name, specs := range theirsV {
		names = append(names, string(name))
		if len(specs) > 1 {
			h.stats["versionedGateKnown"]++
		}
		if spec, ok := theirsAll[name]; ok && spec.LockToDefault {
			h.stats["lockedGateKnown"]++
		}
		if _, ok := theirsAll[name]; !ok {
			h.stats["preAlphaGateKnown"]++
		}
	}
	for _, name := range names {
		if o, t := p.ours.ExplicitlySet(Feature(name)), p.theirs.ExplicitlySet(upstream.Feature(name)); o != t {
			return fmt.Errorf("ExplicitlySet(%q): ours %v, upstream %v", name, o, t)
		} else if _, modelled := p.raw[name]; modelled != t {
			return fmt.Errorf("ExplicitlySet(%q) = %v, the harness's model says %v", name, t, modelled)
		}
		var o, t bool
		_, oPanic := h.capture(func() { o = p.ours.Enabled(Feature(name)) })
		_, tPanic := h.capture(func() { t = p.theirs.Enabled(upstream.Feature(name)) })
		if oPanic != tPanic {
			return fmt.Errorf("Enabled(%q) panic: ours %q, upstream %q", name, oPanic, tPanic)
		}
		if tPanic != "" {
			h.stats["enabledPanic"]++
			continue
		}
		if o != t {
			return fmt.Errorf("Enabled(%q): ours %v, upstream %v", name, o, t)
		}
	}
	return nil
}

// compareValidate compares Validate, whose errors, like SetFromMap's, may come in any order.
func (h *harness) compareValidate(p *pair) error {
	o := errText(utilerrors.NewAggregate(p.ours.Validate()))
	t := errText(utilerrors.NewAggregate(p.theirs.Validate()))
	if o == t {
		return nil
	}
	out := h.outcomes(p, p.raw, nil, nil)
	if !out.possible(o) || !out.possible(t) {
		return fmt.Errorf("Validate():\n ours     %q\n upstream %q", o, t)
	}
	h.stats["orderDependentErrorAccepted"]++
	return nil
}

// parseLikeUpstream splits a --feature-gates value the way component-base does. It is used
// only to work out what SetFromMap records and which errors it could return.
func parseLikeUpstream(s string) (map[string]bool, bool) {
	m := map[string]bool{}
	for _, seg := range strings.Split(s, ",") {
		if len(seg) == 0 {
			continue
		}
		arr := strings.SplitN(seg, "=", 2)
		if len(arr) != 2 {
			return nil, false
		}
		b, err := strconv.ParseBool(strings.TrimSpace(arr[1]))
		if err != nil {
			return nil, false
		}
		m[strings.TrimSpace(arr[0])] = b
	}
	return m, true
}

func logLines(s string) []string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if l != "" {
			lines = append(lines, l)
		}
	}
	sort.Strings(lines)
	return lines
}

func mergeRaw(raw, m map[string]bool) map[string]bool {
	out := copyMap(raw)
	for k, v := range m {
		out[k] = v
	}
	return out
}

// compareApplied checks the outcome of an operation that re-applies the recorded values
// raw (SetFromMap, Set, flag parsing, SetEmulationVersion) on both gates; emu and mc are
// the versions applied at, nil for the gate's own. On success errors and logs must match
// exactly, the logs up to order (component-base logs in map order). On failure the errors
// must match, or both be errors component-base could return for raw in some order; and
// every line either side logged must be one component-base could have logged.
func (h *harness) compareApplied(p *pair, what string, raw map[string]bool, emu, mc *version.Version, oErr, tErr, oLog, tLog string) error {
	if tErr == "<nil>" {
		if oErr != tErr {
			return fmt.Errorf("%s: ours error %q, upstream succeeded", what, oErr)
		}
		ol, tl := logLines(oLog), logLines(tLog)
		if !reflect.DeepEqual(ol, tl) {
			return fmt.Errorf("%s: klog output:\n ours     %q\n upstream %q", what, ol, tl)
		}
		for _, l := range tl {
			if strings.Contains(l, "Warning: setting") {
				h.stats["warningCompared"]++
			}
			if strings.Contains(l, "will change already queried feature") {
				h.stats["queriedWarningCompared"]++
			}
		}
		return nil
	}
	h.countError(tErr)
	if oErr == "<nil>" {
		return fmt.Errorf("%s: ours succeeded, upstream error %q", what, tErr)
	}
	if raw == nil { // a parse error: nothing was applied
		if oErr != tErr || oLog != tLog {
			return fmt.Errorf("%s: error/log:\n ours     %q %q\n upstream %q %q", what, oErr, oLog, tErr, tLog)
		}
		return nil
	}
	out := h.outcomes(p, raw, emu, mc)
	if oErr != tErr {
		if !out.possible(oErr) || !out.possible(tErr) {
			return fmt.Errorf("%s: error:\n ours     %q\n upstream %q", what, oErr, tErr)
		}
		h.stats["orderDependentErrorAccepted"]++
	}
	// The emulation line is logged first, whatever happens next: it must match exactly.
	first := func(s string) string { return strings.SplitN(s, "\n", 2)[0] }
	if emu != nil && first(oLog) != first(tLog) {
		return fmt.Errorf("%s: first log line: ours %q, upstream %q", what, first(oLog), first(tLog))
	}
	for _, l := range append(logLines(oLog), logLines(tLog)...) {
		if !out.lines[l] && !(emu != nil && l == first(tLog)) {
			return fmt.Errorf("%s failed with %q but logged %q\n ours     %q\n upstream %q", what, tErr, l, oLog, tLog)
		}
	}
	return nil
}

func (h *harness) countError(e string) {
	for _, kind := range []string{
		"missing bool value for", "invalid value of", "unrecognized feature gate",
		"feature is PreAlpha at emulated version", "cannot set feature gate",
		"with different spec already exists",
		"cannot add a feature gate after adding it to the flag set",
		"is not available before version", "cannot override default",
		"was explicitly set, but not in enabled map",
		"transition", "did not provide a version", "MinCompatibilityVersion", "patch version",
		"must not unlock", "regresses stability", "duplicate entries", "must provide a 1.0 entry",
		"must not resurrect",
	} {
		if strings.Contains(e, kind) {
			h.stats["err:"+kind]++
			return
		}
	}
	h.stats["err:other"]++
}

// compareSet calls Set(s) on both gates.
func (h *harness) compareSet(p *pair, s string) error {
	var oErr, tErr error
	oLog, oPanic := h.capture(func() { oErr = p.ours.Set(s) })
	tLog, tPanic := h.capture(func() { tErr = p.theirs.Set(s) })
	if oPanic != tPanic {
		return fmt.Errorf("Set(%q) panic: ours %q, upstream %q", s, oPanic, tPanic)
	}
	var raw map[string]bool
	if m, ok := parseLikeUpstream(s); ok {
		raw = mergeRaw(p.raw, m)
		p.raw = raw
	}
	return h.compareApplied(p, fmt.Sprintf("Set(%q)", s), raw, nil, nil, errText(oErr), errText(tErr), oLog, tLog)
}

// compareSetFromMap calls SetFromMap(m) on both gates.
func (h *harness) compareSetFromMap(p *pair, m map[string]bool) error {
	var oErr, tErr error
	// Each side gets its own copy, in case either keeps or changes the map.
	oLog, oPanic := h.capture(func() { oErr = p.ours.SetFromMap(copyMap(m)) })
	tLog, tPanic := h.capture(func() { tErr = p.theirs.SetFromMap(copyMap(m)) })
	if oPanic != tPanic {
		return fmt.Errorf("SetFromMap(%v) panic: ours %q, upstream %q", m, oPanic, tPanic)
	}
	p.raw = mergeRaw(p.raw, m)
	if tErr == nil {
		all := p.theirs.GetAll()
		for k, v := range m {
			if k == string(allAlphaGate) || k == string(allBetaGate) {
				h.stats["allGateSet"]++
			}
			if spec := all[upstream.Feature(k)]; spec.LockToDefault && spec.Default == v {
				h.stats["lockedSetToDefault"]++
			}
		}
	}
	return h.compareApplied(p, fmt.Sprintf("SetFromMap(%v)", m), p.raw, nil, nil, errText(oErr), errText(tErr), oLog, tLog)
}

// compareSetEmulation calls SetEmulationVersion(emu) (mc nil) or
// SetEmulationVersionAndMinCompatibilityVersion(emu, mc) on both gates.
func (h *harness) compareSetEmulation(p *pair, emu, mc *version.Version) error {
	var oErr, tErr error
	what := fmt.Sprintf("SetEmulationVersion(%v)", emu)
	oLog, oPanic := h.capture(func() {
		if mc == nil {
			oErr = p.ours.SetEmulationVersion(emu)
		} else {
			oErr = p.ours.SetEmulationVersionAndMinCompatibilityVersion(emu, mc)
		}
	})
	tLog, tPanic := h.capture(func() {
		if mc == nil {
			tErr = p.theirs.SetEmulationVersion(emu)
		} else {
			tErr = p.theirs.SetEmulationVersionAndMinCompatibilityVersion(emu, mc)
		}
	})
	if mc == nil {
		mc = emu.SubtractMinor(1)
	} else {
		what = fmt.Sprintf("SetEmulationVersionAndMinCompatibilityVersion(%v, %v)", emu, mc)
	}
	if oPanic != tPanic {
		return fmt.Errorf("%s panic: ours %q, upstream %q", what, oPanic, tPanic)
	}
	if tErr == nil {
		h.stats["emulationSet"]++
	}
	return h.compareApplied(p, what, p.raw, emu, mc, errText(oErr), errText(tErr), oLog, tLog)
}

func copyMap(m map[string]bool) map[string]bool {
	out := make(map[string]bool, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// compareAdd calls Add (versioned nil) or AddVersioned on both gates. Errors must match
// exactly, unless several names are bad at once: then each side's error must be one that
// component-base returns for one of those names alone.
func (h *harness) compareAdd(p *pair, specs map[Feature]FeatureSpec, versioned map[Feature]VersionedSpecs) error {
	var oErr, tErr error
	var oLog, oPanic, tLog, tPanic, what string
	addOne := func(g upstream.MutableVersionedFeatureGate, name Feature) error {
		if versioned == nil {
			return g.Add(toUpstreamSpecs(map[Feature]FeatureSpec{name: specs[name]}))
		}
		return g.AddVersioned(toUpstreamVersioned(map[Feature]VersionedSpecs{name: versioned[name]}))
	}
	var names []Feature
	if versioned == nil {
		what = fmt.Sprintf("Add(%v)", specs)
		oLog, oPanic = h.capture(func() { oErr = p.ours.Add(specs) })
		tLog, tPanic = h.capture(func() { tErr = p.theirs.Add(toUpstreamSpecs(specs)) })
		names = sortedKeys(specs)
	} else {
		what = fmt.Sprintf("AddVersioned(%v)", versioned)
		oLog, oPanic = h.capture(func() { oErr = p.ours.AddVersioned(versioned) })
		tLog, tPanic = h.capture(func() { tErr = p.theirs.AddVersioned(toUpstreamVersioned(versioned)) })
		names = sortedKeys(versioned)
	}
	if oPanic != tPanic || oLog != tLog {
		return fmt.Errorf("%s: panic/log: ours %q %q, upstream %q %q", what, oPanic, oLog, tPanic, tLog)
	}
	if tErr != nil {
		h.countError(tErr.Error())
	} else if versioned != nil {
		h.stats["addVersioned"]++
	}
	if errText(oErr) == errText(tErr) {
		return nil
	}
	if oErr == nil || tErr == nil {
		return fmt.Errorf("%s: error: ours %q, upstream %q", what, errText(oErr), errText(tErr))
	}
	candidates := map[string]bool{}
	for _, name := range names {
		if err := addOne(p.theirs.DeepCopy(), name); err != nil {
			candidates[err.Error()] = true
		}
	}
	if !candidates[oErr.Error()] || !candidates[tErr.Error()] {
		return fmt.Errorf("%s: error: ours %q, upstream %q", what, oErr, tErr)
	}
	h.stats["orderDependentErrorAccepted"]++
	return nil
}

// compareOverrideDefault calls OverrideDefault (at nil) or OverrideDefaultAtVersion on both gates.
func (h *harness) compareOverrideDefault(p *pair, name Feature, val bool, at *version.Version) error {
	var oErr, tErr error
	oLog, oPanic := h.capture(func() {
		if at == nil {
			oErr = p.ours.OverrideDefault(name, val)
		} else {
			oErr = p.ours.OverrideDefaultAtVersion(name, val, at)
		}
	})
	tLog, tPanic := h.capture(func() {
		if at == nil {
			tErr = p.theirs.OverrideDefault(upstream.Feature(name), val)
		} else {
			tErr = p.theirs.OverrideDefaultAtVersion(upstream.Feature(name), val, at)
		}
	})
	if oPanic != tPanic || oLog != tLog || errText(oErr) != errText(tErr) {
		return fmt.Errorf("OverrideDefault(%q, %v, at %v):\n ours     err=%q log=%q panic=%q\n upstream err=%q log=%q panic=%q",
			name, val, at, errText(oErr), oLog, oPanic, errText(tErr), tLog, tPanic)
	}
	if tErr != nil {
		h.countError(tErr.Error())
	} else {
		h.stats["overrideDefault"]++
	}
	return nil
}

// compareReset calls ResetFeatureValueToDefault on both gates.
func (h *harness) compareReset(p *pair, name Feature) error {
	var oErr, tErr error
	oLog, oPanic := h.capture(func() { oErr = p.ours.ResetFeatureValueToDefault(name) })
	tLog, tPanic := h.capture(func() { tErr = p.theirs.ResetFeatureValueToDefault(upstream.Feature(name)) })
	if oPanic != tPanic || oLog != tLog || errText(oErr) != errText(tErr) {
		return fmt.Errorf("ResetFeatureValueToDefault(%q): ours %q %q %q, upstream %q %q %q",
			name, errText(oErr), oLog, oPanic, errText(tErr), tLog, tPanic)
	}
	if tErr != nil {
		h.countError(tErr.Error())
		return nil
	}
	if _, ok := p.raw[string(name)]; ok {
		h.stats["resetExplicit"]++
	}
	p.raw = copyMap(p.raw)
	delete(p.raw, string(name))
	return nil
}

// compareAddFlag adds both gates to fresh flag sets and compares the registered flags.
func (h *harness) compareAddFlag(p *pair) error {
	p.oursFS = pflag.NewFlagSet("ours", pflag.ContinueOnError)
	p.theirsFS = pflag.NewFlagSet("theirs", pflag.ContinueOnError)
	p.oursFS.SetOutput(io.Discard)
	p.theirsFS.SetOutput(io.Discard)
	oLog, oPanic := h.capture(func() { p.ours.AddFlag(p.oursFS) })
	tLog, tPanic := h.capture(func() { p.theirs.AddFlag(p.theirsFS) })
	if oPanic != tPanic || oLog != tLog {
		return fmt.Errorf("AddFlag: panic/log: ours %q %q, upstream %q %q", oPanic, oLog, tPanic, tLog)
	}
	of, tf := p.oursFS.Lookup("feature-gates"), p.theirsFS.Lookup("feature-gates")
	if of == nil || tf == nil {
		return fmt.Errorf("AddFlag: flag feature-gates registered: ours %v, upstream %v", of != nil, tf != nil)
	}
	if of.Usage != tf.Usage || of.DefValue != tf.DefValue || of.Value.Type() != tf.Value.Type() || of.Value.String() != tf.Value.String() {
		return fmt.Errorf("AddFlag: flag differs:\n ours     %q %q %q\n upstream %q %q %q",
			of.Usage, of.DefValue, of.Value.Type(), tf.Usage, tf.DefValue, tf.Value.Type())
	}
	h.stats["addFlag"]++
	return nil
}

// compareParseFlag parses --feature-gates=s on the flag sets from compareAddFlag.
func (h *harness) compareParseFlag(p *pair, s string) error {
	arg := "--feature-gates=" + s
	var oErr, tErr error
	oLog, oPanic := h.capture(func() { oErr = p.oursFS.Parse([]string{arg}) })
	tLog, tPanic := h.capture(func() { tErr = p.theirsFS.Parse([]string{arg}) })
	if oPanic != tPanic {
		return fmt.Errorf("Parse(%q) panic: ours %q, upstream %q", arg, oPanic, tPanic)
	}
	// pflag wraps the gate's error; compare the wrapper exactly and the rest like Set.
	prefix := fmt.Sprintf("invalid argument %q for %q flag: ", s, "--feature-gates")
	oText, tText := errText(oErr), errText(tErr)
	if tErr != nil {
		if !strings.HasPrefix(oText, prefix) || !strings.HasPrefix(tText, prefix) {
			return fmt.Errorf("Parse(%q) error: ours %q, upstream %q", arg, oText, tText)
		}
		oText, tText = strings.TrimPrefix(oText, prefix), strings.TrimPrefix(tText, prefix)
	}
	var raw map[string]bool
	if m, ok := parseLikeUpstream(s); ok {
		raw = mergeRaw(p.raw, m)
		p.raw = raw
	}
	h.stats["parseFlag"]++
	return h.compareApplied(p, fmt.Sprintf("Parse(%q)", arg), raw, nil, nil, oText, tText, oLog, tLog)
}

// compareMetrics records both gates' metrics, ours into a private registry, component-base's
// into its global legacy registry (reset first), and compares the gauge.
func (h *harness) compareMetrics(p *pair, twice bool) error {
	reg := prometheus.NewRegistry()
	var oErr error
	h.capture(func() {
		oErr = p.ours.AddMetrics(reg)
		if oErr == nil && twice {
			oErr = p.ours.AddMetrics(reg)
		}
	})
	if oErr != nil {
		return fmt.Errorf("AddMetrics: %v", oErr)
	}
	featuremetrics.ResetFeatureInfoMetric()
	h.capture(func() { p.theirs.AddMetrics() })

	oFams, err := reg.Gather()
	if err != nil {
		return fmt.Errorf("gathering ours: %v", err)
	}
	tFams, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		return fmt.Errorf("gathering upstream: %v", err)
	}
	o, t := featureSamples(oFams), featureSamples(tFams)
	if !reflect.DeepEqual(o, t) {
		return fmt.Errorf("kubernetes_feature_enabled:\n ours     %v\n upstream %v", o, t)
	}
	h.stats["metricsCompared"]++
	return nil
}

// featureSamples renders the kubernetes_feature_enabled family as sorted text lines.
func featureSamples(fams []*dto.MetricFamily) []string {
	var out []string
	for _, fam := range fams {
		if fam.GetName() != "kubernetes_feature_enabled" {
			continue
		}
		out = append(out, fmt.Sprintf("HELP %s", fam.GetHelp()), fmt.Sprintf("TYPE %s", fam.GetType()))
		for _, m := range fam.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			sort.Strings(labels)
			out = append(out, fmt.Sprintf("%s %v", strings.Join(labels, ","), m.GetGauge().GetValue()))
		}
	}
	sort.Strings(out)
	return out
}
