package podstatus

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/pkg/container"
	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/prober"
	"github.com/minikubelet/minikubelet/pkg/prober/results"
	"github.com/minikubelet/minikubelet/pkg/runner"
	"github.com/minikubelet/minikubelet/pkg/runtime/behavior"
	"github.com/minikubelet/minikubelet/pkg/task"
)

// probeUpdater records the started values Generate hands the prober, then answers as a
// prober without workers.
type probeUpdater struct{ started map[string]string }

func (u *probeUpdater) UpdatePodStatus(pod *v1.Pod, s *v1.PodStatus) {
	for _, cs := range append(append([]v1.ContainerStatus{}, s.InitContainerStatuses...), s.ContainerStatuses...) {
		u.started[cs.Name] = fmtStarted(cs.Started)
	}
	updateProbeStatus(pod, s, true)
}

func fmtStarted(b *bool) string {
	if b == nil {
		return "<nil>"
	}
	return fmt.Sprint(*b)
}

// TestStartedCarriedOver: with ChangeContainerStatusOnKubeletRestart off, a running
// container's generated status keeps the previous status's started for the prober to go by
// (upstream kubelet_pods.go:2692-2698); a container that is not running, or the gate on,
// leaves it to the prober alone.
func TestStartedCarriedOver(t *testing.T) {
	tests := []struct {
		name    string
		gate    bool
		state   container.State
		old     *bool // the previous status's started; nil: no previous status
		sidecar bool
		want    string
	}{
		{name: "running, was started", state: container.ContainerStateRunning, old: ptr(true), want: "true"},
		{name: "running, was not started", state: container.ContainerStateRunning, old: ptr(false), want: "false"},
		{name: "running, no previous status", state: container.ContainerStateRunning, want: "<nil>"},
		{name: "exited, was started", state: container.ContainerStateExited, old: ptr(true), want: "<nil>"},
		{name: "running sidecar, was started", sidecar: true, state: container.ContainerStateRunning, old: ptr(true), want: "true"},
		{name: "v1.30: running, was started", gate: true, state: container.ContainerStateRunning, old: ptr(true), want: "<nil>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := &probeUpdater{started: map[string]string{}}
			g := NewGenerator(GeneratorConfig{Probes: u,
				Features: Features{SidecarContainers: true, ChangeContainerStatusOnKubeletRestart: tt.gate}})
			p, name := pod(), "app"
			if tt.sidecar {
				p, name = pod(sidecar("proxy")), "proxy"
			}
			var old v1.PodStatus
			if tt.old != nil {
				cs := v1.ContainerStatus{Name: name, Started: tt.old,
					State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}
				if tt.sidecar {
					old.InitContainerStatuses = []v1.ContainerStatus{cs}
				} else {
					old.ContainerStatuses = []v1.ContainerStatus{cs}
				}
			}
			g.Generate(p, runtime(ctr(name, tt.state, 0, 0, 1)), old, false)
			if got := u.started[name]; got != tt.want {
				t.Errorf("started handed to the prober = %s, want %s", got, tt.want)
			}
		})
	}
}

// noExec is a runtime without exec: the probes here are httpGet ones.
type noExec struct{}

func (noExec) ExecSync(context.Context, string, []string, time.Duration) (*cri.ExecSyncResponse, error) {
	return nil, errors.New("no exec")
}

// TestKubeletRestart runs a restarted kubelet's status generation and prober on a fake
// clock over a container that ran an hour before the kubelet started, with a startup and a
// readiness probe whose endpoint answers in 3s. Each second the pod is synced as the sync
// loop would: the status generated from the previous one, stored, the pod's workers added.
// With ChangeContainerStatusOnKubeletRestart off, a pod whose API status said Ready stays
// started and ready; one with no such status (a static pod's) waits for its probes, as with
// the gate on (v1.30), where every pod does.
func TestKubeletRestart(t *testing.T) {
	tests := []struct {
		gate   bool
		static bool // no API status: pod.Status says nothing
		steady bool // ready at every second; else not ready at some, ready for good by the end
	}{
		{gate: false, steady: true},
		{gate: false, static: true},
		{gate: true},
		{gate: true, static: true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("ChangeContainerStatusOnKubeletRestart=%t/static=%t", tt.gate, tt.static), func(t *testing.T) {
			clk := testingclock.NewFakeClock(t0.Add(time.Hour)) // the container started at t0
			sm, err := NewManager(ManagerConfig{Clock: clk})
			if err != nil {
				t.Fatal(err)
			}
			pm, err := prober.NewManager(prober.Config{Clock: clk, Status: sm, Runtime: noExec{},
				Liveness: results.NewManager(nil), Readiness: results.NewManager(nil), Startup: results.NewManager(nil),
				Seed: 1, ChangeContainerStatusOnKubeletRestart: tt.gate})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(pm.Stop)
			g := NewGenerator(GeneratorConfig{Probes: pm,
				Features: Features{SidecarContainers: true, ChangeContainerStatusOnKubeletRestart: tt.gate}})
			sim := runner.NewSim(clk, []runner.Loop{{Name: "prober", Due: pm.Due, Step: pm.Step, Wake: pm.Wake()}})

			probe := &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(80)}},
				PeriodSeconds: 5, TimeoutSeconds: 5}
			p := pod(func(p *v1.Pod) {
				p.Annotations = map[string]string{behavior.AnnotationKey("app"): "probeDelay=3s"}
				p.Spec.Containers[0].StartupProbe, p.Spec.Containers[0].ReadinessProbe = probe, probe
			})
			rt := runtime(ctr("app", container.ContainerStateRunning, 0, 0, 0))
			if !tt.static {
				// What the previous kubelet wrote to the API server.
				p.Status = g.Generate(p, rt, v1.PodStatus{}, false)
				p.Status.ContainerStatuses[0].Started, p.Status.ContainerStatuses[0].Ready = ptr(true), true
				for i := range p.Status.Conditions {
					if c := &p.Status.Conditions[i]; c.Type == v1.PodReady || c.Type == v1.ContainersReady {
						c.Status = v1.ConditionTrue
					}
				}
			}

			ctx := task.WithoutBlocking(context.Background())
			var got strings.Builder
			for range 15 { // the first probes within their 5s period, each answer 3s later
				old, ok := sm.GetPodStatus(p.UID)
				if !ok {
					old = p.Status
				}
				s := g.Generate(p, rt, old, false)
				sm.SetPodStatus(p, s)
				pm.AddPod(p)
				if r := cond(s, v1.PodReady); r != nil && r.Status == v1.ConditionTrue {
					got.WriteByte('r')
				} else {
					got.WriteByte('n')
				}
				if err := sim.RunUntil(ctx, clk.Now().Add(time.Second), nil); err != nil {
					t.Fatal(err)
				}
			}
			s := got.String()
			t.Logf("pod Ready by second: %s", s)
			steady := !strings.Contains(s, "n")
			flapped := strings.Contains(s, "n") && strings.HasSuffix(s, "rr")
			if (tt.steady && !steady) || (!tt.steady && !flapped) {
				t.Errorf("pod Ready by second %s (r ready, n not), want steady=%t", s, tt.steady)
			}
		})
	}
}
