package featuregate

import (
	"flag"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/version"
	upstream "k8s.io/component-base/featuregate"
	"k8s.io/klog/v2"
)

var (
	oracleSeed      = flag.Int64("oracle.seed", 1, "seed for TestOracle's random operation sequences")
	oracleSequences = flag.Int("oracle.sequences", 150, "number of random operation sequences TestOracle runs (raise it when changing the gate)")
)

// Names the random sequences use. Specs are random, so a name says nothing about its stage.
var (
	oracleNames = []string{"AllAlpha", "AllBeta", "A", "B", "C", "D", "E", "F"}
	// Never registered. " A" is unknown to SetFromMap but Set trims it to "A".
	oracleUnknown = []string{"Nope", "a", "", " A", "A=true"}
	oracleStages  = []prerelease{Alpha, Alpha, Beta, Beta, GA, Deprecated, "WEIRD"}
	goodBools     = []string{"true", "false", "1", "0", "t", "F", "TRUE", "False", " true ", "T"}
	badBools      = []string{"", "banana", "yes", "2", "true=false", "on"}
)

// minor returns version 1.m.
func minor(m int) *version.Version { return version.MajorMinor(1, uint(m)) }

// oracleMinors are the minors of the versions specs and emulation use: the gate starts at
// 1.37, specs start between 1.28 and 1.38, so some features only exist later.
const oracleMinMinor, oracleMaxMinor = 28, 39

// step is one entry of a ladder: a stage, its default and lock, and whether it repeats the
// previous version with a MinCompatibilityVersion.
type step struct {
	stage   prerelease
	def     bool
	locked  bool
	compat  bool
	atOneOh bool // the first entry sits at 1.0 (gates that start deprecated say what they were)
}

// ladders are feature lives component-base accepts.
var ladders = [][]step{
	{{stage: Alpha}},
	{{stage: Alpha}, {stage: Beta, def: true}},
	{{stage: Alpha}, {stage: Beta}, {stage: Beta, def: true}},
	{{stage: Alpha}, {stage: Beta, def: true}, {stage: GA, def: true, locked: true}},
	{{stage: Alpha}, {stage: Beta, def: true}, {stage: GA, def: true}, {stage: GA, def: true, locked: true}},
	{{stage: Beta}, {stage: Beta, def: true}, {stage: GA, def: true, locked: true}},
	{{stage: Beta}, {stage: Beta, def: true, compat: true}},
	{{stage: Beta}, {stage: Beta, def: true, compat: true}, {stage: GA, def: true, locked: true}},
	{{stage: GA, def: true, atOneOh: true}, {stage: Deprecated}},
	{{stage: GA, def: true, atOneOh: true}, {stage: Deprecated}, {stage: Deprecated, locked: true}},
	{{stage: Alpha}, {stage: Deprecated}},
	{{stage: Deprecated, atOneOh: true}},
	{{stage: "WEIRD", def: true}},
	{{stage: Alpha, def: true, locked: true}},
}

// oracle runs random operation sequences against our gate and component-base's.
type oracle struct {
	*harness
	rng *rand.Rand
	// newOurs builds our side of a fresh pair; tests substitute broken gates here.
	newOurs func() MutableVersionedFeatureGate
	pairs   []*pair
	trace   []string
}

func (o *oracle) pick(xs []string) string { return xs[o.rng.Intn(len(xs))] }

// name returns a registered name most of the time, otherwise an unknown one. Unknown names
// are rarer than before the versioned gate: one recorded by Set fails every later Set.
func (o *oracle) name(p *pair) string {
	if o.rng.Intn(14) == 0 {
		return o.pick(oracleUnknown)
	}
	var known []string
	for n := range p.theirs.GetAllVersioned() {
		known = append(known, string(n))
	}
	sort.Strings(known)
	return o.pick(known)
}

func (o *oracle) version() *version.Version {
	return minor(oracleMinMinor + o.rng.Intn(oracleMaxMinor-oracleMinMinor+1))
}

func (o *oracle) spec() FeatureSpec {
	return FeatureSpec{
		Default:       o.rng.Intn(2) == 0,
		LockToDefault: o.rng.Intn(4) == 0,
		PreRelease:    oracleStages[o.rng.Intn(len(oracleStages))],
	}
}

// versionedSpecs returns a random life of a feature, sometimes malformed.
func (o *oracle) versionedSpecs() VersionedSpecs {
	ladder := ladders[o.rng.Intn(len(ladders))]
	m := oracleMinMinor + o.rng.Intn(oracleMaxMinor-oracleMinMinor)
	var out VersionedSpecs
	for i, st := range ladder {
		spec := FeatureSpec{Default: st.def, LockToDefault: st.locked, PreRelease: st.stage}
		switch {
		case i == 0 && st.atOneOh:
			spec.Version = minor(0)
		case st.compat:
			spec.Version = minor(m)
			spec.MinCompatibilityVersion = minor(m - o.rng.Intn(2))
		default:
			if i > 0 {
				m += 1 + o.rng.Intn(2)
			}
			spec.Version = minor(m)
		}
		out = append(out, spec)
	}
	if o.rng.Intn(8) == 0 {
		o.malform(out)
	}
	return out
}

// malform makes specs malformed in one of the ways AddVersioned rejects (or, rarely, in a
// way that happens to be fine).
func (o *oracle) malform(specs VersionedSpecs) {
	i := o.rng.Intn(len(specs))
	switch o.rng.Intn(8) {
	case 0:
		specs[i].Version = nil
	case 1:
		specs[i].Version = version.MustParse("1.30.1")
	case 2:
		specs[0], specs[len(specs)-1] = specs[len(specs)-1], specs[0]
	case 3:
		specs[i].MinCompatibilityVersion = o.version()
	case 4:
		specs[i].LockToDefault = !specs[i].LockToDefault
	case 5:
		specs[i].PreRelease = oracleStages[o.rng.Intn(len(oracleStages))]
	case 6:
		specs[i].Version = o.version()
	default:
		specs[i].MinCompatibilityVersion = version.MustParse("1.30.2")
	}
}

// specs returns 1-3 features to Add, often re-using a registered spec unchanged.
func (o *oracle) specs(p *pair) map[Feature]FeatureSpec {
	registered := fromUpstreamSpecs(p.theirs.GetAll())
	out := map[Feature]FeatureSpec{}
	for n := 1 + o.rng.Intn(3); n > 0; n-- {
		name := Feature(o.pick(oracleNames))
		if spec, ok := registered[name]; ok && o.rng.Intn(3) != 0 {
			spec.Version, spec.MinCompatibilityVersion = nil, nil
			out[name] = spec
			continue
		}
		out[name] = o.spec()
	}
	return out
}

// versioned returns 1-3 features to AddVersioned, often re-using registered specs.
func (o *oracle) versioned(p *pair) map[Feature]VersionedSpecs {
	registered := fromUpstreamVersioned(p.theirs.GetAllVersioned())
	out := map[Feature]VersionedSpecs{}
	for n := 1 + o.rng.Intn(3); n > 0; n-- {
		name := Feature(o.pick(oracleNames))
		if specs, ok := registered[name]; ok && o.rng.Intn(3) == 0 {
			out[name] = specs
			continue
		}
		out[name] = o.versionedSpecs()
	}
	return out
}

func (o *oracle) setString(p *pair) string {
	var segs []string
	for n := o.rng.Intn(5); n > 0; n-- {
		name := o.name(p)
		switch o.rng.Intn(16) {
		case 0:
			segs = append(segs, "")
		case 1:
			segs = append(segs, name)
		case 2:
			segs = append(segs, name+"="+o.pick(badBools))
		case 3:
			segs = append(segs, "  "+name+" \t= "+o.pick(goodBools))
		case 4:
			segs = append(segs, " ")
		default:
			segs = append(segs, name+"="+o.pick(goodBools))
		}
	}
	return strings.Join(segs, ",")
}

func (o *oracle) setMap(p *pair) map[string]bool {
	m := map[string]bool{}
	for n := o.rng.Intn(5); n > 0; n-- {
		m[o.name(p)] = o.rng.Intn(2) == 0
	}
	return m
}

func (o *oracle) newPair() *pair {
	return newPair(o.newOurs(), upstream.NewFeatureGate())
}

// mutate applies one random write to p.
func (o *oracle) mutate(p *pair) error {
	switch o.rng.Intn(11) {
	case 0:
		s := o.specs(p)
		o.trace = append(o.trace, fmt.Sprintf("Add(%v)", s))
		return o.compareAdd(p, s, nil)
	case 1, 2:
		s := o.versioned(p)
		o.trace = append(o.trace, fmt.Sprintf("AddVersioned(%v)", s))
		return o.compareAdd(p, nil, s)
	case 3:
		s := o.setString(p)
		o.trace = append(o.trace, fmt.Sprintf("Set(%q)", s))
		return o.compareSet(p, s)
	case 4, 5:
		m := o.setMap(p)
		o.trace = append(o.trace, fmt.Sprintf("SetFromMap(%v)", m))
		return o.compareSetFromMap(p, m)
	case 6:
		name, val := Feature(o.name(p)), o.rng.Intn(2) == 0
		var at *version.Version
		if o.rng.Intn(2) == 0 {
			at = o.version()
		}
		o.trace = append(o.trace, fmt.Sprintf("OverrideDefault(%q, %v, at %v)", name, val, at))
		return o.compareOverrideDefault(p, name, val, at)
	case 7, 8:
		emu := minor(30 + o.rng.Intn(oracleMaxMinor-30+1))
		var mc *version.Version
		if o.rng.Intn(3) == 0 {
			mc = emu.SubtractMinor(uint(o.rng.Intn(3)))
		}
		o.trace = append(o.trace, fmt.Sprintf("SetEmulationVersion(%v, min compat %v)", emu, mc))
		return o.compareSetEmulation(p, emu, mc)
	case 9:
		name := Feature(o.name(p))
		o.trace = append(o.trace, fmt.Sprintf("ResetFeatureValueToDefault(%q)", name))
		return o.compareReset(p, name)
	default:
		// Read-only, but Enabled marks names as queried, which SetEmulationVersion reports.
		o.trace = append(o.trace, "read-only checks")
		return nil
	}
}

// step applies one random operation to a random pair and then compares every pair.
func (o *oracle) step() error {
	i := o.rng.Intn(len(o.pairs))
	p := o.pairs[i]
	var err error
	switch op := o.rng.Intn(21); {
	case op < 12:
		err = o.mutate(p)
	case op < 14:
		o.trace = append(o.trace, fmt.Sprintf("pair[%d].DeepCopy() then mutate the copy", i))
		c := newPair(p.ours.DeepCopy(), p.theirs.DeepCopy())
		c.raw = copyMap(p.raw)
		o.add(c)
		o.stats["deepCopyMutated"]++
		err = o.mutate(c)
	case op < 15:
		o.trace = append(o.trace, fmt.Sprintf("pair[%d].DeepCopyAndReset() then mutate the copy", i))
		c := newPair(p.ours.DeepCopyAndReset(), p.theirs.DeepCopyAndReset())
		o.add(c)
		o.stats["deepCopyAndReset"]++
		err = o.mutate(c)
	case op < 16:
		o.trace = append(o.trace, fmt.Sprintf("pair[%d].AddFlag", i))
		err = o.compareAddFlag(p)
	case op < 18 && p.oursFS != nil:
		s := o.setString(p)
		o.trace = append(o.trace, fmt.Sprintf("pair[%d] parse --feature-gates=%s", i, s))
		err = o.compareParseFlag(p, s)
	case op < 19:
		o.trace = append(o.trace, fmt.Sprintf("pair[%d].AddMetrics", i))
		err = o.compareMetrics(p, o.rng.Intn(2) == 0)
	default:
		o.trace = append(o.trace, fmt.Sprintf("pair[%d] read-only checks", i))
	}
	if err != nil {
		return err
	}
	// One unknown name per step keeps the (slow under -race) panics affordable.
	unknown := []string{o.pick(oracleUnknown)}
	for j, q := range o.pairs {
		if err := o.checkState(q, unknown); err != nil {
			return fmt.Errorf("pair[%d]: %w", j, err)
		}
	}
	return nil
}

// add keeps at most four pairs, the first never replaced.
func (o *oracle) add(c *pair) {
	if len(o.pairs) < 4 {
		o.pairs = append(o.pairs, c)
	} else {
		o.pairs[1+o.rng.Intn(len(o.pairs)-1)] = c
	}
}

// run executes n sequences and returns the first difference, with the operations that led to it.
func (o *oracle) run(seed int64, n int) error {
	o.rng = rand.New(rand.NewSource(seed))
	for seq := 0; seq < n; seq++ {
		o.pairs = []*pair{o.newPair()}
		o.trace = nil
		// Start from a few registered features so most operations touch something.
		if err := o.compareAdd(o.pairs[0], nil, map[Feature]VersionedSpecs{
			"A": o.versionedSpecs(), "B": o.versionedSpecs(), "C": o.versionedSpecs(),
		}); err != nil {
			return fmt.Errorf("seed %d sequence %d initial AddVersioned: %w", seed, seq, err)
		}
		if err := o.compareAdd(o.pairs[0], map[Feature]FeatureSpec{"D": o.spec()}, nil); err != nil {
			return fmt.Errorf("seed %d sequence %d initial Add: %w", seed, seq, err)
		}
		steps := 20 + o.rng.Intn(40)
		for i := 0; i < steps; i++ {
			if err := o.step(); err != nil {
				tail := o.trace
				if len(tail) > 12 {
					tail = tail[len(tail)-12:]
				}
				return fmt.Errorf("seed %d sequence %d step %d: %w\nlast operations:\n  %s",
					seed, seq, i, err, strings.Join(tail, "\n  "))
			}
		}
	}
	return nil
}

func TestOracle(t *testing.T) {
	o := &oracle{
		harness: newHarness(captureKlog(t)),
		newOurs: func() MutableVersionedFeatureGate { return NewFeatureGate() },
	}
	if err := o.run(*oracleSeed, *oracleSequences); err != nil {
		t.Fatal(err)
	}
	t.Logf("exercised: %v", o.stats)

	// Guard against a run that agrees only because it never reached the interesting paths.
	for _, what := range []string{
		"err:missing bool value for", "err:invalid value of", "err:unrecognized feature gate",
		"err:cannot set feature gate", "err:feature is PreAlpha at emulated version",
		"err:with different spec already exists",
		"err:cannot add a feature gate after adding it to the flag set", "err:cannot override default",
		"err:is not available before version", "err:was explicitly set, but not in enabled map",
		"err:transition", "err:did not provide a version", "err:MinCompatibilityVersion", "err:patch version",
		"lockedGateKnown", "lockedSetToDefault", "allGateSet", "enabledPanic", "warningCompared",
		"deepCopyMutated", "deepCopyAndReset", "addFlag", "parseFlag", "metricsCompared", "overrideDefault",
		"orderDependentErrorAccepted", "versionedGateKnown", "preAlphaGateKnown", "addVersioned",
		"emulationSet", "queriedWarningCompared", "resetExplicit",
	} {
		if min := 5; o.stats[what] < min {
			t.Errorf("oracle exercised %q only %d times, want at least %d", what, o.stats[what], min)
		}
	}
}

// TestOracleDetectsMutants checks that the oracle fails for gates with one deliberate bug each.
func TestOracleDetectsMutants(t *testing.T) {
	log := captureKlog(t)
	for _, kind := range []string{
		"enabled-ignores-explicit", "set-swallows-errors", "add-ignores-conflict", "string-unsorted",
		"known-shows-ga", "deepcopy-shares", "panic-message", "extra-warning", "metrics-missing",
		"flag-usage", "set-ignores-allalpha", "emulation-ignored", "getall-shows-prealpha",
	} {
		t.Run(kind, func(t *testing.T) {
			o := &oracle{
				harness: newHarness(log),
				newOurs: func() MutableVersionedFeatureGate {
					return &mutant{MutableVersionedFeatureGate: NewFeatureGate(), kind: kind}
				},
			}
			err := o.run(*oracleSeed, 100)
			if err == nil {
				t.Fatalf("oracle did not notice mutant %q", kind)
			}
			t.Logf("caught: %v", strings.SplitN(err.Error(), "\n", 2)[0])
		})
	}
}

// mutant is our gate with one deliberate bug, selected by kind.
type mutant struct {
	MutableVersionedFeatureGate
	kind string
}

func (m *mutant) String() string {
	s := m.MutableVersionedFeatureGate.(fmt.Stringer).String()
	if m.kind == "string-unsorted" {
		parts := strings.Split(s, ",")
		sort.Sort(sort.Reverse(sort.StringSlice(parts)))
		return strings.Join(parts, ",")
	}
	return s
}

func (m *mutant) Type() string { return "mapStringBool" }

func (m *mutant) SetEmulationVersion(v *version.Version) error {
	if m.kind == "emulation-ignored" {
		return nil
	}
	return m.MutableVersionedFeatureGate.SetEmulationVersion(v)
}

func (m *mutant) GetAll() map[Feature]FeatureSpec {
	all := m.MutableVersionedFeatureGate.GetAll()
	if m.kind == "getall-shows-prealpha" {
		for name, specs := range m.GetAllVersioned() {
			if _, ok := all[name]; !ok && len(specs) > 0 {
				all[name] = specs[0]
			}
		}
	}
	return all
}

func (m *mutant) Enabled(key Feature) bool {
	switch m.kind {
	case "enabled-ignores-explicit":
		if spec, ok := m.GetAll()[key]; ok {
			return spec.Default
		}
	case "panic-message":
		if _, ok := m.GetAll()[key]; !ok {
			panic(fmt.Errorf("feature %q is not registered", key))
		}
	}
	return m.MutableVersionedFeatureGate.Enabled(key)
}

func (m *mutant) Set(s string) error {
	if m.kind == "set-ignores-allalpha" {
		s = strings.ReplaceAll(s, "AllAlpha=", "AllBeta=")
	}
	err := m.MutableVersionedFeatureGate.Set(s)
	if m.kind == "set-swallows-errors" {
		return nil
	}
	return err
}

func (m *mutant) SetFromMap(in map[string]bool) error {
	err := m.MutableVersionedFeatureGate.SetFromMap(in)
	if m.kind == "extra-warning" && err == nil && len(in) > 0 {
		klog.Warningf("Setting feature gates %v", in)
	}
	return err
}

func (m *mutant) Add(specs map[Feature]FeatureSpec) error {
	err := m.MutableVersionedFeatureGate.Add(specs)
	if m.kind == "add-ignores-conflict" && err != nil && strings.Contains(err.Error(), "different spec") {
		return nil
	}
	return err
}

func (m *mutant) KnownFeatures() []string {
	known := m.MutableVersionedFeatureGate.KnownFeatures()
	if m.kind == "known-shows-ga" {
		for name, spec := range m.GetAll() {
			if spec.PreRelease == GA {
				known = append(known, fmt.Sprintf("%s=true|false (%s - default=%t)", name, spec.PreRelease, spec.Default))
			}
		}
		sort.Strings(known)
	}
	return known
}

func (m *mutant) DeepCopyAndReset() MutableVersionedFeatureGate {
	return &mutant{MutableVersionedFeatureGate: m.MutableVersionedFeatureGate.DeepCopyAndReset(), kind: m.kind}
}

func (m *mutant) DeepCopy() MutableVersionedFeatureGate {
	if m.kind == "deepcopy-shares" {
		return m
	}
	return &mutant{MutableVersionedFeatureGate: m.MutableVersionedFeatureGate.DeepCopy(), kind: m.kind}
}

func (m *mutant) AddMetrics(reg prometheus.Registerer) error {
	if m.kind == "metrics-missing" {
		return nil
	}
	return m.MutableVersionedFeatureGate.AddMetrics(reg)
}

func (m *mutant) AddFlag(fs *pflag.FlagSet) {
	scratch := pflag.NewFlagSet("scratch", pflag.ContinueOnError)
	m.MutableVersionedFeatureGate.AddFlag(scratch)
	usage := scratch.Lookup(flagName).Usage
	if m.kind == "flag-usage" {
		usage = strings.ReplaceAll(usage, "\n", " ")
	}
	fs.Var(m, flagName, usage)
}
