package kubelet

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/pkg/container"
	"github.com/minikubelet/minikubelet/pkg/runtime/cri"
)

// criRuntime is everything the kubelet uses of the container runtime: the CRI services and
// the pod-level views. *fake.Runtime implements it.
type criRuntime interface {
	cri.RuntimeService
	cri.ImageService
	container.PodLister
	container.PodStatusGetter
}

// afterFuncClock is the part of clock.WithDelayedExecution the timeouts need; both the real
// and the fake clock have it.
type afterFuncClock interface {
	AfterFunc(d time.Duration, f func()) clock.Timer
}

// ErrRuntimeRequestTimeout is wrapped by the error of a runtime call that did not answer
// within runtimeRequestTimeout.
var ErrRuntimeRequestTimeout = errors.New("runtime request timed out")

// timeoutRuntime bounds every runtime call with runtimeRequestTimeout on the kubelet's
// clock, as the kubelet's remote CRI client does with a context deadline: a hung runtime
// call (a "hang" fault) fails after the timeout instead of stalling its caller forever.
// As upstream, image pulls and the event stream are not bounded, and StopContainer gets
// the timeout plus its grace period. The deadline is a clock timer rather than
// context.WithTimeout so that it follows the virtual clock in tests and simulate mode.
type timeoutRuntime struct {
	rt      criRuntime
	clk     afterFuncClock
	timeout time.Duration
}

var (
	_ cri.RuntimeService        = (*timeoutRuntime)(nil)
	_ cri.ImageService          = (*timeoutRuntime)(nil)
	_ container.PodLister       = (*timeoutRuntime)(nil)
	_ container.PodStatusGetter = (*timeoutRuntime)(nil)
)

// withTimeout runs call with a context that ends after d on the clock, and turns the
// cancellation into an error naming the method and the timeout.
func withTimeout[T any](r *timeoutRuntime, ctx context.Context, method string, d time.Duration, call func(context.Context) (T, error)) (T, error) {
	if r.clk == nil || d <= 0 {
		return call(ctx)
	}
	cctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	// The error is built only when the timer fires: most calls finish in time.
	t := r.clk.AfterFunc(d, func() {
		cancel(fmt.Errorf("%s: %w after %v (runtimeRequestTimeout): %w", method, ErrRuntimeRequestTimeout, d, context.DeadlineExceeded))
	})
	defer t.Stop()
	v, err := call(cctx)
	if err != nil && ctx.Err() == nil {
		if cause := context.Cause(cctx); errors.Is(cause, ErrRuntimeRequestTimeout) {
			return v, cause
		}
	}
	return v, err
}

func (r *timeoutRuntime) do(ctx context.Context, method string, call func(context.Context) error) error {
	_, err := withTimeout(r, ctx, method, r.timeout, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, call(ctx)
	})
	return err
}

func (r *timeoutRuntime) RunPodSandbox(ctx context.Context, config *cri.PodSandboxConfig) (string, error) {
	return withTimeout(r, ctx, "RunPodSandbox", r.timeout, func(ctx context.Context) (string, error) {
		return r.rt.RunPodSandbox(ctx, config)
	})
}

func (r *timeoutRuntime) StopPodSandbox(ctx context.Context, id string) error {
	return r.do(ctx, "StopPodSandbox", func(ctx context.Context) error { return r.rt.StopPodSandbox(ctx, id) })
}

func (r *timeoutRuntime) RemovePodSandbox(ctx context.Context, id string) error {
	return r.do(ctx, "RemovePodSandbox", func(ctx context.Context) error { return r.rt.RemovePodSandbox(ctx, id) })
}

func (r *timeoutRuntime) PodSandboxStatus(ctx context.Context, id string) (*cri.PodSandboxStatus, error) {
	return withTimeout(r, ctx, "PodSandboxStatus", r.timeout, func(ctx context.Context) (*cri.PodSandboxStatus, error) {
		return r.rt.PodSandboxStatus(ctx, id)
	})
}

func (r *timeoutRuntime) ListPodSandbox(ctx context.Context, filter *cri.PodSandboxFilter) ([]cri.PodSandbox, error) {
	return withTimeout(r, ctx, "ListPodSandbox", r.timeout, func(ctx context.Context) ([]cri.PodSandbox, error) {
		return r.rt.ListPodSandbox(ctx, filter)
	})
}

func (r *timeoutRuntime) CreateContainer(ctx context.Context, sandboxID string, config *cri.ContainerConfig, sandboxConfig *cri.PodSandboxConfig) (string, error) {
	return withTimeout(r, ctx, "CreateContainer", r.timeout, func(ctx context.Context) (string, error) {
		return r.rt.CreateContainer(ctx, sandboxID, config, sandboxConfig)
	})
}

func (r *timeoutRuntime) StartContainer(ctx context.Context, id string) error {
	return r.do(ctx, "StartContainer", func(ctx context.Context) error { return r.rt.StartContainer(ctx, id) })
}

// StopContainer gets the request timeout plus the grace period, as upstream's remote
// runtime client does, so a container honouring a long grace period is not cut short.
func (r *timeoutRuntime) StopContainer(ctx context.Context, id string, timeout int64) error {
	d := r.timeout + time.Duration(timeout)*time.Second
	_, err := withTimeout(r, ctx, "StopContainer", d, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, r.rt.StopContainer(ctx, id, timeout)
	})
	return err
}

func (r *timeoutRuntime) RemoveContainer(ctx context.Context, id string) error {
	return r.do(ctx, "RemoveContainer", func(ctx context.Context) error { return r.rt.RemoveContainer(ctx, id) })
}

func (r *timeoutRuntime) ListContainers(ctx context.Context, filter *cri.ContainerFilter) ([]cri.Container, error) {
	return withTimeout(r, ctx, "ListContainers", r.timeout, func(ctx context.Context) ([]cri.Container, error) {
		return r.rt.ListContainers(ctx, filter)
	})
}

func (r *timeoutRuntime) ContainerStatus(ctx context.Context, id string) (*cri.ContainerStatus, error) {
	return withTimeout(r, ctx, "ContainerStatus", r.timeout, func(ctx context.Context) (*cri.ContainerStatus, error) {
		return r.rt.ContainerStatus(ctx, id)
	})
}

func (r *timeoutRuntime) Status(ctx context.Context) (*cri.RuntimeStatus, error) {
	return withTimeout(r, ctx, "Status", r.timeout, func(ctx context.Context) (*cri.RuntimeStatus, error) {
		return r.rt.Status(ctx)
	})
}

// GetContainerEvents is a stream: it lives as long as ctx, so it has no timeout.
func (r *timeoutRuntime) GetContainerEvents(ctx context.Context, ch chan<- *cri.ContainerEventResponse) error {
	return r.rt.GetContainerEvents(ctx, ch)
}

// PullImage has no timeout, as upstream: a pull of a big image may take long.
func (r *timeoutRuntime) PullImage(ctx context.Context, image cri.ImageSpec, sandboxConfig *cri.PodSandboxConfig) (string, error) {
	return r.rt.PullImage(ctx, image, sandboxConfig)
}

func (r *timeoutRuntime) ImageStatus(ctx context.Context, image cri.ImageSpec) (*cri.Image, error) {
	return withTimeout(r, ctx, "ImageStatus", r.timeout, func(ctx context.Context) (*cri.Image, error) {
		return r.rt.ImageStatus(ctx, image)
	})
}

func (r *timeoutRuntime) ListImages(ctx context.Context) ([]cri.Image, error) {
	return withTimeout(r, ctx, "ListImages", r.timeout, func(ctx context.Context) ([]cri.Image, error) {
		return r.rt.ListImages(ctx)
	})
}

func (r *timeoutRuntime) RemoveImage(ctx context.Context, image cri.ImageSpec) error {
	return r.do(ctx, "RemoveImage", func(ctx context.Context) error { return r.rt.RemoveImage(ctx, image) })
}

// GetPods is one bound for the listing as a whole (upstream bounds each of its two CRI
// calls; a hang in either fails the listing after the timeout in both cases).
func (r *timeoutRuntime) GetPods(ctx context.Context, all bool) ([]*container.Pod, error) {
	return withTimeout(r, ctx, "GetPods", r.timeout, func(ctx context.Context) ([]*container.Pod, error) {
		return r.rt.GetPods(ctx, all)
	})
}

func (r *timeoutRuntime) GetPodStatus(ctx context.Context, uid types.UID, name, namespace string) (*container.PodStatus, error) {
	return withTimeout(r, ctx, "GetPodStatus", r.timeout, func(ctx context.Context) (*container.PodStatus, error) {
		return r.rt.GetPodStatus(ctx, uid, name, namespace)
	})
}
