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
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/spf13/pflag"
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
	ours   MutableFeatureGate
	theirs upstream.MutableFeatureGate
	// Flag sets the gates were added to by AddFlag, if any.
	oursFS, theirsFS *pflag.FlagSet
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

// gateNameRE matches the gate name in Enabled's panic. Our gate is named after the caller of
// NewFeatureGate; component-base (built from the module cache) names it after its own
// feature_gate.go, because its ignore pattern only matches vendored paths. Both leave a
// DeepCopy unnamed, which stays visible.
var gateNameRE = regexp.MustCompile(`in FeatureGate ".+"$`)

func normalizePanic(msg string) string {
	return gateNameRE.ReplaceAllString(msg, `in FeatureGate "<named>"`)
}

func errText(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

func toUpstreamSpec(s FeatureSpec) upstream.FeatureSpec {
	out := upstream.FeatureSpec{Default: s.Default, LockToDefault: s.LockToDefault}
	switch s.PreRelease {
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
		out[Feature(name)] = FeatureSpec{
			Default:       spec.Default,
			LockToDefault: spec.LockToDefault,
			PreRelease:    prerelease(string(spec.PreRelease)),
		}
	}
	return out
}

// checkState compares everything observable without mutating: String, KnownFeatures,
// GetAll, and Enabled (value or panic) for every known name plus extraNames.
func (h *harness) checkState(p *pair, extraNames []string) error {
	if o, t := p.ours.(fmt.Stringer).String(), p.theirs.(fmt.Stringer).String(); o != t {
		return fmt.Errorf("String(): ours %q, upstream %q", o, t)
	}
	if o, t := p.ours.KnownFeatures(), p.theirs.KnownFeatures(); !reflect.DeepEqual(o, t) {
		return fmt.Errorf("KnownFeatures():\n ours     %q\n upstream %q", o, t)
	}
	oursAll, theirsAll := p.ours.GetAll(), fromUpstreamSpecs(p.theirs.GetAll())
	if !reflect.DeepEqual(oursAll, theirsAll) {
		return fmt.Errorf("GetAll():\n ours     %v\n upstream %v", oursAll, theirsAll)
	}
	names := append([]string(nil), extraNames...)
	for name, spec := range theirsAll {
		names = append(names, string(name))
		if spec.LockToDefault {
			h.stats["lockedGateKnown"]++
		}
	}
	for _, name := range names {
		var o, t bool
		_, oPanic := h.capture(func() { o = p.ours.Enabled(Feature(name)) })
		_, tPanic := h.capture(func() { t = p.theirs.Enabled(upstream.Feature(name)) })
		if normalizePanic(oPanic) != normalizePanic(tPanic) {
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

// parseLikeUpstream splits a --feature-gates value the way component-base does. It is used
// only to work out which SetFromMap errors component-base could legitimately return.
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

// setFromMapOutcomes asks component-base, on copies of p.theirs, which errors a SetFromMap(m)
// could return (its result depends on map iteration order when several keys are bad), and
// which log lines it could emit before failing.
func (h *harness) setFromMapOutcomes(p *pair, m map[string]bool) (candidates, possibleLines map[string]bool) {
	candidates = map[string]bool{}
	valid := map[string]bool{}
	for k, v := range m {
		var err error
		h.capture(func() { err = p.theirs.DeepCopy().SetFromMap(map[string]bool{k: v}) })
		if err != nil {
			candidates[err.Error()] = true
		} else {
			valid[k] = v
		}
	}
	logged, _ := h.capture(func() { _ = p.theirs.DeepCopy().SetFromMap(valid) })
	possibleLines = map[string]bool{}
	for _, line := range logLines(logged) {
		possibleLines[line] = true
	}
	return candidates, possibleLines
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

// compareApplied checks the outcome of applying m (or a string that parses to m; m is nil
// if it does not parse) to both gates. On success errors and logs must match exactly, the
// logs up to order (component-base warns in map order). On failure the errors must match, or
// both be errors component-base could return for m; and every log line either side emitted
// must be one component-base could have emitted before failing.
func (h *harness) compareApplied(p *pair, what string, m map[string]bool, oErr, tErr, oLog, tLog string) error {
	if tErr == "<nil>" {
		if oErr != tErr {
			return fmt.Errorf("%s: ours error %q, upstream succeeded", what, oErr)
		}
		ol, tl := logLines(oLog), logLines(tLog)
		if !reflect.DeepEqual(ol, tl) {
			return fmt.Errorf("%s: klog output:\n ours     %q\n upstream %q", what, ol, tl)
		}
		for _, l := range tl {
			if strings.HasPrefix(l, "Setting ") {
				h.stats["warningCompared"]++
			}
		}
		return nil
	}
	h.countError(tErr)
	if oErr == "<nil>" {
		return fmt.Errorf("%s: ours succeeded, upstream error %q", what, tErr)
	}
	candidates, possible := map[string]bool{}, map[string]bool{}
	if m != nil {
		candidates, possible = h.setFromMapOutcomes(p, m)
	}
	if oErr != tErr {
		if !candidates[oErr] || !candidates[tErr] {
			return fmt.Errorf("%s: error:\n ours     %q\n upstream %q", what, oErr, tErr)
		}
		h.stats["orderDependentErrorAccepted"]++
	}
	for _, l := range append(logLines(oLog), logLines(tLog)...) {
		if !possible[l] {
			return fmt.Errorf("%s failed with %q but logged %q\n ours     %q\n upstream %q", what, tErr, l, oLog, tLog)
		}
	}
	return nil
}

func (h *harness) countError(e string) {
	for _, kind := range []string{
		"missing bool value for", "invalid value of", "unrecognized feature gate",
		"cannot set feature gate", "with different spec already exists",
		"cannot add a feature gate after adding it to the flag set",
		"cannot override default",
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
	m, _ := parseLikeUpstream(s)
	return h.compareApplied(p, fmt.Sprintf("Set(%q)", s), m, errText(oErr), errText(tErr), oLog, tLog)
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
	if tErr == nil {
		for k, v := range m {
			if k == string(allAlphaGate) || k == string(allBetaGate) {
				h.stats["allGateSet"]++
			}
			if spec := p.theirs.GetAll()[upstream.Feature(k)]; spec.LockToDefault && spec.Default == v {
				h.stats["lockedSetToDefault"]++
			}
		}
	}
	return h.compareApplied(p, fmt.Sprintf("SetFromMap(%v)", m), m, errText(oErr), errText(tErr), oLog, tLog)
}

func copyMap(m map[string]bool) map[string]bool {
	out := make(map[string]bool, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// compareAdd calls Add on both gates. Errors must match exactly: component-base can only
// return one error per call unless two names conflict at once, which is checked like
// SetFromMap by trying each name alone.
func (h *harness) compareAdd(p *pair, specs map[Feature]FeatureSpec) error {
	var oErr, tErr error
	oLog, oPanic := h.capture(func() { oErr = p.ours.Add(specs) })
	tLog, tPanic := h.capture(func() { tErr = p.theirs.Add(toUpstreamSpecs(specs)) })
	what := fmt.Sprintf("Add(%v)", specs)
	if oPanic != tPanic || oLog != tLog {
		return fmt.Errorf("%s: panic/log: ours %q %q, upstream %q %q", what, oPanic, oLog, tPanic, tLog)
	}
	if tErr != nil {
		h.countError(tErr.Error())
	}
	if errText(oErr) == errText(tErr) {
		return nil
	}
	if oErr == nil || tErr == nil {
		return fmt.Errorf("%s: error: ours %q, upstream %q", what, errText(oErr), errText(tErr))
	}
	candidates := map[string]bool{}
	for name, spec := range specs {
		if err := p.theirs.DeepCopy().Add(toUpstreamSpecs(map[Feature]FeatureSpec{name: spec})); err != nil {
			candidates[err.Error()] = true
		}
	}
	if !candidates[oErr.Error()] || !candidates[tErr.Error()] {
		return fmt.Errorf("%s: error: ours %q, upstream %q", what, oErr, tErr)
	}
	h.stats["orderDependentErrorAccepted"]++
	return nil
}

// compareOverrideDefault calls OverrideDefault on both gates.
func (h *harness) compareOverrideDefault(p *pair, name Feature, val bool) error {
	var oErr, tErr error
	oLog, oPanic := h.capture(func() { oErr = p.ours.OverrideDefault(name, val) })
	tLog, tPanic := h.capture(func() { tErr = p.theirs.OverrideDefault(upstream.Feature(name), val) })
	if oPanic != tPanic || oLog != tLog || errText(oErr) != errText(tErr) {
		return fmt.Errorf("OverrideDefault(%q, %v):\n ours     err=%q log=%q panic=%q\n upstream err=%q log=%q panic=%q",
			name, val, errText(oErr), oLog, oPanic, errText(tErr), tLog, tPanic)
	}
	if tErr != nil {
		h.countError(tErr.Error())
	} else {
		h.stats["overrideDefault"]++
	}
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
	m, _ := parseLikeUpstream(s)
	h.stats["parseFlag"]++
	return h.compareApplied(p, fmt.Sprintf("Parse(%q)", arg), m, oText, tText, oLog, tLog)
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
