package runtimestate

import (
	"context"
	"errors"
	"fmt"
	"time"

	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/runner"
)

const (
	// DefaultSyncThreshold is how long the runtime may go without a successful Status()
	// before RuntimeErrors reports it down (upstream maxWaitForContainerRuntime).
	DefaultSyncThreshold = 30 * time.Second
	// DefaultPeriod is how often the runner polls the runtime's Status() (upstream
	// updateRuntimeUp runs every 5s).
	DefaultPeriod = 5 * time.Second
)

// Messages reported before the first successful status check and after the threshold.
var (
	// ErrNetworkUnknown is the network error until the first Status() answer (upstream
	// kubelet ErrNetworkUnknown).
	ErrNetworkUnknown = errors.New("network state unknown")
	errNotYetChecked  = errors.New("container runtime status check may not have completed yet")
	errRuntimeDown    = errors.New("container runtime is down")
)

// StatusGetter is the part of the CRI runtime service the state polls.
type StatusGetter interface {
	Status(ctx context.Context) (*cri.RuntimeStatus, error)
}

var _ StatusGetter = cri.RuntimeService(nil)

// Config configures a State.
type Config struct {
	// Clock stamps successful checks and judges the threshold. Required.
	Clock clock.PassiveClock
	// Runtime is polled by UpdateRuntimeUp. Required.
	Runtime StatusGetter
	// SyncThreshold: default DefaultSyncThreshold.
	SyncThreshold time.Duration
	// Period of the runner: default DefaultPeriod.
	Period time.Duration
}

type healthCheck struct {
	name string
	fn   func() (bool, error)
	// reportOnly: reported by RuntimeErrors (node Ready) but not by SyncErrors.
	reportOnly bool
}

// State is the kubelet's view of runtime health. Not safe for concurrent use: the node's
// owner is its one caller (its poll, the sync loop and the node status setters).
type State struct {
	clock     clock.PassiveClock
	runtime   StatusGetter
	threshold time.Duration
	period    time.Duration
	// poll runs UpdateRuntimeUp every period as a task: a slow or hung Status() call waits
	// without blocking readers or other loops.
	poll *runner.Periodic

	lastSync     time.Time
	networkError error
	runtimeError error
	healthChecks []healthCheck
	// features and handlers are the runtime's, from its last ready Status (none until then).
	features *cri.RuntimeFeatures
	handlers []cri.RuntimeHandler
}

// New validates cfg, fills defaults and returns a State whose runtime status has not yet
// been checked.
func New(cfg Config) (*State, error) {
	if cfg.Clock == nil {
		return nil, errors.New("runtimestate: Config.Clock is required")
	}
	if cfg.Runtime == nil {
		return nil, errors.New("runtimestate: Config.Runtime is required")
	}
	if cfg.SyncThreshold < 0 {
		return nil, fmt.Errorf("runtimestate: Config.SyncThreshold must not be negative, got %v", cfg.SyncThreshold)
	}
	if cfg.Period < 0 {
		return nil, fmt.Errorf("runtimestate: Config.Period must not be negative, got %v", cfg.Period)
	}
	if cfg.SyncThreshold == 0 {
		cfg.SyncThreshold = DefaultSyncThreshold
	}
	if cfg.Period == 0 {
		cfg.Period = DefaultPeriod
	}
	s := &State{
		clock:        cfg.Clock,
		runtime:      cfg.Runtime,
		threshold:    cfg.SyncThreshold,
		period:       cfg.Period,
		networkError: ErrNetworkUnknown,
	}
	s.poll = runner.NewPeriodic(cfg.Clock, runner.Every(cfg.Period), func(ctx context.Context) {
		if err := s.UpdateRuntimeUp(ctx); err != nil && ctx.Err() == nil {
			klog.FromContext(ctx).Error(err, "Container runtime sanity check failed")
		}
	})
	return s, nil
}

// AddHealthCheck registers a check that RuntimeErrors consults on every call, reporting a
// failure as "<name> is not healthy: <err>". Checks must be cheap and must not call the
// runtime (the PLEG's Healthy only reads its relist timestamp).
func (s *State) AddHealthCheck(name string, f func() (bool, error)) {
	s.healthChecks = append(s.healthChecks, healthCheck{name: name, fn: f})
}

// AddReportOnlyHealthCheck registers a check that RuntimeErrors reports (the node's Ready
// condition) but SyncErrors leaves out: a condition that only the sync loop's own progress
// clears, such as a full PLEG event channel, must not stop the sync loop, or it never clears.
func (s *State) AddReportOnlyHealthCheck(name string, f func() (bool, error)) {
	s.healthChecks = append(s.healthChecks, healthCheck{name: name, fn: f, reportOnly: true})
}

// UpdateRuntimeUp is one poll of the runtime (upstream updateRuntimeUp): it asks Status()
// and records the network and runtime conditions; only a runtime that reports
// RuntimeReady refreshes the last successful sync, its handlers and features. A failed Status() call keeps the
// previous state and is returned. It waits while Status() waits (a hung runtime; run it as a
// task, as the poll loop does), so readers never depend on it. Calls must not overlap.
func (s *State) UpdateRuntimeUp(ctx context.Context) error {
	logger := klog.FromContext(ctx)

	st, err := s.runtime.Status(ctx)
	if err != nil {
		return fmt.Errorf("container runtime sanity check failed: %w", err)
	}
	if st == nil {
		return errors.New("container runtime status is nil")
	}
	logger.V(4).Info("Container runtime status", "status", st)

	network := st.Condition(cri.NetworkReady)
	if network == nil || !network.Status {
		s.setNetwork(fmt.Errorf("container runtime network not ready: %s", conditionString(network)))
	} else {
		s.setNetwork(nil)
	}

	rt := st.Condition(cri.RuntimeReady)
	if rt == nil || !rt.Status {
		changed := s.runtimeError == nil
		s.runtimeError = fmt.Errorf("container runtime not ready: %s", conditionString(rt))
		if changed {
			logger.V(2).Info("Container runtime not ready", "runtimeReady", conditionString(rt))
		}
		return nil
	}
	if s.runtimeError != nil {
		logger.V(2).Info("Container runtime is ready again")
	}
	s.runtimeError = nil
	s.features = st.Features
	s.handlers = st.Handlers
	s.lastSync = s.clock.Now()
	return nil
}

// Handlers are the runtime's handlers as its last ready Status reported them (upstream's
// runtimeState.runtimeHandlers): none before the runtime was first ready. Read only.
func (s *State) Handlers() []cri.RuntimeHandler { return s.handlers }

// Features are the runtime's features as its last ready Status reported them (upstream's
// runtimeState.runtimeFeatures): nil before the runtime was first ready, or from a runtime
// that reports none. Read only.
func (s *State) Features() *cri.RuntimeFeatures { return s.features }

func (s *State) setNetwork(err error) {
	s.networkError = err
}

// conditionString formats a runtime condition as the kubelet's RuntimeCondition.String
// does, so messages read "RuntimeReady=false reason:X message:Y" ("<nil>" when absent).
func conditionString(c *cri.RuntimeCondition) string {
	if c == nil {
		return "<nil>"
	}
	return fmt.Sprintf("%s=%t reason:%s message:%s", c.Type, c.Status, c.Reason, c.Message)
}

// RuntimeErrors aggregates why the runtime is not usable: no successful check yet, or none
// within the threshold ("container runtime is down"), every failing health check, and a
// not-ready runtime. nil when healthy. The format is the apimachinery aggregate's: one
// error alone, several as "[a, b]".
func (s *State) RuntimeErrors() error { return s.errors(true) }

// SyncErrors is RuntimeErrors without the report-only checks: what gates the sync loop.
func (s *State) SyncErrors() error { return s.errors(false) }

func (s *State) errors(reportOnly bool) error {
	var errs []error
	if s.lastSync.IsZero() {
		errs = append(errs, errNotYetChecked)
	} else if !s.lastSync.Add(s.threshold).After(s.clock.Now()) {
		errs = append(errs, errRuntimeDown)
	}
	for _, hc := range s.healthChecks {
		if hc.reportOnly && !reportOnly {
			continue
		}
		if ok, err := hc.fn(); !ok {
			errs = append(errs, fmt.Errorf("%s is not healthy: %v", hc.name, err))
		}
	}
	if s.runtimeError != nil {
		errs = append(errs, s.runtimeError)
	}
	return utilerrors.NewAggregate(errs)
}

// NetworkErrors is the runtime's NetworkReady problem, or nil.
func (s *State) NetworkErrors() error {
	if s.networkError == nil {
		return nil
	}
	return utilerrors.NewAggregate([]error{s.networkError})
}

// StorageErrors is always nil: the simulator has no volume plugins (kept so the Ready
// condition is computed from the same three sources as upstream).
func (s *State) StorageErrors() error { return nil }

// LastSync is the time of the last successful status check (zero before the first).
func (s *State) LastSync() time.Time {
	return s.lastSync
}

// Period is the runner's polling period.
func (s *State) Period() time.Duration { return s.period }

// Due, Step, Wake and Stop are the poll loop (upstream's updateRuntimeUp every 5s): see
// runner.Periodic.
func (s *State) Due(now time.Time) time.Time { return s.poll.Due(now) }
func (s *State) Step(ctx context.Context)    { s.poll.Step(ctx) }
func (s *State) Wake() *runner.Signal        { return s.poll.Wake() }
func (s *State) Stop()                       { s.poll.Stop() }
