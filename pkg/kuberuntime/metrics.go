package kuberuntime

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/minikubelet/minikubelet/pkg/container"
	"github.com/minikubelet/minikubelet/pkg/metrics"
)

// containerStates are the running_containers label values; every one is set on each update
// so a state whose last container went away reads 0 instead of a stale count.
var containerStates = []container.State{
	container.ContainerStateCreated, container.ContainerStateRunning,
	container.ContainerStateExited, container.ContainerStateUnknown,
}

type runtimeMetrics struct {
	runningPods       prometheus.Gauge
	runningContainers *prometheus.GaugeVec
	startedPods       prometheus.Counter
	// Pods with hostUsers: false whose sandbox was made, and those of them whose sync failed.
	startedUserNamespacedPods, startedUserNamespacedPodsErrors prometheus.Counter
	startedContainers                                          *prometheus.CounterVec
	restartedContainers                                        prometheus.Counter
	resizeDuration                                             *prometheus.HistogramVec
	// Image volumes (countImageVolumeMounts).
	imageVolumesRequested  prometheus.Counter
	imageVolumeMounts      prometheus.Counter
	imageVolumeMountErrors prometheus.Counter
}

func newRuntimeMetrics(reg *metrics.Registry, imageVolume bool) *runtimeMetrics {
	name := func(n string) string { return n }
	if reg != nil {
		name = reg.Name
	}
	m := &runtimeMetrics{
		runningPods: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: name(metrics.RunningPods), Help: "Number of pods that have a running pod sandbox",
		}),
		runningContainers: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: name(metrics.RunningContainers), Help: "Number of containers currently running",
		}, []string{"container_state"}),
		startedPods: prometheus.NewCounter(prometheus.CounterOpts{
			Name: name(metrics.StartedPods), Help: "Cumulative number of pods started",
		}),
		startedUserNamespacedPods: prometheus.NewCounter(prometheus.CounterOpts{
			Name: name(metrics.StartedUserNamespacedPods), Help: "Cumulative number of pods with user namespaces started. This metric will only be collected on Linux.",
		}),
		startedUserNamespacedPodsErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: name(metrics.StartedUserNamespacedPodsErrors), Help: "Cumulative number of errors when starting pods with user namespaces. This metric will only be collected on Linux.",
		}),
		startedContainers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: name(metrics.StartedContainers), Help: "Cumulative number of containers started",
		}, []string{"container_type"}),
		restartedContainers: prometheus.NewCounter(prometheus.CounterOpts{
			Name: name(metrics.ContainersRestarted), Help: "Cumulative number of container restarts (a start with a restart count above 0)",
		}),
		resizeDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: name(metrics.PodResizeDuration), Help: "Duration in milliseconds to actuate a pod resize",
			Buckets: []float64{10, 50, 100, 500, 1000, 2000, 5000, 10000, 20000, 30000, 60000, 120000, 300000, 600000},
		}, []string{"success"}),
		imageVolumesRequested: prometheus.NewCounter(prometheus.CounterOpts{
			Name: name(metrics.ImageVolumeRequested), Help: "Number of requested image volumes.",
		}),
		imageVolumeMounts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: name(metrics.ImageVolumeMountedSucceed), Help: "Number of successful image volume mounts.",
		}),
		imageVolumeMountErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: name(metrics.ImageVolumeMountedErrors), Help: "Number of failed image volume mounts.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.runningPods, m.runningContainers, m.startedPods, m.startedUserNamespacedPods, m.startedUserNamespacedPodsErrors,
			m.startedContainers, m.restartedContainers, m.resizeDuration)
	}
	if reg != nil && imageVolume {
		// Registered with the gate, as upstream (always, in v1.37: it is locked on).
		reg.MustRegister(m.imageVolumesRequested, m.imageVolumeMounts, m.imageVolumeMountErrors)
	}
	return m
}

// recordRunning counts pods with a running sandbox and containers by state, as the
// kubelet's relist does.
func (m *runtimeMetrics) recordRunning(pods []*container.Pod) {
	// Counted in an array indexed like containerStates, not a map: the relist calls this
	// every second with every container on the node (20,000 map updates at 10,000 pods).
	var counts [4]int
	running := 0
	for _, p := range pods {
		for _, c := range p.Containers {
			counts[stateIndex(c.State)]++
		}
		for _, s := range p.Sandboxes {
			if s.State == container.ContainerStateRunning {
				running++
				break // one running sandbox per pod
			}
		}
	}
	for i, s := range containerStates {
		m.runningContainers.WithLabelValues(string(s)).Set(float64(counts[i]))
	}
	m.runningPods.Set(float64(running))
}

// stateIndex is s's index in containerStates; any other state counts as unknown, as it is
// for the kubelet's runtime (toKubeContainerState).
func stateIndex(s container.State) int {
	switch s {
	case container.ContainerStateCreated:
		return 0
	case container.ContainerStateRunning:
		return 1
	case container.ContainerStateExited:
		return 2
	}
	return 3
}
