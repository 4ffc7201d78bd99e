package features

import (
	"fmt"

	"github.com/minikubelet/minikubelet/pkg/featuregate"
	"github.com/minikubelet/minikubelet/pkg/kubeletref"
)

// The simulator's gates. Each one changes real behaviour; components take the resulting
// boolean in their Config instead of reading the global gate, so both values stay testable.
const (
	// EventedPLEG replaces the generic, polling PLEG as the source of pod lifecycle events
	// with one fed by the runtime's container event stream. The generic PLEG keeps running at
	// a long period (300s, threshold 10m) as a safety net, and takes over again at 1s/3m when
	// the stream fails more than the configured number of times.
	// Upstream: alpha (default off) in v1.30.
	EventedPLEG featuregate.Feature = "EventedPLEG"

	// PodReadyToStartContainersCondition adds the PodReadyToStartContainers pod condition,
	// True once the pod's sandbox is ready and its network configured.
	// Upstream: beta (default on) since v1.29.
	PodReadyToStartContainersCondition featuregate.Feature = "PodReadyToStartContainersCondition"

	// GracefulNodeShutdown makes the daemon, on SIGTERM, terminate running pods within
	// kubeletConfiguration.shutdownGracePeriod (critical pods last, within
	// shutdownGracePeriodCriticalPods) before it exits. As upstream, a shutdownGracePeriod
	// of 0 leaves the feature inactive even with the gate on.
	// Upstream: beta (default on) since v1.21.
	GracefulNodeShutdown featuregate.Feature = "GracefulNodeShutdown"

	// SidecarContainers starts init containers with restartPolicy Always as sidecars: they
	// start in order with the other init containers, keep running while the app containers
	// run, and are restarted when they exit.
	// Upstream: beta (default on) since v1.29, as here; GA in v1.33.
	SidecarContainers featuregate.Feature = "SidecarContainers"

	// PodHostIPs makes the kubelet report status.hostIPs beside status.hostIP.
	// Upstream: GA and locked on in v1.30, so it can only be set to true.
	PodHostIPs featuregate.Feature = "PodHostIPs"

	// RotateKubeletServerCertificate lets serverTLSBootstrap request the secure port's
	// certificate from the API server and renew it; off, the self-signed one is served.
	// Upstream: beta (default on) since v1.12.
	RotateKubeletServerCertificate featuregate.Feature = "RotateKubeletServerCertificate"
)

// defaultSimulatorFeatureGates holds the gates the simulator models and their specs: the
// spec kubelet v1.30 gives each (TestGatesMatchKubernetes checks them against the kubelet's
// table, pkg/kubeletref).
var defaultSimulatorFeatureGates = map[featuregate.Feature]featuregate.FeatureSpec{
	EventedPLEG:                        {Default: false, PreRelease: featuregate.Alpha},
	PodReadyToStartContainersCondition: {Default: true, PreRelease: featuregate.Beta},
	GracefulNodeShutdown:               {Default: true, PreRelease: featuregate.Beta},
	SidecarContainers:                  {Default: true, PreRelease: featuregate.Beta},
	PodHostIPs:                         {Default: true, PreRelease: featuregate.GA, LockToDefault: true},
	RotateKubeletServerCertificate:     {Default: true, PreRelease: featuregate.Beta},
}

var (
	// DefaultMutableFeatureGate is the process-wide gate with every simulator feature
	// registered. Only cmd/ (which applies --feature-gates and the config file's
	// featureGates) and tests (through featuregate/testing.SetFeatureGateDuringTest) may
	// change it.
	DefaultMutableFeatureGate featuregate.MutableFeatureGate = featuregate.NewFeatureGate()

	// DefaultFeatureGate is the read-only view of DefaultMutableFeatureGate for the wiring
	// code that turns gates into component Config fields.
	DefaultFeatureGate featuregate.FeatureGate = DefaultMutableFeatureGate
)

func init() {
	if err := AddTo(DefaultMutableFeatureGate); err != nil {
		// Only a programming error (a conflicting spec) gets here.
		panic(err)
	}
}

// Specs returns every gate of kubelet v1.30, those the simulator models and the others
// (accepted as the kubelet accepts them, and changing nothing here), with its spec.
func Specs() map[featuregate.Feature]featuregate.FeatureSpec {
	out := make(map[featuregate.Feature]featuregate.FeatureSpec, len(upstreamGates)+len(defaultSimulatorFeatureGates))
	for name, spec := range upstreamGates {
		out[name] = spec
	}
	for name, spec := range defaultSimulatorFeatureGates {
		out[name] = spec
	}
	return out
}

// SimulatedSpecs returns the gates the simulator models, with their specs.
func SimulatedSpecs() map[featuregate.Feature]featuregate.FeatureSpec {
	out := make(map[featuregate.Feature]featuregate.FeatureSpec, len(defaultSimulatorFeatureGates))
	for name, spec := range defaultSimulatorFeatureGates {
		out[name] = spec
	}
	return out
}

// Simulated reports whether the simulator models a gate: set, it changes what a node does.
func Simulated(name featuregate.Feature) bool {
	_, ok := defaultSimulatorFeatureGates[name]
	return ok
}

// upstreamGates is the kubelet's whole v1.30 table: a command line or config file from a
// real node names such gates (InPlacePodVerticalScaling=true, ...), and the kubelet takes
// them, locked ones refused with its message.
var upstreamGates = func() map[featuregate.Feature]featuregate.FeatureSpec {
	stages := map[string]featuregate.FeatureSpec{"ALPHA": {PreRelease: featuregate.Alpha}, "BETA": {PreRelease: featuregate.Beta},
		"": {PreRelease: featuregate.GA}, "DEPRECATED": {PreRelease: featuregate.Deprecated}}
	out := map[featuregate.Feature]featuregate.FeatureSpec{}
	for _, g := range kubeletref.Gates() {
		spec, ok := stages[g.PreRelease]
		if !ok {
			panic(fmt.Sprintf("features: gate %s has the unknown stage %q", g.Name, g.PreRelease))
		}
		spec.Default, spec.LockToDefault = g.Default, g.LockToDefault
		out[featuregate.Feature(g.Name)] = spec
	}
	return out
}()

// AddTo registers every v1.30 gate in gate. It fails if gate already knows one of them
// with a different spec or has been added to a flag set.
func AddTo(gate featuregate.MutableFeatureGate) error {
	if err := gate.Add(Specs()); err != nil {
		return fmt.Errorf("register feature gates: %w", err)
	}
	return nil
}

// NewFeatureGate returns a fresh gate with the simulator's gates registered and nothing
// set. Use it where one process holds several independent configurations (tests,
// simulations of several nodes) instead of sharing DefaultMutableFeatureGate.
func NewFeatureGate() featuregate.MutableFeatureGate {
	gate := featuregate.NewFeatureGate()
	if err := AddTo(gate); err != nil {
		panic(err) // a fresh gate cannot conflict
	}
	return gate
}
