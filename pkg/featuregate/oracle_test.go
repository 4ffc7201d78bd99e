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
	upstream "k8s.io/component-base/featuregate"
	"k8s.io/klog/v2"
)

var (
	oracleSeed      = flag.Int64("oracle.seed", 1, "seed for TestOracle's random operation sequences")
	oracleSequences = flag.Int("oracle.sequences", 100, "number of random operation sequences TestOracle runs (raise it when changing the gate)")
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

// oracle runs random operation sequences against our gate and component-base's.
type oracle struct {
	*harness
	rng *rand.Rand
	// newOurs builds our side of a fresh pair; tests substitute broken gates here.
	newOurs func() MutableFeatureGate
	pairs   []*pair
	trace   []string
}

func (o *oracle) pick(xs []string) string { return xs[o.rng.Intn(len(xs))] }

// name returns a registered name most of the time, otherwise an unknown one.
func (o *oracle) name(p *pair) string {
	if o.rng.Intn(6) == 0 {
		return o.pick(oracleUnknown)
	}
	var known []string
	for n := range p.theirs.GetAll() {
		known = append(known, string(n))
	}
	sort.Strings(known)
	return o.pick(known)
}

func (o *oracle) spec() FeatureSpec {
	return FeatureSpec{
		Default:       o.rng.Intn(2) == 0,
		LockToDefault: o.rng.Intn(4) == 0,
		PreRelease:    oracleStages[o.rng.Intn(len(oracleStages))],
	}
}

// specs returns 1-3 features to Add, often re-using a registered spec unchanged.
func (o *oracle) specs(p *pair) map[Feature]FeatureSpec {
	registered := fromUpstreamSpecs(p.theirs.GetAll())
	out := map[Feature]FeatureSpec{}
	for n := 1 + o.rng.Intn(3); n > 0; n-- {
		name := Feature(o.pick(oracleNames))
		if spec, ok := registered[name]; ok && o.rng.Intn(3) != 0 {
			out[name] = spec
			continue
		}
		out[name] = o.spec()
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
	return &pair{ours: o.newOurs(), theirs: upstream.NewFeatureGate()}
}

// mutate applies one random write to p.
func (o *oracle) mutate(p *pair) error {
	switch o.rng.Intn(4) {
	case 0:
		s := o.specs(p)
		o.trace = append(o.trace, fmt.Sprintf("Add(%v)", s))
		return o.compareAdd(p, s)
	case 1:
		s := o.setString(p)
		o.trace = append(o.trace, fmt.Sprintf("Set(%q)", s))
		return o.compareSet(p, s)
	case 2:
		m := o.setMap(p)
		o.trace = append(o.trace, fmt.Sprintf("SetFromMap(%v)", m))
		return o.compareSetFromMap(p, m)
	default:
		name, val := Feature(o.name(p)), o.rng.Intn(2) == 0
		o.trace = append(o.trace, fmt.Sprintf("OverrideDefault(%q, %v)", name, val))
		return o.compareOverrideDefault(p, name, val)
	}
}

// step applies one random operation to a random pair and then compares every pair.
func (o *oracle) step() error {
	i := o.rng.Intn(len(o.pairs))
	p := o.pairs[i]
	var err error
	switch op := o.rng.Intn(20); {
	case op < 12:
		err = o.mutate(p)
	case op < 14:
		o.trace = append(o.trace, fmt.Sprintf("pair[%d].DeepCopy() then mutate the copy", i))
		c := &pair{ours: p.ours.DeepCopy(), theirs: p.theirs.DeepCopy()}
		if len(o.pairs) < 4 {
			o.pairs = append(o.pairs, c)
		} else {
			o.pairs[1+o.rng.Intn(len(o.pairs)-1)] = c
		}
		o.stats["deepCopyMutated"]++
		err = o.mutate(c)
	case op < 15:
		o.trace = append(o.trace, fmt.Sprintf("pair[%d].AddFlag", i))
		err = o.compareAddFlag(p)
	case op < 17 && p.oursFS != nil:
		s := o.setString(p)
		o.trace = append(o.trace, fmt.Sprintf("pair[%d] parse --feature-gates=%s", i, s))
		err = o.compareParseFlag(p, s)
	case op < 18:
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

// run executes n sequences and returns the first difference, with the operations that led to it.
func (o *oracle) run(seed int64, n int) error {
	o.rng = rand.New(rand.NewSource(seed))
	for seq := 0; seq < n; seq++ {
		o.pairs = []*pair{o.newPair()}
		o.trace = nil
		// Start from a few registered features so most operations touch something.
		if err := o.compareAdd(o.pairs[0], map[Feature]FeatureSpec{
			"A": o.spec(), "B": o.spec(), "C": o.spec(),
		}); err != nil {
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
		newOurs: func() MutableFeatureGate { return NewFeatureGate() },
	}
	if err := o.run(*oracleSeed, *oracleSequences); err != nil {
		t.Fatal(err)
	}
	t.Logf("exercised: %v", o.stats)

	// Guard against a run that agrees only because it never reached the interesting paths.
	for _, what := range []string{
		"err:missing bool value for", "err:invalid value of", "err:unrecognized feature gate",
		"err:cannot set feature gate", "err:with different spec already exists",
		"err:cannot add a feature gate after adding it to the flag set", "err:cannot override default",
		"lockedGateKnown", "lockedSetToDefault", "allGateSet", "enabledPanic", "warningCompared",
		"deepCopyMutated", "addFlag", "parseFlag", "metricsCompared", "overrideDefault",
		"orderDependentErrorAccepted",
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
		"flag-usage", "set-ignores-allalpha",
	} {
		t.Run(kind, func(t *testing.T) {
			o := &oracle{
				harness: newHarness(log),
				newOurs: func() MutableFeatureGate { return &mutant{MutableFeatureGate: NewFeatureGate(), kind: kind} },
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
	MutableFeatureGate
	kind string
}

func (m *mutant) String() string {
	s := m.MutableFeatureGate.(fmt.Stringer).String()
	if m.kind == "string-unsorted" {
		parts := strings.Split(s, ",")
		sort.Sort(sort.Reverse(sort.StringSlice(parts)))
		return strings.Join(parts, ",")
	}
	return s
}

func (m *mutant) Type() string { return "mapStringBool" }

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
	return m.MutableFeatureGate.Enabled(key)
}

func (m *mutant) Set(s string) error {
	if m.kind == "set-ignores-allalpha" {
		s = strings.ReplaceAll(s, "AllAlpha=", "AllBeta=")
	}
	err := m.MutableFeatureGate.Set(s)
	if m.kind == "set-swallows-errors" {
		return nil
	}
	return err
}

func (m *mutant) SetFromMap(in map[string]bool) error {
	err := m.MutableFeatureGate.SetFromMap(in)
	if m.kind == "extra-warning" && err == nil && len(in) > 0 {
		klog.Warningf("Setting feature gates %v", in)
	}
	return err
}

func (m *mutant) Add(specs map[Feature]FeatureSpec) error {
	err := m.MutableFeatureGate.Add(specs)
	if m.kind == "add-ignores-conflict" && err != nil && strings.Contains(err.Error(), "different spec") {
		return nil
	}
	return err
}

func (m *mutant) KnownFeatures() []string {
	known := m.MutableFeatureGate.KnownFeatures()
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

func (m *mutant) DeepCopy() MutableFeatureGate {
	if m.kind == "deepcopy-shares" {
		return m
	}
	return &mutant{MutableFeatureGate: m.MutableFeatureGate.DeepCopy(), kind: m.kind}
}

func (m *mutant) AddMetrics(reg prometheus.Registerer) error {
	if m.kind == "metrics-missing" {
		return nil
	}
	return m.MutableFeatureGate.AddMetrics(reg)
}

func (m *mutant) AddFlag(fs *pflag.FlagSet) {
	scratch := pflag.NewFlagSet("scratch", pflag.ContinueOnError)
	m.MutableFeatureGate.AddFlag(scratch)
	usage := scratch.Lookup(flagName).Usage
	if m.kind == "flag-usage" {
		usage = strings.ReplaceAll(usage, "\n", " ")
	}
	fs.Var(m, flagName, usage)
}
