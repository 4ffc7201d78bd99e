package simulate

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/prometheus/model/labels"
	v1 "k8s.io/api/core/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/pkg/config"
	"github.com/minikubelet/minikubelet/pkg/events"
	"github.com/minikubelet/minikubelet/pkg/featuregate"
	"github.com/minikubelet/minikubelet/pkg/features"
	"github.com/minikubelet/minikubelet/pkg/kubelet"
	"github.com/minikubelet/minikubelet/pkg/metrics"
	"github.com/minikubelet/minikubelet/pkg/promrules"
	"github.com/minikubelet/minikubelet/pkg/runner"
	"github.com/minikubelet/minikubelet/pkg/runtime/fake"
	"github.com/minikubelet/minikubelet/pkg/runtime/fault"
)

// Epoch is the virtual wall-clock time a scenario starts at (T+0) unless Options.Start says
// otherwise. Fixed, so metric values that are timestamps are the same on every run.
var Epoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// PromtoolStart is T+0 of a run that emits a promtool test. promtool's series start at the
// Unix epoch, but a runtime's timestamps cannot (0 means unset in the CRI): the run starts an
// hour later, and the test's series are padded with missing samples until then, so that
// every sample keeps its timestamp (and time(), timestamp() and timestamp-valued series
// agree). An hour: promtool evaluates the rules at every evaluation interval of the padding.
var PromtoolStart = time.Date(1970, 1, 1, 1, 0, 0, 0, time.UTC)

// ManifestUIDRoot is the manifest directory as the static pods' UIDs see it in a scenario
// (the kubelet's usual staticPodPath).
const ManifestUIDRoot = "/etc/kubernetes/manifests"

// DefaultNodeName is the node's name in a scenario unless its args set --hostname-override.
const DefaultNodeName = "node"

// Options configure Run.
type Options struct {
	// Dir is a directory Run may use for the manifest directory and the config file; a
	// temporary one (removed after the run) when empty.
	Dir string
	// Start is the virtual wall-clock time of T+0 (--start); Epoch when zero. The timeline
	// and expectations are offsets from it; metric timestamps and timestamp-valued metrics
	// (pleg_last_seen_seconds) follow it.
	Start time.Time
	// Metrics, when set, samples every metric series each virtual scrape interval and
	// writes them to Metrics.Out as OpenMetrics once the run is over (--metrics-out).
	Metrics *MetricsOptions
	// Rules, when set, evaluates Prometheus rules over the series sampled each virtual
	// scrape interval (--rules): their alerts' transitions join the timeline, and alert
	// expectations are checked against them.
	Rules *RulesOptions
}

// RulesError is a rule file Prometheus refuses: Prometheus' error, naming the file, the group
// and the rule.
type RulesError struct{ Err error }

func (e *RulesError) Error() string { return "flag --rules: " + e.Err.Error() }
func (e *RulesError) Unwrap() error { return e.Err }

// RulesOptions are the rules evaluated in a run.
type RulesOptions struct {
	Files []promrules.File
	// EvaluationInterval is the interval of the groups that set none
	// (promrules.DefaultInterval when 0).
	EvaluationInterval time.Duration
	// ScrapeInterval is how often the series are sampled when Metrics is not set
	// (DefaultScrapeInterval when 0; Metrics.Interval otherwise).
	ScrapeInterval time.Duration
	// PromtoolTest, when set, gets a `promtool test rules` file replaying the run
	// (--emit-promtool-test), naming the rule files as PromtoolRuleFiles do. The run then
	// starts at PromtoolStart unless Options.Start says otherwise (which is refused).
	PromtoolTest      io.Writer
	PromtoolRuleFiles []string

	// oneAtATime evaluates the rules one instant at a time (promrules.Options.OneAtATime):
	// what the tests compare the batched evaluation with.
	oneAtATime bool
}

// Run replays sc and returns its timeline and expectation results. An error means the
// scenario could not run (an *InvalidError for a bad configuration in args or config).
func Run(ctx context.Context, sc *Scenario, opts Options) (*Result, error) {
	dir := opts.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "minikubelet-simulate-")
		if err != nil {
			return nil, fmt.Errorf("create a directory for the scenario's files: %w", err)
		}
		defer os.RemoveAll(d)
		dir = d
	}
	start := opts.Start
	if opts.Rules != nil && opts.Rules.PromtoolTest != nil {
		if !start.IsZero() && !start.Equal(PromtoolStart) {
			return nil, &InvalidError{Err: fmt.Errorf("flag --emit-promtool-test: the run must start at %s, not at --start %s", PromtoolStart.Format(time.RFC3339), start.UTC().Format(time.RFC3339))}
		}
		start = PromtoolStart
	}
	if start.IsZero() {
		start = Epoch
	}
	s, err := newSimulation(ctx, sc, dir, start)
	if err != nil {
		return nil, err
	}
	defer s.close()
	if opts.Metrics != nil || opts.Rules != nil {
		interval := DefaultScrapeInterval
		if opts.Metrics != nil && opts.Metrics.Interval != 0 {
			interval = opts.Metrics.Interval
		} else if opts.Rules != nil && opts.Rules.ScrapeInterval != 0 {
			interval = opts.Rules.ScrapeInterval
		}
		if s.rec, err = newRecorder(s, interval, opts.Metrics != nil); err != nil {
			return nil, err
		}
	}
	if opts.Rules != nil {
		// The rules' storage is the run's: nothing of another run's with this directory.
		if err := os.RemoveAll(filepath.Join(dir, "rules")); err != nil {
			return nil, fmt.Errorf("rules storage: %w", err)
		}
		po := promrules.Options{Files: opts.Rules.Files, Interval: opts.Rules.EvaluationInterval,
			Start: s.epoch, KeepSamples: opts.Rules.PromtoolTest != nil, OneAtATime: opts.Rules.oneAtATime,
			Dir: filepath.Join(dir, "rules")} // the run's directory goes with it
		if po.KeepSamples {
			// promtool evaluates from the Unix epoch, over the padding too.
			po.EvalFrom = time.Unix(0, 0)
		}
		ev, err := promrules.New(po)
		if err != nil {
			return nil, &RulesError{Err: err}
		}
		defer ev.Close()
		defer s.rec.close() // first: its goroutine queries the storage
		s.rec.rules, s.rec.onRules = ev, s.rulesEvaluated
		s.rec.lines = func() int { return len(s.obs.lines) }
		if ev.Batched() && s.rec.families == nil {
			s.rec.bg = startEvaluator(ctx, ev)
		}
		s.rec.evaluate(ctx, s.epoch) // the evaluations before T+0, if any
	}
	if err := s.run(ctx); err != nil {
		return nil, err
	}
	if s.rec != nil && opts.Metrics != nil {
		if err := s.rec.write(opts.Metrics.Out); err != nil {
			return nil, fmt.Errorf("write the metrics: %w", err)
		}
	}
	if r := opts.Rules; r != nil && r.PromtoolTest != nil {
		err := s.rec.rules.WritePromtoolTest(r.PromtoolTest, promrules.PromtoolOptions{RuleFiles: r.PromtoolRuleFiles,
			ScrapeInterval: s.rec.interval, End: s.epoch.Add(s.sc.Duration.Duration), Name: s.sc.Name})
		if err != nil {
			return nil, err
		}
	}
	s.checkAlerts()
	return s.result(), nil
}

// simulation is one run of a scenario.
type simulation struct {
	sc       *Scenario
	epoch    time.Time // T+0
	manifest string    // the manifest directory
	cfg      *config.Config
	gate     featuregate.MutableFeatureGate
	clock    *testingclock.FakeClock
	runtime  *fake.Runtime
	rtReg    *metrics.Registry
	events   *events.Store
	seen     []v1.Event // every event recorded so far (the store keeps a bounded window)
	k        *kubelet.Kubelet
	kReg     *metrics.Registry
	sim      *runner.Sim
	running  bool // the kubelet's loops run (false after it halted or stopped)
	obs      *observer
	results  []ExpectationResult
	api      *apiServer // the in-process API of a cluster scenario; nil otherwise

	rec       *recorder              // nil unless the metrics are recorded or rules evaluated
	alerts    []promrules.Transition // every alert transition so far (--rules)
	alertExp  []*alertCheck          // the alert expectations, checked once the run is over
	nextStep  int                    // the index of the next step to apply
	scrapeErr error                  // the first error recording the metrics
}

func newSimulation(ctx context.Context, sc *Scenario, dir string, start time.Time) (*simulation, error) {
	manifests := filepath.Join(dir, "manifests")
	if err := os.MkdirAll(manifests, 0o755); err != nil {
		return nil, fmt.Errorf("create the manifest directory: %w", err)
	}
	for _, name := range sortedKeys(sc.Manifests) {
		if err := os.WriteFile(filepath.Join(manifests, name), []byte(sc.Manifests[name]), 0o644); err != nil {
			return nil, fmt.Errorf("write manifest %s: %w", name, err)
		}
	}
	args := []string{"--hostname-override=" + DefaultNodeName}
	if sc.EmulatedVersion != "" {
		args = append(args, "--emulated-version="+sc.EmulatedVersion)
	}
	args = append(args, sc.Args...)
	if sc.Config != "" {
		path := filepath.Join(dir, "config.yaml")
		if err := os.WriteFile(path, []byte(sc.Config), 0o644); err != nil {
			return nil, fmt.Errorf("write the config file: %w", err)
		}
		args = append(args, "--config="+path)
	}
	// The manifest directory is the scenario's, whatever args or config say.
	args = append(args, "--pod-manifest-path="+manifests)
	gate := features.NewFeatureGate()
	cfg, err := config.Load(args, gate, nil)
	if err != nil {
		return nil, &InvalidError{Err: fmt.Errorf("key \"args\"/\"config\": %w", err)}
	}
	if sc.Seed != nil {
		cfg.Simulator.Runtime.Seed = *sc.Seed
	} else if !containsFlag(sc.Args, "seed") {
		cfg.Simulator.Runtime.Seed = 1
	}

	s := &simulation{sc: sc, manifest: manifests, cfg: cfg, epoch: start, clock: testingclock.NewFakeClock(start)}
	if sc.Cluster {
		s.api = newAPIServer(s.clock)
	}
	s.obs = newObserver(s)
	s.rtReg = metrics.NewRegistry(cfg.Simulator.MetricsPrefix)
	s.runtime, err = kubelet.NewRuntime(cfg, s.clock, s.rtReg, func(fc *fake.Config) { fc.OnFault = s.obs.faultFired })
	if err != nil {
		return nil, &InvalidError{Err: err}
	}
	s.events = events.NewStore(s.clock, cfg.Simulator.NodeName, events.DefaultCapacity)
	s.events.Subscribe(func(e v1.Event) { s.seen = append(s.seen, e) })
	s.gate = gate
	if err := s.startKubelet(ctx); err != nil {
		s.runtime.Close() // no kubelet to hand the node to
		return nil, err
	}
	return s, nil
}

// startKubelet builds a kubelet on the simulation's runtime and clock (at start, and for a
// restart: a new process on the same runtime, with fresh metrics) and puts its loop table in
// the scheduler.
func (s *simulation) startKubelet(ctx context.Context) error {
	gate := s.gate
	s.kReg = metrics.NewRegistry(s.cfg.Simulator.MetricsPrefix)
	if s.kReg.Prefix() == config.DefaultMetricsPrefix {
		// As the daemon: kubelet_node_name, which kubelet dashboards and alerts join on.
		s.kReg.RegisterNodeName(s.cfg.Simulator.NodeName)
	}
	if err := gate.AddMetrics(s.kReg); err != nil {
		return fmt.Errorf("register feature gate metrics: %w", err)
	}
	kc := kubelet.Config{
		Config:   s.cfg,
		Gate:     gate,
		Clock:    s.clock,
		Registry: s.kReg,
		Events:   s.events,
		Runtime:  s.runtime,
		// A kubelet restart is a new process on the same runtime: its containers go on.
		KeepRuntime: true,
		// Every run has its own temporary manifest directory; UIDs hash this path instead.
		ManifestUIDRoot: ManifestUIDRoot,
	}
	if s.api != nil {
		// Cluster mode against the in-process API, its calls made inline so that runs repeat.
		kc.KubeClient, kc.InlineAPICalls = s.api.client, true
		s.api.dirty = true // a new kubelet lists the pods bound to it
	}
	k, err := kubelet.New(kc)
	if err != nil {
		return &InvalidError{Err: err}
	}
	s.k = k
	k.Start(ctx)
	loops := k.Loops()
	if s.sim == nil {
		s.sim = runner.NewSim(s.clock, loops)
	} else {
		s.sim.SetLoops(loops)
	}
	s.running = true
	s.obs.kubeletStarted(k)
	return nil
}

// close ends the run: the kubelet, then the node (the runtime's containers and their
// programs).
func (s *simulation) close() {
	s.stopKubelet()
	s.runtime.Close()
}

// stopKubelet stops the kubelet's loops; the runtime goes on (its containers keep running).
func (s *simulation) stopKubelet() {
	if !s.running {
		return
	}
	s.k.Stop()
	s.running = false
	s.sim.SetLoops([]runner.Loop{kubelet.RuntimeLoop(s.runtime)})
}

// pending is an expectation still waiting for an instant at which it holds.
type pending struct {
	resIndex int // into simulation.results
	check    func() (bool, string)
	deadline time.Time
}

func (s *simulation) run(ctx context.Context) error {
	end := s.epoch.Add(s.sc.Duration.Duration)
	var active []*pending
	// settled observes the state complete at an instant: the timeline, then the
	// expectations waiting in their window.
	settled := func(now time.Time) {
		s.syncAPIPods(ctx)
		s.obs.observe(now)
		s.checkShutdown(ctx, now)
		s.scrape(now, end)
		kept := active[:0]
		for _, p := range active {
			if ok, _ := p.check(); ok {
				s.results[p.resIndex].Passed, s.results[p.resIndex].HeldAt = true, now.Sub(s.epoch)
				continue
			}
			kept = append(kept, p)
		}
		active = kept
	}
	next := 0
	for {
		s.nextStep = next
		// The next boundary: a step's time, an expectation window's end, the end of a
		// shutdown's grace, or the end of the scenario.
		boundary := end
		if next < len(s.sc.Steps) {
			boundary = minTime(boundary, s.epoch.Add(s.sc.Steps[next].At.Duration))
		}
		for _, p := range active {
			boundary = minTime(boundary, p.deadline)
		}
		if err := s.sim.RunUntil(ctx, boundary, settled); err != nil {
			return fmt.Errorf("run until %s: %w", offset(boundary.Sub(s.epoch)), err)
		}
		now := s.clock.Now()
		settled(now)
		// Windows that end now and still do not hold fail with what was observed last.
		kept := active[:0]
		for _, p := range active {
			if !now.Before(p.deadline) {
				_, s.results[p.resIndex].Observed = p.check()
				continue
			}
			kept = append(kept, p)
		}
		active = kept
		for next < len(s.sc.Steps) && !s.epoch.Add(s.sc.Steps[next].At.Duration).After(now) {
			ps, err := s.apply(ctx, next, now)
			if err != nil {
				return err
			}
			active = append(active, ps...)
			next++
		}
		s.nextStep = next
		// The actions changed the state: the scrapes from now on see it.
		s.scrape(now, end)
		if !now.Before(end) && next >= len(s.sc.Steps) {
			for _, p := range active {
				_, s.results[p.resIndex].Observed = p.check()
			}
			if s.rec != nil {
				// The last scrape instant may be the end itself.
				if err := s.rec.scrape(now, end.Add(1), s.running); err != nil {
					return err
				}
				s.rec.evaluate(ctx, end.Add(1))
				if err := s.rec.flush(ctx); err != nil {
					return err
				}
			}
			return s.scrapeErr
		}
	}
}

// apply runs step i at now: an action, or the checks of an expectation (those that do not
// hold yet and have a window are returned to be checked again).
func (s *simulation) apply(ctx context.Context, i int, now time.Time) ([]*pending, error) {
	st := &s.sc.Steps[i]
	switch {
	case st.Write != nil:
		for _, name := range sortedKeys(st.Write) {
			if err := os.WriteFile(filepath.Join(s.manifest, name), []byte(st.Write[name]), 0o644); err != nil {
				return nil, fmt.Errorf("step %d: write %s: %w", i, name, err)
			}
			s.obs.line(now, "manifest", "wrote "+name)
		}
		s.triggerRelist()
	case st.Remove != nil:
		for _, name := range st.Remove {
			err := os.Remove(filepath.Join(s.manifest, name))
			if err != nil && !os.IsNotExist(err) {
				return nil, fmt.Errorf("step %d: remove %s: %w", i, name, err)
			}
			s.obs.line(now, "manifest", "removed "+name)
		}
		s.triggerRelist()
	case st.Fault != nil:
		spec, err := s.k.AddFault(*st.Fault)
		if err != nil {
			return nil, &InvalidError{Err: fmt.Errorf("step %d: key \"fault\": %w", i, err)}
		}
		s.obs.line(now, "fault", "added "+describeFault(spec))
	case st.ClearFaults:
		for _, f := range s.k.ClearFaults() {
			s.obs.line(now, "fault", "cleared id="+f.ID)
		}
	case st.ClearFault != "":
		if err := s.k.RemoveFault(st.ClearFault); err != nil {
			return nil, &InvalidError{Err: fmt.Errorf("step %d: key \"clearFault\": %w", i, err)}
		}
		s.obs.line(now, "fault", "cleared id="+st.ClearFault)
	case st.Shutdown:
		s.shutdown(ctx, now)
	case st.RestartKubelet:
		s.stopKubelet()
		if err := s.startKubelet(ctx); err != nil {
			return nil, fmt.Errorf("step %d: restart: %w", i, err)
		}
		s.obs.line(now, "kubelet", "restarted")
	case st.Apply != "":
		if err := s.applyObjects(ctx, st.objects, now); err != nil {
			return nil, fmt.Errorf("step %d: apply: %w", i, err)
		}
		s.syncAPIPods(ctx)
	case st.Delete != nil:
		if err := s.deleteObjects(ctx, st.Delete, now); err != nil {
			return nil, fmt.Errorf("step %d: delete: %w", i, err)
		}
		s.syncAPIPods(ctx)
	case st.Expect != nil:
		return s.expect(i, st, now), nil
	}
	return nil, nil
}

// triggerRelist makes the file source relist soon, as the daemon's fsnotify watcher does
// after a file event.
func (s *simulation) triggerRelist() {
	if s.running {
		if fs := s.k.FileSource(); fs != nil {
			fs.Trigger()
		}
	}
}

// shutdown is the node shutdown signal (SIGTERM to the daemon).
func (s *simulation) shutdown(ctx context.Context, now time.Time) {
	if !s.running || s.k.ShuttingDown() {
		return
	}
	s.obs.line(now, "kubelet", "shutdown signal")
	s.k.Shutdown(ctx, now)
	s.checkShutdown(ctx, now)
}

// checkShutdown stops the kubelet once it has halted: the shutdown is complete.
func (s *simulation) checkShutdown(ctx context.Context, now time.Time) {
	if s.running && s.k.Settle(ctx, now) {
		s.stopKubelet()
		s.obs.line(now, "kubelet", "stopped")
	}
}

// scrape records the scrape instants from now until the state may next change: the next
// step of a loop, the next action, or the end of a shutdown's grace. Nothing else moves the
// state, so the samples are those a scrape at each instant would see, and recording adds no
// instants to the run (the output is the same with and without --metrics-out).
func (s *simulation) scrape(now, end time.Time) {
	if s.rec == nil || s.scrapeErr != nil {
		return
	}
	limit := end
	if s.nextStep < len(s.sc.Steps) {
		limit = minTime(limit, s.epoch.Add(s.sc.Steps[s.nextStep].At.Duration))
	}
	if d, ok := s.sim.NextDue(); ok && s.running {
		limit = minTime(limit, d)
	}
	if s.scrapeErr = s.rec.scrape(now, limit, s.running); s.scrapeErr == nil {
		s.rec.evaluate(context.Background(), limit)
	}
}

// rulesEvaluated puts what an evaluation found on the timeline, at line (after the last when
// -1): an alert's new state with its labels, a rule whose evaluation failed (reported, not
// fatal, as Prometheus does). It returns how many lines it put.
func (s *simulation) rulesEvaluated(trans []promrules.Transition, errs []promrules.RuleError, line int) int {
	if line < 0 || line > len(s.obs.lines) {
		line = len(s.obs.lines)
	}
	before := len(s.obs.lines)
	after := slices.Clone(s.obs.lines[line:])
	s.obs.lines = s.obs.lines[:line]
	for _, t := range trans {
		s.alerts = append(s.alerts, t)
		if t.At.Before(s.epoch) {
			continue // before T+0 (a promtool test's padding): the state counts, the line is not shown
		}
		s.obs.line(t.At, "alert", t.Alert+" "+string(t.State)+" "+labels.NewBuilder(t.Labels).Del(labels.AlertName).Labels().String())
	}
	for _, e := range errs {
		s.obs.line(e.At, "rules", e.Rule+" evaluation failed: "+e.Err.Error())
	}
	s.obs.lines = append(s.obs.lines, after...)
	return len(s.obs.lines) - before
}

// gather reads every metric series of the kubelet (its cAdvisor's included) and the runtime.
func (s *simulation) gather() ([]*dto.MetricFamily, error) {
	gs := prometheus.Gatherers{s.kReg, s.rtReg, s.k.ProbeRegistry(), s.k.CadvisorRegistry()}
	if r := s.k.StateRegistry(); r != nil {
		gs = append(gs, r)
	}
	return gs.Gather()
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// sortedKeys returns a map's keys in order: everything the simulation walks over a map
// for does so in this order, so that runs repeat byte for byte.
func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

func containsFlag(args []string, name string) bool {
	for _, a := range args {
		if a == "--"+name || len(a) > len(name)+3 && a[:len(name)+3] == "--"+name+"=" {
			return true
		}
	}
	return false
}

func describeFault(f fault.Spec) string {
	out := "id=" + f.ID + " method=" + f.Method + " type=" + string(f.Type)
	if f.Delay.Duration > 0 {
		out += " delay=" + f.Delay.Duration.String()
	}
	if f.PerContainer.Duration > 0 {
		out += " perContainer=" + f.PerContainer.Duration.String()
	}
	if f.For.Duration > 0 {
		out += " for=" + f.For.Duration.String()
	}
	if f.Count > 0 {
		out += " count=" + strconv.Itoa(f.Count)
	}
	if f.Rate > 0 {
		out += " rate=" + strconv.FormatFloat(f.Rate, 'g', -1, 64)
	}
	if f.Condition != "" {
		out += " condition=" + f.Condition
	}
	return out
}

// offset formats a virtual time offset as the timeline does: T+hh:mm:ss.mmm.
func offset(d time.Duration) string {
	ms := d.Milliseconds()
	h := ms / 3_600_000
	m := ms / 60_000 % 60
	sec := ms / 1000 % 60
	return fmt.Sprintf("T+%02d:%02d:%02d.%03d", h, m, sec, ms%1000)
}
