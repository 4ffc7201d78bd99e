package client

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/pkg/container"
	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/task"
)

// DefaultTimeout is the kubelet's runtimeRequestTimeout default.
const DefaultTimeout = 2 * time.Minute

// Runtime is everything the kubelet uses of a container runtime: the CRI services and the
// pod-level views. *fake.Runtime implements it.
type Runtime interface {
	cri.RuntimeService
	cri.ImageService
	container.PodLister
	container.PodStatusGetter
}

// Client bounds each call of a Runtime with a deadline on the clock: a call still pending
// then (a hung runtime, or latency longer than the timeout) fails with
// cri.ErrDeadlineExceeded, the error a gRPC client gets. As upstream, image pulls and the event
// stream have no deadline, and StopContainer gets the timeout plus its grace period. The
// runtime honours the deadline (task.WithDeadline) because the virtual clock, not the wall
// clock, decides when it passes.
type Client struct {
	rt      Runtime
	clk     clock.PassiveClock
	timeout time.Duration
}

var _ Runtime = (*Client)(nil)

// New returns a client of rt with the given runtimeRequestTimeout (DefaultTimeout when 0;
// negative means no deadline).
func New(rt Runtime, clk clock.PassiveClock, timeout time.Duration) *Client {
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	return &Client{rt: rt, clk: clk, timeout: timeout}
}

// Timeout is the runtimeRequestTimeout in use.
func (c *Client) Timeout() time.Duration { return c.timeout }

func (c *Client) bound(ctx context.Context, d time.Duration) context.Context {
	if d <= 0 {
		return ctx
	}
	return task.WithDeadline(ctx, c.clk.Now().Add(d))
}

func (c *Client) ctx(ctx context.Context) context.Context { return c.bound(ctx, c.timeout) }

// logErr logs a failed call as the remote runtime service does; a cancelled call is not an
// error worth logging (its caller knows why).
func logErr(ctx context.Context, err error, msg string, kv ...any) {
	if err != nil && ctx.Err() == nil {
		klog.FromContext(ctx).Error(err, msg, kv...)
	}
}

func (c *Client) RunPodSandbox(ctx context.Context, config *cri.PodSandboxConfig) (string, error) {
	id, err := c.rt.RunPodSandbox(c.ctx(ctx), config)
	logErr(ctx, err, "RunPodSandbox from runtime service failed")
	return id, err
}

func (c *Client) StopPodSandbox(ctx context.Context, id string) error {
	err := c.rt.StopPodSandbox(c.ctx(ctx), id)
	logErr(ctx, err, "StopPodSandbox from runtime service failed", "podSandboxID", id)
	return err
}

func (c *Client) RemovePodSandbox(ctx context.Context, id string) error {
	err := c.rt.RemovePodSandbox(c.ctx(ctx), id)
	logErr(ctx, err, "RemovePodSandbox from runtime service failed", "podSandboxID", id)
	return err
}

func (c *Client) PodSandboxStatus(ctx context.Context, id string) (*cri.PodSandboxStatus, error) {
	return c.rt.PodSandboxStatus(c.ctx(ctx), id)
}

func (c *Client) ListPodSandbox(ctx context.Context, filter *cri.PodSandboxFilter) ([]cri.PodSandbox, error) {
	out, err := c.rt.ListPodSandbox(c.ctx(ctx), filter)
	logErr(ctx, err, "ListPodSandbox with filter from runtime service failed", "filter", filter)
	return out, err
}

func (c *Client) CreateContainer(ctx context.Context, sandboxID string, config *cri.ContainerConfig, sandboxConfig *cri.PodSandboxConfig) (string, error) {
	id, err := c.rt.CreateContainer(c.ctx(ctx), sandboxID, config, sandboxConfig)
	logErr(ctx, err, "CreateContainer in sandbox from runtime service failed", "podSandboxID", sandboxID)
	return id, err
}

func (c *Client) StartContainer(ctx context.Context, id string) error {
	err := c.rt.StartContainer(c.ctx(ctx), id)
	logErr(ctx, err, "StartContainer from runtime service failed", "containerID", id)
	return err
}

// StopContainer gets the request timeout plus the grace period, as upstream's remote runtime
// client does, so a container honouring a long grace period is not cut short.
func (c *Client) StopContainer(ctx context.Context, id string, timeout int64) error {
	err := c.rt.StopContainer(c.bound(ctx, cri.AddDurations(c.timeout, cri.Seconds(timeout))), id, timeout)
	logErr(ctx, err, "StopContainer from runtime service failed", "containerID", id)
	return err
}

// ExecSync gets the request timeout plus the command's timeout, as upstream's remote runtime
// client does: the runtime itself ends a command that runs longer than timeout.
func (c *Client) ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) (*cri.ExecSyncResponse, error) {
	bound := c.timeout + timeout
	if timeout == 0 {
		bound = 0 // no deadline, as upstream
	}
	resp, err := c.rt.ExecSync(c.bound(ctx, bound), id, cmd, timeout)
	logErr(ctx, err, "ExecSync cmd from runtime service failed", "containerID", id, "cmd", cmd)
	return resp, err
}

func (c *Client) RemoveContainer(ctx context.Context, id string) error {
	err := c.rt.RemoveContainer(c.ctx(ctx), id)
	logErr(ctx, err, "RemoveContainer from runtime service failed", "containerID", id)
	return err
}

func (c *Client) ListContainerStats(ctx context.Context, filter *cri.ContainerStatsFilter) ([]cri.ContainerStats, error) {
	out, err := c.rt.ListContainerStats(c.ctx(ctx), filter)
	logErr(ctx, err, "ListContainerStats with filter from runtime service failed", "filter", filter)
	return out, err
}

func (c *Client) ListPodSandboxStats(ctx context.Context) ([]cri.PodSandboxStats, error) {
	out, err := c.rt.ListPodSandboxStats(c.ctx(ctx))
	logErr(ctx, err, "ListPodSandboxStats from runtime service failed")
	return out, err
}

func (c *Client) ListContainers(ctx context.Context, filter *cri.ContainerFilter) ([]cri.Container, error) {
	out, err := c.rt.ListContainers(c.ctx(ctx), filter)
	logErr(ctx, err, "ListContainers with filter from runtime service failed", "filter", filter)
	return out, err
}

func (c *Client) ContainerStatus(ctx context.Context, id string) (*cri.ContainerStatus, error) {
	return c.rt.ContainerStatus(c.ctx(ctx), id)
}

func (c *Client) Status(ctx context.Context) (*cri.RuntimeStatus, error) {
	st, err := c.rt.Status(c.ctx(ctx))
	logErr(ctx, err, "Status from runtime service failed")
	return st, err
}

// GetContainerEvents connects the event stream; the connection attempt is bounded, the
// stream is not.
func (c *Client) GetContainerEvents(ctx context.Context, notify func()) (cri.ContainerEventStream, error) {
	return c.rt.GetContainerEvents(c.ctx(ctx), notify)
}

// PullImage has no deadline, as upstream: a pull of a big image may take long.
func (c *Client) PullImage(ctx context.Context, image cri.ImageSpec, sandboxConfig *cri.PodSandboxConfig) (string, error) {
	ref, err := c.rt.PullImage(ctx, image, sandboxConfig)
	logErr(ctx, err, "PullImage from image service failed", "image", image.Image)
	return ref, err
}

func (c *Client) ImageStatus(ctx context.Context, image cri.ImageSpec) (*cri.Image, error) {
	return c.rt.ImageStatus(c.ctx(ctx), image)
}

func (c *Client) ListImages(ctx context.Context) ([]cri.Image, error) {
	out, err := c.rt.ListImages(c.ctx(ctx))
	logErr(ctx, err, "ListImages with filter from image service failed")
	return out, err
}

func (c *Client) RemoveImage(ctx context.Context, image cri.ImageSpec) error {
	err := c.rt.RemoveImage(c.ctx(ctx), image)
	logErr(ctx, err, "RemoveImage from image service failed", "image", image.Image)
	return err
}

// GetPods is one deadline for the listing as a whole (upstream bounds each of its two CRI
// calls; a hang in either fails the listing at the deadline in both cases).
func (c *Client) GetPods(ctx context.Context, all bool) ([]*container.Pod, error) {
	return c.rt.GetPods(c.ctx(ctx), all)
}

func (c *Client) GetPodStatus(ctx context.Context, uid types.UID, name, namespace string) (*container.PodStatus, error) {
	return c.rt.GetPodStatus(c.ctx(ctx), uid, name, namespace)
}
