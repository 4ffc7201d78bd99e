package client

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/pkg/container"
	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/runtime/view"
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
	m       *opMetrics // nil unless Instrument was called
	// view is the pod status read through this client's own CRI calls, as upstream's
	// GetPodStatus makes them: each is bounded and counted on its own.
	view *view.View
}

var _ Runtime = (*Client)(nil)

// New returns a client of rt with the given runtimeRequestTimeout (DefaultTimeout when 0;
// negative means no deadline).
func New(rt Runtime, clk clock.PassiveClock, timeout time.Duration) *Client {
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	c := &Client{rt: rt, clk: clk, timeout: timeout}
	v, err := view.New(view.Config{Runtime: c, Clock: clk})
	if err != nil {
		panic(err) // both are set
	}
	c.view = v
	return c
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
	start := c.clk.Now()
	id, err := c.rt.RunPodSandbox(c.ctx(ctx), config)
	c.record("RunPodSandbox", start, err)
	logErr(ctx, err, "RunPodSandbox from runtime service failed")
	return id, err
}

func (c *Client) StopPodSandbox(ctx context.Context, id string) error {
	start := c.clk.Now()
	err := c.rt.StopPodSandbox(c.ctx(ctx), id)
	c.record("StopPodSandbox", start, err)
	logErr(ctx, err, "StopPodSandbox from runtime service failed", "podSandboxID", id)
	return err
}

func (c *Client) RemovePodSandbox(ctx context.Context, id string) error {
	start := c.clk.Now()
	err := c.rt.RemovePodSandbox(c.ctx(ctx), id)
	c.record("RemovePodSandbox", start, err)
	logErr(ctx, err, "RemovePodSandbox from runtime service failed", "podSandboxID", id)
	return err
}

func (c *Client) PodSandboxStatus(ctx context.Context, id string) (*cri.PodSandboxStatus, error) {
	start := c.clk.Now()
	st, err := c.rt.PodSandboxStatus(c.ctx(ctx), id)
	c.record("PodSandboxStatus", start, err)
	return st, err
}

func (c *Client) ListPodSandbox(ctx context.Context, filter *cri.PodSandboxFilter) ([]cri.PodSandbox, error) {
	start := c.clk.Now()
	out, err := c.rt.ListPodSandbox(c.ctx(ctx), filter)
	c.record("ListPodSandbox", start, err)
	logErr(ctx, err, "ListPodSandbox with filter from runtime service failed", "filter", filter)
	return out, err
}

func (c *Client) CreateContainer(ctx context.Context, sandboxID string, config *cri.ContainerConfig, sandboxConfig *cri.PodSandboxConfig) (string, error) {
	start := c.clk.Now()
	id, err := c.rt.CreateContainer(c.ctx(ctx), sandboxID, config, sandboxConfig)
	c.record("CreateContainer", start, err)
	logErr(ctx, err, "CreateContainer in sandbox from runtime service failed", "podSandboxID", sandboxID)
	return id, err
}

func (c *Client) StartContainer(ctx context.Context, id string) error {
	start := c.clk.Now()
	err := c.rt.StartContainer(c.ctx(ctx), id)
	c.record("StartContainer", start, err)
	logErr(ctx, err, "StartContainer from runtime service failed", "containerID", id)
	return err
}

// StopContainer gets the request timeout plus the grace period, as upstream's remote runtime
// client does, so a container honouring a long grace period is not cut short.
func (c *Client) StopContainer(ctx context.Context, id string, timeout int64) error {
	start := c.clk.Now()
	err := c.rt.StopContainer(c.bound(ctx, cri.AddDurations(c.timeout, cri.Seconds(timeout))), id, timeout)
	c.record("StopContainer", start, err)
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
	start := c.clk.Now()
	resp, err := c.rt.ExecSync(c.bound(ctx, bound), id, cmd, timeout)
	c.record("ExecSync", start, err)
	logErr(ctx, err, "ExecSync cmd from runtime service failed", "containerID", id, "cmd", cmd)
	return resp, err
}

func (c *Client) RemoveContainer(ctx context.Context, id string) error {
	start := c.clk.Now()
	err := c.rt.RemoveContainer(c.ctx(ctx), id)
	c.record("RemoveContainer", start, err)
	logErr(ctx, err, "RemoveContainer from runtime service failed", "containerID", id)
	return err
}

func (c *Client) ListContainerStats(ctx context.Context, filter *cri.ContainerStatsFilter) ([]cri.ContainerStats, error) {
	start := c.clk.Now()
	out, err := c.rt.ListContainerStats(c.ctx(ctx), filter)
	c.record("ListContainerStats", start, err)
	logErr(ctx, err, "ListContainerStats with filter from runtime service failed", "filter", filter)
	return out, err
}

func (c *Client) ListPodSandboxStats(ctx context.Context) ([]cri.PodSandboxStats, error) {
	start := c.clk.Now()
	out, err := c.rt.ListPodSandboxStats(c.ctx(ctx))
	c.record("ListPodSandboxStats", start, err)
	logErr(ctx, err, "ListPodSandboxStats from runtime service failed")
	return out, err
}

func (c *Client) UpdateContainerResources(ctx context.Context, id string, resources *cri.ContainerResources) error {
	start := c.clk.Now()
	err := c.rt.UpdateContainerResources(c.ctx(ctx), id, resources)
	c.record("UpdateContainerResources", start, err)
	logErr(ctx, err, "UpdateContainerResources from runtime service failed", "containerID", id)
	return err
}

func (c *Client) ListContainers(ctx context.Context, filter *cri.ContainerFilter) ([]cri.Container, error) {
	start := c.clk.Now()
	out, err := c.rt.ListContainers(c.ctx(ctx), filter)
	c.record("ListContainers", start, err)
	logErr(ctx, err, "ListContainers with filter from runtime service failed", "filter", filter)
	return out, err
}

func (c *Client) ContainerStatus(ctx context.Context, id string) (*cri.ContainerStatus, error) {
	start := c.clk.Now()
	st, err := c.rt.ContainerStatus(c.ctx(ctx), id)
	c.record("ContainerStatus", start, err)
	return st, err
}

func (c *Client) Status(ctx context.Context) (*cri.RuntimeStatus, error) {
	start := c.clk.Now()
	st, err := c.rt.Status(c.ctx(ctx))
	c.record("Status", start, err)
	logErr(ctx, err, "Status from runtime service failed")
	return st, err
}

// GetContainerEvents connects the event stream; the connection attempt is bounded, the
// stream is not.
func (c *Client) GetContainerEvents(ctx context.Context, notify func()) (cri.ContainerEventStream, error) {
	start := c.clk.Now()
	stream, err := c.rt.GetContainerEvents(c.ctx(ctx), notify)
	c.record("GetContainerEvents", start, err)
	return stream, err
}

// PullImage has no deadline, as upstream: a pull of a big image may take long.
func (c *Client) PullImage(ctx context.Context, image cri.ImageSpec, sandboxConfig *cri.PodSandboxConfig) (string, error) {
	start := c.clk.Now()
	ref, err := c.rt.PullImage(ctx, image, sandboxConfig)
	c.record("PullImage", start, err)
	logErr(ctx, err, "PullImage from image service failed", "image", image.Image)
	return ref, err
}

func (c *Client) ImageStatus(ctx context.Context, image cri.ImageSpec) (*cri.Image, error) {
	start := c.clk.Now()
	img, err := c.rt.ImageStatus(c.ctx(ctx), image)
	c.record("ImageStatus", start, err)
	return img, err
}

func (c *Client) ListImages(ctx context.Context) ([]cri.Image, error) {
	start := c.clk.Now()
	out, err := c.rt.ListImages(c.ctx(ctx))
	c.record("ListImages", start, err)
	logErr(ctx, err, "ListImages with filter from image service failed")
	return out, err
}

func (c *Client) RemoveImage(ctx context.Context, image cri.ImageSpec) error {
	start := c.clk.Now()
	err := c.rt.RemoveImage(c.ctx(ctx), image)
	c.record("RemoveImage", start, err)
	logErr(ctx, err, "RemoveImage from image service failed", "image", image.Image)
	return err
}

// GetPods is one deadline for the listing as a whole (upstream bounds each of its two CRI
// calls; a hang in either fails the listing at the deadline in both cases). It counts as
// upstream's two calls in the runtime operation metrics.
func (c *Client) GetPods(ctx context.Context, all bool) ([]*container.Pod, error) {
	start := c.clk.Now()
	pods, err := c.rt.GetPods(c.ctx(ctx), all)
	c.recordListing(start, err)
	return pods, err
}

// GetPod lists one pod's sandboxes and containers with the pod UID filter, as upstream's
// GetPod (the PLEG's pod relist): two CRI calls, each bounded and counted on its own.
func (c *Client) GetPod(ctx context.Context, uid types.UID) (*container.Pod, error) {
	return c.view.GetPod(ctx, uid)
}

// GetPodStatus lists the pod's sandboxes and containers and asks each one's status, as
// upstream does, each call bounded and counted on its own.
func (c *Client) GetPodStatus(ctx context.Context, uid types.UID, name, namespace string) (*container.PodStatus, error) {
	return c.view.GetPodStatus(ctx, uid, name, namespace)
}
