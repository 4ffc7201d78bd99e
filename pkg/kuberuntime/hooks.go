package kuberuntime

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/pkg/container"
	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/events"
	"github.com/minikubelet/minikubelet/pkg/simnet"
	"github.com/minikubelet/minikubelet/pkg/task"
)

// Lifecycle hooks, as the kubelet's handler runner (pkg/kubelet/lifecycle) runs them: an
// exec hook is an exec in the container (its failure is a non-zero exit), an httpGet hook
// a GET on the pod network (its failure a connection that fails: any HTTP status passes),
// a sleep hook a wait on the clock.

// ErrPostStartHook is a container whose postStart hook failed: it was killed.
var ErrPostStartHook = fmt.Errorf("PostStartHookError")

// Event reasons of failed hooks, as upstream's.
const (
	EventFailedPostStartHook = "FailedPostStartHook"
	EventFailedPreStopHook   = "FailedPreStopHook"
)

// runHook runs a lifecycle handler of container c (its id) and returns upstream's message
// when it fails.
func (m *Manager) runHook(ctx context.Context, pod *v1.Pod, c *v1.Container, id string, h *v1.LifecycleHandler, podIPs []string) (string, error) {
	podName := pod.Name + "_" + pod.Namespace + "(" + string(pod.UID) + ")"
	switch {
	case h.Exec != nil:
		resp, err := m.runtime.ExecSync(ctx, id, h.Exec.Command, 0)
		var output []byte
		if err == nil && resp.ExitCode != 0 {
			err = fmt.Errorf("command '%s' exited with %d: %s", strings.Join(h.Exec.Command, " "), resp.ExitCode, resp.Stderr)
		}
		if resp != nil {
			output = append(append(output, resp.Stdout...), resp.Stderr...)
		}
		if err != nil {
			return fmt.Sprintf("Exec lifecycle hook (%v) for Container %q in Pod %q failed - error: %v, message: %q", h.Exec.Command, c.Name, podName, err, string(output)), err
		}
		return "", nil
	case h.HTTPGet != nil:
		if err := m.httpHook(pod, c, h.HTTPGet, podIPs); err != nil {
			return fmt.Sprintf("HTTP lifecycle hook (%s) for Container %q in Pod %q failed - error: %v", h.HTTPGet.Path, c.Name, podName, err), err
		}
		return "", nil
	case h.Sleep != nil:
		if m.cfg.After == nil || h.Sleep.Seconds <= 0 {
			return "", nil
		}
		if err := task.Await(ctx, m.cfg.After(time.Duration(h.Sleep.Seconds)*time.Second)); err != nil {
			err = fmt.Errorf("container terminated before sleep hook finished")
			return fmt.Sprintf("Sleep lifecycle hook (%d) for Container %q in Pod %q failed - error: %v", h.Sleep.Seconds, c.Name, podName, err), err
		}
		return "", nil
	}
	err := fmt.Errorf("invalid handler: %v", h)
	return fmt.Sprintf("Cannot run handler: %v", err), err
}

// httpHook sends an httpGet hook's request to the pod (or the host it names) on the pod
// network. Only a connection that fails fails it, as upstream's.
func (m *Manager) httpHook(pod *v1.Pod, c *v1.Container, g *v1.HTTPGetAction, podIPs []string) error {
	host := g.Host
	if host == "" {
		if len(podIPs) == 0 {
			return fmt.Errorf("failed to find networking container: %v", pod.Status)
		}
		host = podIPs[0]
	}
	port, err := hookPort(g.Port, c)
	if err != nil {
		return err
	}
	scheme := strings.ToLower(string(g.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	path := g.Path
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	if m.cfg.Network == nil {
		return nil // no pod network: nothing to reach, as when hooks were not simulated
	}
	req := &simnet.Request{Method: http.MethodGet, Target: path, Header: http.Header{}, Now: m.clock.Now()}
	req.Header.Set("User-Agent", "kube-lifecycle/"+m.cfg.Release.String())
	req.Header.Set("Accept", "*/*")
	for _, hd := range g.HTTPHeaders {
		req.Header.Add(hd.Name, hd.Value)
	}
	if _, err := m.cfg.Network.HTTP(nil, host, port, req); err != nil {
		return fmt.Errorf("Get %q: %w", scheme+"://"+net.JoinHostPort(host, strconv.Itoa(port))+path, err)
	}
	return nil
}

// hookPort resolves a hook's port: a number, a numeric string, or a port's name.
func hookPort(p intstr.IntOrString, c *v1.Container) (int, error) {
	if p.Type == intstr.Int {
		return p.IntValue(), nil
	}
	if n, err := strconv.Atoi(p.StrVal); err == nil {
		return n, nil
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return int(cp.ContainerPort), nil
		}
	}
	return -1, fmt.Errorf("couldn't find port: %v in %v", p, c.Name)
}

// postStart runs c's postStart hook after it started; when it fails the container is
// killed, with upstream's event and the message the container's status shows.
func (m *Manager) postStart(ctx context.Context, pod *v1.Pod, c *v1.Container, id string, podIPs []string) (string, error) {
	if c.Lifecycle == nil || c.Lifecycle.PostStart == nil {
		return "", nil
	}
	msg, err := m.runHook(ctx, pod, c, id, c.Lifecycle.PostStart, podIPs)
	if err == nil {
		return "", nil
	}
	klog.FromContext(ctx).Error(err, "Failed to execute PostStartHook", "pod", klog.KObj(pod), "podUID", pod.UID, "containerName", c.Name, "containerID", id)
	m.recorder.Eventf(events.ContainerRef(pod, c.Name), v1.EventTypeWarning, EventFailedPostStartHook, "%s", "PostStartHook failed")
	cid := container.ContainerID{Type: container.RuntimeType, ID: id}
	if kerr := m.killContainer(ctx, pod, cid, c.Name, "FailedPostStartHook", nil); kerr != nil {
		klog.FromContext(ctx).Error(kerr, "Failed to kill container after a failed postStart hook", "pod", klog.KObj(pod), "containerName", c.Name)
	}
	return msg, ErrPostStartHook
}

// preStop runs c's preStop hook for at most grace seconds and returns how many seconds
// it took, which the stop's grace period loses. A failed hook is an event; the stop goes on.
func (m *Manager) preStop(ctx context.Context, pod *v1.Pod, c *v1.Container, id string, grace int64) int64 {
	if c.Lifecycle == nil || c.Lifecycle.PreStop == nil || grace <= 0 {
		return 0
	}
	start := m.clock.Now()
	hookCtx := task.WithDeadline(ctx, start.Add(time.Duration(grace)*time.Second))
	var podIPs []string
	if status, err := m.view.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace); err == nil {
		podIPs = status.IPs
	}
	if _, err := m.runHook(hookCtx, pod, c, id, c.Lifecycle.PreStop, podIPs); err != nil {
		if !errorsIsDeadline(err) {
			klog.FromContext(ctx).Error(err, "PreStop hook failed", "pod", klog.KObj(pod), "podUID", pod.UID, "containerName", c.Name, "containerID", id)
			// Upstream records no message, so that secrets do not leak into events.
			m.recorder.Eventf(events.ContainerRef(pod, c.Name), v1.EventTypeWarning, EventFailedPreStopHook, "%s", "PreStopHook failed")
		}
	}
	return int64(m.clock.Since(start).Seconds())
}

func errorsIsDeadline(err error) bool {
	return err != nil && strings.Contains(err.Error(), cri.ErrDeadlineExceeded.Error())
}
