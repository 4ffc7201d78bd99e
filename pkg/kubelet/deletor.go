package kubelet

import (
	"context"
	"sync"

	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/pkg/container"
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

// containerDeletor removes dead containers after a ContainerDied event off the sync loop's
// goroutine (upstream podContainerDeletor): the loop only queues; drain (the step) or run
// (the runner) does the runtime calls.
type containerDeletor struct {
	cleaner containerCleaner
	ch      chan deletion
	// mu serialises drain so a scheduler and the runner never remove concurrently.
	mu sync.Mutex
}

func newContainerDeletor(c containerCleaner) *containerDeletor {
	return &containerDeletor{cleaner: c, ch: make(chan deletion, containerDeletorBufferLimit)}
}

// enqueue queues a removal without blocking.
func (d *containerDeletor) enqueue(status *container.PodStatus, exitedID string, removeAll bool) {
	select {
	case d.ch <- deletion{status: status, exitedID: exitedID, removeAll: removeAll}:
	default:
		klog.InfoS("Failed to issue the request to remove container", "containerID", exitedID, "podUID", status.ID)
	}
}

func (d *containerDeletor) process(ctx context.Context, r deletion) {
	if err := d.cleaner.CleanUpContainersInPod(ctx, r.status, r.exitedID, r.removeAll); err != nil && ctx.Err() == nil {
		klog.FromContext(ctx).Error(err, "Failed to remove dead containers", "podUID", r.status.ID, "containerID", r.exitedID)
	}
}

// drain handles every queued removal without waiting for more and returns how many.
func (d *containerDeletor) drain(ctx context.Context) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for ctx.Err() == nil {
		select {
		case r := <-d.ch:
			d.process(ctx, r)
			n++
		default:
			return n
		}
	}
	return n
}

// run handles removals as they come until ctx ends.
func (d *containerDeletor) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case r := <-d.ch:
			d.mu.Lock()
			d.process(ctx, r)
			d.mu.Unlock()
		}
	}
}
