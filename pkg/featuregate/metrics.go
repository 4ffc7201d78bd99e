package featuregate

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Every metric this package exports.
const (
	metricsNamespace = "kubernetes"
	// featureEnabledName is exported as kubernetes_feature_enabled{name,stage}: 1 if enabled, else 0.
	featureEnabledName = "feature_enabled"
	// featureEnabledHelp matches component-base, whose metrics framework prefixes the
	// stability level ("[BETA]") to the help text.
	featureEnabledHelp = "[BETA] This metric records the data about the stage and enablement of a k8s feature."
)

// sharedEnabledGauge returns the gauge for the current snapshot, building it if the
// snapshot changed since the last call.
func (f *featureGate) sharedEnabledGauge() *prometheus.GaugeVec {
	state := f.state.Load()
	f.enabledGaugeMu.Lock()
	defer f.enabledGaugeMu.Unlock()
	if f.enabledGauge == nil || f.enabledGaugeState != state {
		f.enabledGauge, f.enabledGaugeState = newFeatureEnabledGauge(), state
	}
	return f.enabledGauge
}

func newFeatureEnabledGauge() *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: metricsNamespace,
		Name:      featureEnabledName,
		Help:      featureEnabledHelp,
	}, []string{"name", "stage"})
}

// AddMetrics sets kubernetes_feature_enabled{name,stage} for every feature known at the
// emulation version in reg, registering the gauge on first use. A gauge already registered in reg by an earlier
// call (from this or another gate) is reused, so several gates can share one registry.
// The gate keeps one gauge for every registry it is given (one per node of a process).
func (f *featureGate) AddMetrics(reg prometheus.Registerer) error {
	if reg == nil {
		return errors.New("cannot add feature gate metrics: registerer is nil")
	}
	gauge := f.sharedEnabledGauge()
	if err := reg.Register(gauge); err != nil {
		var already prometheus.AlreadyRegisteredError
		if !errors.As(err, &already) {
			return fmt.Errorf("registering feature gate metrics: %w", err)
		}
		existing, ok := already.ExistingCollector.(*prometheus.GaugeVec)
		if !ok {
			return fmt.Errorf("registering feature gate metrics: %w", err)
		}
		gauge = existing
	}

	// Enabled, not the snapshot: as in component-base, recording counts as a query.
	for name, spec := range f.GetAll() {
		val := 0.0
		if f.Enabled(name) {
			val = 1
		}
		gauge.WithLabelValues(string(name), string(spec.PreRelease)).Set(val)
	}
	return nil
}
