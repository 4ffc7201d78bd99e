package prober

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minikubelet/minikubelet/pkg/prober/results"
)

// The kubelet restarts at the fake clock's epoch (a fresh manager). A container it found
// running started foundAgo before; one started newAgo before falls within the 10s grace
// upstream gives a container the starting kubelet may have started itself.
const (
	foundAgo = time.Minute
	newAgo   = 5 * time.Second
)

// sidecarPod is a pod whose sidecar "c" (an init container with restartPolicy Always) has
// the probes, before an app container "app".
func sidecarPod(live, ready, startup *v1.Probe) *v1.Pod {
	p := pod("", nil, nil, nil)
	always := v1.ContainerRestartPolicyAlways
	p.Spec.InitContainers = []v1.Container{{Name: "c", Image: "i", RestartPolicy: &always,
		LivenessProbe: live, ReadinessProbe: ready, StartupProbe: startup}}
	p.Spec.Containers[0].Name = "app"
	return p
}

// setStatus records container c's status with the status manager: running since ago, with
// started as the last status said (nil: unknown).
func (e *env) setStatus(p *v1.Pod, id string, ago time.Duration, started *bool) {
	cs := v1.ContainerStatus{Name: "c", ContainerID: "fake://" + id, Started: started,
		State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(e.clk.Now().Add(-ago))}}}
	st := v1.PodStatus{Phase: v1.PodRunning, PodIP: "10.88.0.5"}
	if len(p.Spec.InitContainers) > 0 {
		st.InitContainerStatuses = []v1.ContainerStatus{cs}
	} else {
		st.ContainerStatuses = []v1.ContainerStatus{cs}
	}
	e.status[p.UID] = st
}

func boolPtr(b bool) *bool { return &b }

// TestInitialResultAfterKubeletRestart: what a worker records when it first sees a
// container (upstream worker.go:254-284). With ChangeContainerStatusOnKubeletRestart off, a
// container running since more than 10s before the kubelet started gets no initial result,
// and a sidecar that had started gets its startup probe seeded Success; on (v1.30), every
// container starts from the initial results. Probes error here, so what the worker set
// first is what stays.
func TestInitialResultAfterKubeletRestart(t *testing.T) {
	tests := []struct {
		name       string
		gate       bool // ChangeContainerStatusOnKubeletRestart
		probeType  ProbeType
		sidecar    bool
		startedAgo time.Duration
		started    *bool // the status's started
		want       string
	}{
		{name: "found: readiness not reset", probeType: Readiness, startedAgo: foundAgo, started: boolPtr(true), want: "none"},
		{name: "found: liveness not reset", probeType: Liveness, startedAgo: foundAgo, started: boolPtr(true), want: "none"},
		{name: "found: startup not reset", probeType: Startup, startedAgo: foundAgo, started: boolPtr(false), want: "none"},
		{name: "started by this kubelet: readiness Failure", probeType: Readiness, startedAgo: newAgo, started: boolPtr(true), want: "Failure"},
		{name: "started by this kubelet: startup Unknown", probeType: Startup, startedAgo: newAgo, started: boolPtr(false), want: "UNKNOWN"},
		{name: "started exactly 10s before: within the grace", probeType: Readiness, startedAgo: 10 * time.Second, started: boolPtr(true), want: "Failure"},
		{name: "started just over 10s before: found", probeType: Readiness, startedAgo: 10*time.Second + time.Millisecond, started: boolPtr(true), want: "none"},
		{name: "found sidecar that had started: startup seeded Success", probeType: Startup, sidecar: true, startedAgo: foundAgo, started: boolPtr(true), want: "Success"},
		{name: "found sidecar not started: startup has none", probeType: Startup, sidecar: true, startedAgo: foundAgo, started: boolPtr(false), want: "none"},
		{name: "new sidecar: the seed gives way to Unknown", probeType: Startup, sidecar: true, startedAgo: newAgo, started: boolPtr(true), want: "UNKNOWN"},
		{name: "v1.30: found readiness reset to Failure", gate: true, probeType: Readiness, startedAgo: foundAgo, started: boolPtr(true), want: "Failure"},
		{name: "v1.30: found liveness reset to Success", gate: true, probeType: Liveness, startedAgo: foundAgo, started: boolPtr(true), want: "Success"},
		{name: "v1.30: found startup reset to Unknown", gate: true, probeType: Startup, startedAgo: foundAgo, started: boolPtr(false), want: "UNKNOWN"},
		{name: "v1.30: found sidecar startup not seeded", gate: true, probeType: Startup, sidecar: true, startedAgo: foundAgo, started: boolPtr(true), want: "UNKNOWN"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnvWith(t, true, func(c *Config) { c.ChangeContainerStatusOnKubeletRestart = tt.gate })
			spec := execProbe(10, 1)
			probes := [3]*v1.Probe{} // liveness, readiness, startup
			probes[map[ProbeType]int{Liveness: 0, Readiness: 1, Startup: 2}[tt.probeType]] = spec
			p := pod("", probes[0], probes[1], probes[2])
			if tt.sidecar {
				p = sidecarPod(probes[0], probes[1], probes[2])
			}
			m := map[ProbeType]*results.Manager{Liveness: e.live, Readiness: e.ready, Startup: e.startup}[tt.probeType]
			e.setStatus(p, "c1", tt.startedAgo, tt.started)
			e.exec.err = errors.New("runtime unavailable")
			e.m.AddPod(p)
			if got := e.result(m, "c1"); got != "none" {
				t.Fatalf("result %s before the worker ran, want none", got)
			}
			e.run(10 * time.Second) // past the random initial delay: the worker saw the container
			if got := e.result(m, "c1"); got != tt.want {
				t.Errorf("result = %s, want %s", got, tt.want)
			}
		})
	}
}

// TestUpdatePodStatusAfterKubeletRestart: started and ready of a container the kubelet found
// running (upstream prober_manager.go:287-345). The status's started is what the generator
// carried over from the previous status (the API server's copy after a restart); the pod's
// Ready condition is the pod's own status.
func TestUpdatePodStatusAfterKubeletRestart(t *testing.T) {
	tests := []struct {
		name        string
		gate        bool
		startup     bool // the container has a startup probe (it always has a readiness one unless noReadiness)
		noReadiness bool
		sidecar     bool
		startedAgo  time.Duration
		started     *bool
		podReady    bool
		readiness   string // the readiness result set before: "" (none), "Success" or "Failure"
		wantStarted bool
		wantReady   bool
	}{
		{name: "found, pod was Ready: ready", startedAgo: foundAgo, started: boolPtr(true), podReady: true,
			wantStarted: true, wantReady: true},
		{name: "found, pod was not Ready: not ready", startedAgo: foundAgo, started: boolPtr(true),
			wantStarted: true},
		{name: "static pod (no old status): waits for its probe", startedAgo: foundAgo,
			wantStarted: true},
		{name: "found with a startup probe, started before: started and ready", startup: true, startedAgo: foundAgo, started: boolPtr(true), podReady: true,
			wantStarted: true, wantReady: true},
		{name: "found with a startup probe, old status unknown: not started", startup: true, startedAgo: foundAgo, podReady: true},
		{name: "found without a readiness probe: ready whatever the pod was", noReadiness: true, startedAgo: foundAgo, started: boolPtr(true),
			wantStarted: true, wantReady: true},
		{name: "found, readiness failed since: not ready", startedAgo: foundAgo, started: boolPtr(true), podReady: true, readiness: "Failure",
			wantStarted: true},
		{name: "found, readiness passed since: ready", startedAgo: foundAgo, started: boolPtr(true), readiness: "Success",
			wantStarted: true, wantReady: true},
		{name: "started by this kubelet: waits for its probe", startedAgo: newAgo, started: boolPtr(true), podReady: true,
			wantStarted: true},
		{name: "started by this kubelet, old status started: started without a startup result", startup: true, startedAgo: newAgo, started: boolPtr(true), podReady: true,
			wantStarted: true},
		{name: "found sidecar, pod was Ready: ready", sidecar: true, startedAgo: foundAgo, started: boolPtr(true), podReady: true,
			wantStarted: true, wantReady: true},
		{name: "v1.30: found, pod was Ready: not ready until the probe passes", gate: true, startedAgo: foundAgo, started: boolPtr(true), podReady: true,
			wantStarted: true},
		{name: "v1.30: found with a startup probe: not started", gate: true, startup: true, startedAgo: foundAgo, started: boolPtr(true), podReady: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnvWith(t, true, func(c *Config) { c.ChangeContainerStatusOnKubeletRestart = tt.gate })
			var ready, startup *v1.Probe
			if !tt.noReadiness {
				ready = execProbe(10, 3)
			}
			if tt.startup {
				startup = execProbe(10, 3)
			}
			p := pod("", nil, ready, startup)
			if tt.sidecar {
				p = sidecarPod(nil, ready, startup)
			}
			if tt.podReady {
				p.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}
			}
			e.setStatus(p, "c1", tt.startedAgo, tt.started)
			e.m.AddPod(p)
			if r, ok := map[string]results.Result{"Success": results.Success, "Failure": results.Failure}[tt.readiness]; ok {
				e.ready.Set("c1", r, p.UID)
			}
			st := e.status[p.UID]
			e.m.UpdatePodStatus(p, &st)
			cs := append(st.InitContainerStatuses, st.ContainerStatuses...)[0]
			if cs.Started == nil || *cs.Started != tt.wantStarted || cs.Ready != tt.wantReady {
				t.Errorf("started %v ready %t, want %t %t", deref(cs.Started), cs.Ready, tt.wantStarted, tt.wantReady)
			}
		})
	}
}

func deref(b *bool) string {
	if b == nil {
		return "<nil>"
	}
	return fmt.Sprint(*b)
}

// TestReadinessAcrossKubeletRestart steps the clock over the first probes of a restarted
// kubelet: a container found running, whose pod was Ready, with a readiness probe that takes
// 3s to answer. With the gate off it is ready at every second; on (v1.30) it is not ready
// from the start (its worker's initial Failure, then the probe in flight) until the answer.
func TestReadinessAcrossKubeletRestart(t *testing.T) {
	tests := []struct {
		gate  bool
		flaps bool // not ready at first, then ready for good; else ready at every second
	}{
		{gate: false},
		{gate: true, flaps: true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("ChangeContainerStatusOnKubeletRestart=%t", tt.gate), func(t *testing.T) {
			e := newEnvWith(t, true, func(c *Config) { c.ChangeContainerStatusOnKubeletRestart = tt.gate })
			e.exec.delay = 3 * time.Second
			spec := execProbe(10, 3)
			spec.TimeoutSeconds = 5
			p := pod("", nil, spec, nil)
			p.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}
			e.setStatus(p, "c1", foundAgo, boolPtr(true))
			e.m.AddPod(p)
			var got strings.Builder
			for range 15 { // the first probe within the 10s period, its answer 3s later
				st := e.status[p.UID]
				e.m.UpdatePodStatus(p, &st)
				if st.ContainerStatuses[0].Ready {
					got.WriteByte('r')
				} else {
					got.WriteByte('n')
				}
				e.run(time.Second)
			}
			s := got.String()
			steady := !strings.Contains(s, "n")
			flapped := strings.HasPrefix(s, "n") && strings.HasSuffix(s, "r") && !strings.Contains(strings.TrimLeft(s, "n"), "n")
			if (tt.flaps && !flapped) || (!tt.flaps && !steady) {
				t.Errorf("readiness by second %s (r ready, n not), want flaps=%t", s, tt.flaps)
			}
		})
	}
}
