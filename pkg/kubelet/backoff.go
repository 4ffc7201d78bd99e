package kubelet

import (
	"time"

	"github.com/minikubelet/minikubelet/pkg/config"
	"github.com/minikubelet/minikubelet/pkg/featuregate"
	"github.com/minikubelet/minikubelet/pkg/features"
	"github.com/minikubelet/minikubelet/pkg/kuberuntime"
)

// The reduced crash-loop back-off of ReduceDefaultCrashLoopBackOffDecay (upstream
// reducedInitialCrashLoopBackOff and reducedMaxCrashLoopBackOff).
const (
	reducedInitialCrashLoopBackOff = 1 * time.Second
	reducedMaxCrashLoopBackOff     = 60 * time.Second
)

// crashLoopBackOff returns the crash-loop back-off's ceiling and start, as upstream's
// newCrashLoopBackOff: 300s from 10s, 60s from 1s under ReduceDefaultCrashLoopBackOffDecay,
// and with KubeletCrashLoopBackOffMax the configured maxContainerRestartPeriod as ceiling
// (it wins over the reduced one), which also lowers the start when it is below it.
func crashLoopBackOff(gate featuregate.FeatureGate, kc *config.KubeletConfiguration) (max, initial time.Duration) {
	max, initial = kuberuntime.DefaultMaxContainerBackOff, kuberuntime.DefaultContainerBackOff
	if gate.Enabled(features.ReduceDefaultCrashLoopBackOffDecay) {
		max, initial = reducedMaxCrashLoopBackOff, reducedInitialCrashLoopBackOff
	}
	if gate.Enabled(features.KubeletCrashLoopBackOffMax) {
		if p, ok := kc.MaxContainerRestartPeriod(); ok {
			max = p
		}
		initial = min(initial, max)
	}
	return max, initial
}
