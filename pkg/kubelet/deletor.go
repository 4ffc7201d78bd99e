package kubelet

import (
	"context"
	"time"

	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/pkg/container"
	"github.com/minikubelet/minikubelet/pkg/runner"
	"github.com/minikubelet/minikubelet/pkg/task"
)

// containerDeletorBufferLimit bounds the pending removals (upstream
// containerDeletorBufferLimit); requests beyond it are dropped and left to the container
// garbage collector.
const containerDeletorBufferLimit = 50

// containerCleaner removes a pod's dead containers (kuberuntime.Manager).
type containerCleaner interface {
	CleanUpContainersInPod(ctx context.Context, podStatus *container.PodStatus, exitedContainerID string, removeAll bool) error
}

type deletion struct {
	status    *container.PodStatus
	exitedID  string
	removeAll bool
}

// containerDeletor removes dead containers after a ContainerDied event off the sync loop
// (upstream podContainerDeletor): the sync loop only queues; the deletor's loop does the
// runtime calls, as a task, since a removal can wait on a slow runtime.
type containerDeletor struct {
	cleaner containerCleaner
	wake    *runner.Signal

	queue []deletion
	run   *task.Task // the removals in flight
}

func newContainerDeletor(c containerCleaner) *containerDeletor {
	return &containerDeletor{cleaner: c, wake: runner.NewSignal()}
}

// enqueue queues a removal without blocking.
func (d *containerDeletor) enqueue(status *container.PodStatus, exitedID string, removeAll bool) {
	if len(d.queue) >= containerDeletorBufferLimit {
		klog.InfoS("Failed to issue the request to remove container", "containerID", exitedID, "podUID", status.ID)
		return
	}
	d.queue = append(d.queue, deletion{status: status, exitedID: exitedID, removeAll: removeAll})
	d.wake.Notify()
}

// Due is now while removals are queued or the batch in flight can go on.
func (d *containerDeletor) Due(now time.Time) time.Time {
	if (d.run != nil && d.run.Ready()) || (d.run == nil && len(d.queue) > 0) {
		return now
	}
	return time.Time{}
}

// Step starts a batch of every queued removal, or resumes the batch in flight.
func (d *containerDeletor) Step(ctx context.Context) {
	t := d.run
	if t == nil {
		batch := d.queue
		d.queue = nil
		if len(batch) == 0 {
			return
		}
		t = task.New(ctx, func(ctx context.Context) {
			for _, r := range batch {
				d.process(ctx, r)
			}
		})
		d.run = t
	}
	if !t.Resume() {
		t.Waiting().OnDone(d.wake.Notify)
		return
	}
	d.run = nil
}

// Stop abandons the batch in flight.
func (d *containerDeletor) Stop() {
	t := d.run
	d.run = nil
	if t != nil {
		t.Stop()
	}
}

func (d *containerDeletor) process(ctx context.Context, r deletion) {
	if err := d.cleaner.CleanUpContainersInPod(ctx, r.status, r.exitedID, r.removeAll); err != nil && ctx.Err() == nil {
		klog.FromContext(ctx).Error(err, "Failed to remove dead containers", "podUID", r.status.ID, "containerID", r.exitedID)
	}
}
