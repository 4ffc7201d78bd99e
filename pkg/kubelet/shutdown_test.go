package kubelet

import (
	"context"
	"flag"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/internal/syncbuf"
	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/nodeshutdown"
)

// captureKlog sends the global klog output (with headers, so the severity letter shows,
// at the default verbosity) to the returned buffer until t ends. Tests using it must not
// run in parallel.
func captureKlog(t *testing.T) *syncbuf.Buffer {
	t.Helper()
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	settings := map[string]string{
		"logtostderr":     "false",
		"alsologtostderr": "false",
		"stderrthreshold": "FATAL",
		"one_output":      "true",
	}
	saved := map[string]string{}
	for name, val := range settings {
		saved[name] = fs.Lookup(name).Value.String()
		if err := fs.Set(name, val); err != nil {
			t.Fatalf("set klog flag %s: %v", name, err)
		}
	}
	buf := &syncbuf.Buffer{}
	klog.SetOutput(buf)
	t.Cleanup(func() {
		klog.Flush()
		for name, val := range saved {
			_ = fs.Set(name, val)
		}
		klog.SetOutput(os.Stderr)
	})
	return buf
}

// errorLines returns the klog lines at severity Error (they start with "E" and the date).
func errorLines(log string) []string {
	var out []string
	for _, line := range strings.Split(log, "\n") {
		if len(line) > 1 && line[0] == 'E' && line[1] >= '0' && line[1] <= '9' {
			out = append(out, line)
		}
	}
	return out
}

// TestShutdownKillStatusSticks: a pod terminated by the graceful node shutdown keeps the
// status the shutdown's kill gave it (Failed, reason Terminated, DisruptionTarget) even
// when its container honours SIGTERM and exits 0, which alone would make a restartPolicy
// OnFailure or Never pod Succeeded; and nothing is logged as an error ("Pod attempted
// illegal phase transition" was).
func TestShutdownKillStatusSticks(t *testing.T) {
	for _, policy := range []v1.RestartPolicy{v1.RestartPolicyAlways, v1.RestartPolicyOnFailure, v1.RestartPolicyNever} {
		t.Run(string(policy), func(t *testing.T) {
			dir := t.TempDir()
			cfg, gate := loadConfig(t, dir)
			cfg.Kubelet.ShutdownGracePeriod.Duration = 30 * time.Second
			cfg.Kubelet.ShutdownGracePeriodCriticalPods.Duration = 10 * time.Second
			h := newHarnessWithConfig(t, dir, cfg, gate)
			sm := h.k.ShutdownManager()
			if !sm.Enabled() {
				t.Fatal("graceful node shutdown is not enabled")
			}

			// A program that honours SIGTERM: it exits 0.
			h.write("job.yaml", podManifest("job", "busybox", "    command: [sh, -c, \"trap 'exit 0' TERM; while true; do sleep 1; done\"]\n"+"  restartPolicy: "+string(policy)+"\n"))
			const name = "job-" + testNode
			h.until(10, "job Running", func() bool { return h.phase(name) == v1.PodRunning }, h.describe)

			log := captureKlog(t)
			sm.Start()
			h.until(40, "the shutdown complete", func() bool {
				select {
				case <-sm.Done():
					return true
				default:
					return false
				}
			}, h.describe)
			// Let the worker finish the pod (SyncTerminatedPod writes the status once more).
			uid := h.pod(name).UID
			h.until(10, "the pod worker finished", func() bool { return h.k.PodWorkers().ShouldPodBeFinished(uid) }, h.describe)
			klog.Flush()

			pod := h.pod(name)
			if pod.Status.Phase != v1.PodFailed || pod.Status.Reason != nodeshutdown.PodReason || pod.Status.Message != nodeshutdown.PodMessage {
				t.Errorf("status = %s/%q/%q, want Failed/%q/%q", pod.Status.Phase, pod.Status.Reason, pod.Status.Message, nodeshutdown.PodReason, nodeshutdown.PodMessage)
			}
			if c := condition(pod, v1.DisruptionTarget); c == nil || c.Status != v1.ConditionTrue || c.Reason != v1.PodReasonTerminationByKubelet {
				t.Errorf("DisruptionTarget = %+v, want True/TerminationByKubelet", c)
			}
			if cs := pod.Status.ContainerStatuses; len(cs) != 1 || cs[0].State.Terminated == nil || cs[0].State.Terminated.ExitCode != 0 {
				t.Errorf("container statuses = %+v, want main terminated with exit code 0 (it honoured SIGTERM)", cs)
			}
			if errs := errorLines(log.String()); len(errs) > 0 {
				t.Errorf("errors logged during the shutdown:\n%s", strings.Join(errs, "\n"))
			}
		})
	}
}

// TestGracefulShutdownWaitsForStopDelay: the daemon's graceful shutdown (3s, 1s for
// critical pods) waits for a pod that ignores SIGTERM for 60s until its group's grace
// period (2s) ends, when the container is killed (137), then the daemon stops with every
// container exited. The daemon runs on the real clock: the times are the runtime's.
func TestGracefulShutdownWaitsForStopDelay(t *testing.T) {
	base := runtime.NumGoroutine()
	dir := t.TempDir()
	cfg, gate := loadConfig(t, dir)
	cfg.Kubelet.ShutdownGracePeriod.Duration = 3 * time.Second
	cfg.Kubelet.ShutdownGracePeriodCriticalPods.Duration = time.Second
	d := startDaemon(t, dir, cfg, gate)
	d.write("stubborn.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: stubborn
  annotations:
    minikubelet.io/behavior.main: "stopDelay=60s"
spec:
  containers:
  - name: main
    image: nginx
`)
	d.write("web.yaml", podManifest("web", "nginx", ""))
	d.waitFor(10*time.Second, "pods Running", func() bool { return d.countPhase(v1.PodRunning) == 2 }, d.summary)

	start := time.Now()
	if err := d.stop(); err != nil {
		t.Fatalf("Run = %v", err)
	}
	// The ordinary pods' group has 2s; the empty critical group is not waited for.
	if stopped := time.Since(start); stopped < 2*time.Second {
		t.Errorf("the daemon stopped %v after the signal, before the ordinary pods' 2s grace period", stopped)
	}

	ctx := context.Background()
	cs, lerr := d.k.Runtime().ListContainers(ctx, nil)
	if lerr != nil {
		t.Fatal(lerr)
	}
	if len(cs) != 2 {
		t.Errorf("runtime has %d containers after the shutdown, want the 2 exited ones", len(cs))
	}
	for _, c := range cs {
		st, serr := d.k.Runtime().ContainerStatus(ctx, c.ID)
		if serr != nil {
			t.Fatal(serr)
		}
		if st.State != cri.ContainerExited {
			t.Errorf("container of %s is %v after the shutdown, want exited", c.Labels[cri.PodNameLabel], st.State)
			continue
		}
		finished := time.Unix(0, st.FinishedAt).Sub(start)
		switch pod := c.Labels[cri.PodNameLabel]; pod {
		case "stubborn-" + testNode:
			// Killed when the group's 2s are up: not before, and well before its 60s.
			if st.ExitCode != 137 || finished < 2*time.Second || finished > 10*time.Second {
				t.Errorf("stubborn container exited %d after %v, want 137 (killed) at about 2s", st.ExitCode, finished)
			}
		case "web-" + testNode:
			// It honours SIGTERM: it exits 0 as soon as its kill reaches it (within a sync
			// or two), before the stubborn one is killed at its group's deadline.
			if st.ExitCode != 0 || finished >= 2*time.Second {
				t.Errorf("web container exited %d after %v, want 0 before the group's 2s deadline", st.ExitCode, finished)
			}
		default:
			t.Errorf("unexpected container of pod %q", pod)
		}
	}
	for _, p := range d.k.GetPods() {
		if p.Status.Phase != v1.PodFailed || p.Status.Reason != nodeshutdown.PodReason {
			t.Errorf("pod %s = %s/%q, want Failed/Terminated", p.Name, p.Status.Phase, p.Status.Reason)
		}
	}
	checkNoGoroutineLeak(t, base)
}
