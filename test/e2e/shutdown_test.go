package e2e

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// stubbornPod is a pod whose container ignores SIGTERM for a minute, so only the shutdown
// manager's deadline stops it; priority 2000000000 makes it critical.
func stubbornPod(name string, priority int) string {
	return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name + "\n" +
		"  annotations: {minikubelet.io/behavior.main: stopDelay=60s}\n" +
		"spec:\n  priority: " + strconv.Itoa(priority) + "\n  terminationGracePeriodSeconds: 120\n" +
		"  containers: [{name: main, image: busybox}]\n"
}

// shutdownDaemon starts a daemon with graceful node shutdown (grace and critical periods)
// at -v=1 (the per-pod shutdown lines) running an ordinary and a critical pod that both
// ignore SIGTERM, and waits until both run.
func shutdownDaemon(t *testing.T, grace, critical string) *daemon {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "kubelet.yaml")
	if err := os.WriteFile(cfg, []byte("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nshutdownGracePeriod: "+grace+"\nshutdownGracePeriodCriticalPods: "+critical+"\n"+
		"authentication: {anonymous: {enabled: true}, webhook: {enabled: false}}\nauthorization: {mode: AlwaysAllow}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, "--config="+cfg, "-v=1")
	for name, prio := range map[string]int{"ordinary": 0, "critical": 2000000000} {
		if err := os.WriteFile(filepath.Join(d.manifests, name+".yaml"), []byte(stubbornPod(name, prio)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"ordinary-e2e", "critical-e2e"} {
		d.eventually(30*time.Second, name+" Running", func() (bool, string) {
			p := d.podPhase(name)
			return p == v1.PodRunning, string(p)
		})
	}
	return d
}

// klogTime is the time of day of a klog header line ("I1126 14:40:37.123456 ...").
var klogTime = regexp.MustCompile(`^[IWE]\d{4} (\d\d:\d\d:\d\d\.\d{6})`)

// lineTime finds the first log line containing all of parts and returns its time of day.
func lineTime(t *testing.T, log string, parts ...string) time.Time {
	t.Helper()
	at, ok := findLine(t, log, parts...)
	if !ok {
		t.Fatalf("no log line with %q", parts)
	}
	return at
}

func findLine(t *testing.T, log string, parts ...string) (time.Time, bool) {
	t.Helper()
next:
	for _, line := range strings.Split(log, "\n") {
		for _, p := range parts {
			if !strings.Contains(line, p) {
				continue next
			}
		}
		m := klogTime.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		at, err := time.Parse("15:04:05.000000", m[1])
		if err != nil {
			t.Fatal(err)
		}
		return at, true
	}
	return time.Time{}, false
}

// TestShutdownWithinGracePeriod: on SIGTERM with shutdownGracePeriod 6s (2s for critical
// pods) the ordinary pod is killed first, with 4s, the critical pod after it with 2s, both
// even though their containers ignore SIGTERM, and the daemon exits 0 within the grace
// period + 5s.
func TestShutdownWithinGracePeriod(t *testing.T) {
	d := shutdownDaemon(t, "6s", "2s")
	started := time.Now()
	if err := d.terminate(); err != nil {
		t.Fatalf("exit after SIGTERM: %v, want status 0", err)
	}
	took := time.Since(started)
	if took > 11*time.Second {
		t.Errorf("the daemon exited %v after SIGTERM, want within shutdownGracePeriod (6s) + 5s", took)
	}
	// Both containers ignore SIGTERM: the shutdown cannot end before the ordinary group's
	// 4s have run out (the critical group's kill is immediate once its time is up too).
	if took < 4*time.Second {
		t.Errorf("the daemon exited %v after SIGTERM; the ordinary pod's 4s cannot have run out", took)
	}
	log := d.log()
	ordinaryKill := lineTime(t, log, "Shutdown manager killing pod with gracePeriod", `pod="default/ordinary-e2e"`, "gracePeriod=4")
	// The group ends when its pod is killed or when its time is up, whichever is logged
	// first: the container's SIGKILL and the group's deadline fall on the same instant.
	ordinaryDone, ok := findLine(t, log, "Shutdown manager finished killing pod", `pod="default/ordinary-e2e"`)
	if !ok {
		ordinaryDone = lineTime(t, log, "Shutdown manager pod killing time out", "gracePeriod=4", "default/ordinary-e2e")
	}
	criticalKill := lineTime(t, log, "Shutdown manager killing pod with gracePeriod", `pod="default/critical-e2e"`, "gracePeriod=2")
	criticalDone, ok := findLine(t, log, "Shutdown manager finished killing pod", `pod="default/critical-e2e"`)
	if !ok {
		criticalDone = lineTime(t, log, "Shutdown manager pod killing time out", "gracePeriod=2", "default/critical-e2e")
	}
	lineTime(t, log, "Shutdown manager completed processing shutdown event")
	if criticalKill.Before(ordinaryDone) {
		t.Errorf("critical pod killed at %v, before the ordinary pod was done at %v: critical pods go last", criticalKill.Format(time.TimeOnly), ordinaryDone.Format(time.TimeOnly))
	}
	if d := ordinaryDone.Sub(ordinaryKill); d > 4*time.Second+time.Second {
		t.Errorf("the ordinary pod took %v to be killed, want its 4s", d)
	}
	if d := criticalDone.Sub(criticalKill); d > 2*time.Second+time.Second {
		t.Errorf("the critical pod took %v to be killed, want its 2s", d)
	}
}

// TestSecondSignalExitsAtOnce: a second SIGTERM during a graceful shutdown ends the process
// at once, as the kubelet's signal handling does, instead of waiting the grace period out.
func TestSecondSignalExitsAtOnce(t *testing.T) {
	d := shutdownDaemon(t, "60s", "10s")
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	d.eventually(10*time.Second, "the shutdown under way", func() (bool, string) {
		return strings.Contains(d.log(), "Shutdown manager killing pod with gracePeriod"), "no kill logged"
	})
	second := time.Now()
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-d.exited:
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			t.Fatalf("exit after the second SIGTERM: %v, want killed by the signal", err)
		}
		if ws, ok := exit.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
			t.Errorf("exit after the second SIGTERM: %v, want killed by SIGTERM", err)
		}
		if took := time.Since(second); took > 2*time.Second {
			t.Errorf("the process ended %v after the second SIGTERM, want at once", took)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("still running 5s after the second SIGTERM:\n%s", d.log())
	}
}
