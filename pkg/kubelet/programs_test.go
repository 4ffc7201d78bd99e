package kubelet

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// restarts is the restart count of the pod's first container.
func (h *harness) restarts(name string) int32 {
	p := h.pod(name)
	if p == nil || len(p.Status.ContainerStatuses) == 0 {
		return -1
	}
	return p.Status.ContainerStatuses[0].RestartCount
}

// TestContainersRunTheirCommands: what a user's manifest says happens, through the whole
// kubelet: a job's command completes and the pod Succeeds; a command that fails crash-loops;
// the image's default command runs when the manifest gives none.
func TestContainersRunTheirCommands(t *testing.T) {
	tests := []struct {
		name, image, extra string
		cond               func(h *harness, full string) bool
		what               string
	}{
		{"a job completes", "busybox", "    command: [sh, -c, 'echo hello from job; exit 0']\n  restartPolicy: Never\n",
			func(h *harness, full string) bool { return h.phase(full) == v1.PodSucceeded }, "Succeeded"},
		{"a failing job fails", "busybox", "    command: [sh, -c, 'echo dying; exit 3']\n  restartPolicy: Never\n",
			func(h *harness, full string) bool {
				p := h.pod(full)
				return h.phase(full) == v1.PodFailed && p.Status.ContainerStatuses[0].State.Terminated.ExitCode == 3
			}, "Failed with exit code 3"},
		{"exit 1 crash-loops", "busybox", "    command: [sh, -c, 'echo dying; exit 1']\n",
			func(h *harness, full string) bool {
				p := h.pod(full)
				return h.restarts(full) >= 2 && p.Status.ContainerStatuses[0].State.Waiting != nil &&
					p.Status.ContainerStatuses[0].State.Waiting.Reason == "CrashLoopBackOff"
			}, "CrashLoopBackOff after restarts"},
		{"a pod's sysctls in its /proc/sys", "busybox", "    command: [sysctl, kernel.shm_rmid_forced]\n  restartPolicy: Never\n  securityContext:\n    sysctls: [{name: kernel.shm_rmid_forced, value: '1'}]\n",
			func(h *harness, full string) bool {
				if h.phase(full) != v1.PodSucceeded {
					return false
				}
				p := h.pod(full)
				lines, err := h.k.Runtime().ContainerLog(strings.TrimPrefix(p.Status.ContainerStatuses[0].ContainerID, "fake://"), 0, 0)
				return err == nil && len(lines) == 1 && lines[0].Text == "kernel.shm_rmid_forced = 1"
			}, "Succeeded, printing the pod's value"},
		{"nginx serves until stopped", "nginx:1.25", "",
			func(h *harness, full string) bool {
				p := h.pod(full)
				return h.phase(full) == v1.PodRunning && p.Status.ContainerStatuses[0].State.Running != nil
			}, "Running"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.write("p.yaml", podManifest("p", tt.image, tt.extra))
			full := "p-" + testNode
			h.until(120, tt.what, func() bool { return tt.cond(h, full) }, h.describe)
		})
	}
}

// TestProbesReachThePrograms: httpGet probes reach what the container serves: agnhost
// liveness fails its /healthz after 10 s and is restarted; a readiness probe of a port
// nothing listens on is refused and the pod never turns ready; an exec probe reads the
// file the program removed.
func TestProbesReachThePrograms(t *testing.T) {
	t.Run("agnhost liveness is restarted", func(t *testing.T) {
		h := newHarness(t)
		h.write("live.yaml", podManifest("live", "registry.k8s.io/e2e-test-images/agnhost:2.47", `    args: [liveness]
    livenessProbe:
      httpGet: {path: /healthz, port: 8080}
      initialDelaySeconds: 15
      failureThreshold: 1
`))
		full := "live-" + testNode
		h.until(120, "a restart", func() bool { return h.restarts(full) >= 1 }, h.describe)
		if e := findEvent(h, "Unhealthy", full); e == nil || !strings.Contains(e.Message, "HTTP probe failed with statuscode: 500") {
			t.Errorf("Unhealthy event %+v, want the probe's 500", e)
		}
	})
	t.Run("a port nothing listens on is refused", func(t *testing.T) {
		h := newHarness(t)
		h.write("web.yaml", podManifest("web", "nginx:1.25", `    readinessProbe:
      httpGet: {path: /, port: 81}
      periodSeconds: 1
`))
		full := "web-" + testNode
		h.until(30, "an Unhealthy event", func() bool { return findEvent(h, "Unhealthy", full) != nil }, h.describe)
		if e := findEvent(h, "Unhealthy", full); !strings.Contains(e.Message, "connect: connection refused") {
			t.Errorf("Unhealthy: %q, want connection refused", e.Message)
		}
		if c := condition(h.pod(full), v1.PodReady); c == nil || c.Status != v1.ConditionFalse {
			t.Errorf("Ready condition %+v, want False", c)
		}
	})
	t.Run("an exec probe reads the program's files", func(t *testing.T) {
		h := newHarness(t)
		h.write("ex.yaml", podManifest("ex", "busybox", `    command: [sh, -c, 'touch /tmp/health; sleep 10; rm -f /tmp/health; sleep 600']
    livenessProbe:
      exec: {command: [cat, /tmp/health]}
      initialDelaySeconds: 5
      periodSeconds: 1
      failureThreshold: 1
`))
		full := "ex-" + testNode
		h.until(60, "a restart", func() bool { return h.restarts(full) >= 1 }, h.describe)
		if e := findEvent(h, "Unhealthy", full); e == nil || !strings.Contains(e.Message, "can't open '/tmp/health'") {
			t.Errorf("Unhealthy event %+v, want cat's message", e)
		}
	})
}

// TestLifecycleHooks: a postStart exec hook runs in the container (its file is there for
// the program), a failing one kills the container with upstream's event; a preStop hook
// runs before the stop signal.
func TestLifecycleHooks(t *testing.T) {
	h := newHarness(t)
	h.write("hooked.yaml", podManifest("hooked", "busybox", `    command: [sh, -c, 'sleep 2; cat /tmp/started; trap "cat /tmp/stopping; exit 0" TERM; while true; do sleep 1; done']
    lifecycle:
      postStart: {exec: {command: [sh, -c, 'echo poststart ran > /tmp/started']}}
      preStop: {exec: {command: [sh, -c, 'echo prestop ran > /tmp/stopping']}}
`))
	full := "hooked-" + testNode
	h.until(30, "Running", func() bool { return h.phase(full) == v1.PodRunning }, h.describe)
	h.round(5e9)
	var id string
	for _, c := range h.runtimeContainers() {
		if c.Metadata.Name == "main" {
			id = c.ID
		}
	}
	h.remove("hooked.yaml")
	h.until(60, "the container stopped", func() bool { return h.runningContainers() == 0 }, h.runtimeSummary)
	lines, err := h.k.Runtime().ContainerLog(id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range lines {
		got = append(got, l.Text)
	}
	if strings.Join(got, "|") != "poststart ran|prestop ran" {
		t.Errorf("log %q, want what both hooks wrote", got)
	}

	h.write("bad.yaml", podManifest("bad", "busybox", `    command: [sleep, infinity]
    lifecycle:
      postStart: {exec: {command: [sh, -c, 'exit 7']}}
`))
	bad := "bad-" + testNode
	h.until(30, "a FailedPostStartHook event", func() bool { return findEvent(h, "FailedPostStartHook", bad) != nil }, h.describe)
	if e := findEvent(h, "Killing", bad); e == nil || e.Message != "FailedPostStartHook" {
		t.Errorf("Killing event %+v, want FailedPostStartHook", e)
	}
}
