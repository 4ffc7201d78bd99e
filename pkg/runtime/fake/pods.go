package fake

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/types"

	"github.com/minikubelet/minikubelet/pkg/container"
	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/runtime/view"
)

// GetPod lists one pod as view.View.GetPod does over this runtime, faults included: the
// view's UID filter reads the runtime's per-pod index, so it costs the pod, not the node.
func (r *Runtime) GetPod(ctx context.Context, uid types.UID) (*container.Pod, error) {
	return r.view.GetPod(ctx, uid)
}

// GetPods lists pods as view.View.GetPods would over this runtime: the ListPodSandbox faults
// apply first, then the ListContainers faults, with the same errors, and with all=false only
// ready sandboxes and running containers are listed. Pods come in the order of their first
// sandbox.
//
// It reads the runtime's pod-grouped storage directly instead of through the two
// intermediate listings, and with all=true it returns cached snapshots: a pod that did not
// change since the previous call is the same *container.Pod again (as the kubelet's runtime
// pod cache shares pods), so a relist of 10,000 quiet pods is one allocation. The returned
// pods, their containers and slices are shared and must not be modified.
func (r *Runtime) GetPods(ctx context.Context, all bool) ([]*container.Pod, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var sf cri.PodSandboxFilter
	var cf cri.ContainerFilter
	if !all {
		ready, running := cri.SandboxReady, cri.ContainerRunning
		sf.State, cf.State = &ready, &running
	}
	if err := r.inject(ctx, methodListPodSandbox, func() int { return r.count(&sf, nil) }); err != nil {
		return nil, &cri.MethodError{Method: methodListPodSandbox, Err: fmt.Errorf("list pod sandboxes: %w", err)}
	}
	if err := r.inject(ctx, methodListContainers, func() int { return r.count(nil, &cf) }); err != nil {
		return nil, &cri.MethodError{Method: methodListContainers, Err: fmt.Errorf("list containers: %w", err)}
	}
	now := r.lock()
	defer r.unlock(now)
	if !all {
		return r.listRunningLocked(), nil
	}
	out := make([]*container.Pod, len(r.pods))
	for i, pe := range r.pods {
		if pe.snap == nil {
			pe.snap = pe.build()
		}
		out[i] = pe.snap
	}
	return out, nil
}

// A pod snapshot is one allocation sized to its entries (a sandbox and its containers):
// blocks of three and four cover a sandbox with up to three containers, and a block of four
// entries is 160 bytes more than one of three (640 against 480 bytes), so the two-container
// pods of a big node take the smaller.
type podBlock3 struct {
	pod   container.Pod
	items [3]container.Container
	ptrs  [3]*container.Container
}

type podBlock4 struct {
	pod   container.Pod
	items [4]container.Container
	ptrs  [4]*container.Container
}

// build returns the pod with every sandbox and container: one allocation for up to four
// of them, three beyond.
func (pe *podEntry) build() *container.Pod {
	var (
		pod   *container.Pod
		items []container.Container
		ptrs  []*container.Container
	)
	switch n := pe.count(true); {
	case n <= 3:
		blk := &podBlock3{}
		pod, items, ptrs = &blk.pod, blk.items[:], blk.ptrs[:]
	case n == 4:
		blk := &podBlock4{}
		pod, items, ptrs = &blk.pod, blk.items[:], blk.ptrs[:]
	default:
		pod, items, ptrs = &container.Pod{}, make([]container.Container, n), make([]*container.Container, n)
	}
	pe.fill(pod, items, ptrs, true)
	return pod
}

// count is how many sandboxes and containers the pod lists: all of them, or (all=false)
// its ready sandboxes and running containers.
func (pe *podEntry) count(all bool) int {
	n := 0
	for _, sb := range pe.sandboxes {
		if all || sb.info.State == cri.SandboxReady {
			n++
		}
		for _, c := range sb.containers {
			if all || c.info.State == cri.ContainerRunning {
				n++
			}
		}
	}
	return n
}

// fill writes the pod's listed sandboxes, then its listed containers (see count), into
// items and ptrs from index 0 and points pod at them. The pod is named after its newest
// listed sandbox, or after its first sandbox when only containers are listed (as a listing
// names it from the container labels, which default to the sandbox metadata). It returns
// how many entries it wrote; with none it leaves pod alone.
func (pe *podEntry) fill(pod *container.Pod, items []container.Container, ptrs []*container.Container, all bool) int {
	i := 0
	var newest *sandbox
	for _, sb := range pe.sandboxes {
		if !all && sb.info.State != cri.SandboxReady {
			continue
		}
		items[i] = view.SandboxFromCRI(&sb.info)
		ptrs[i] = &items[i]
		i++
		if newest == nil || sb.info.CreatedAt >= newest.info.CreatedAt {
			newest = sb
		}
	}
	mid := i
	for _, sb := range pe.sandboxes {
		for _, c := range sb.containers {
			if !all && c.info.State != cri.ContainerRunning {
				continue
			}
			items[i] = view.ContainerFromCRI(&c.info)
			ptrs[i] = &items[i]
			i++
		}
	}
	if i == 0 {
		return 0
	}
	pod.ID = types.UID(pe.uid)
	pod.Sandboxes, pod.Containers = ptrs[:mid:mid], ptrs[mid:i:i]
	if newest != nil {
		pod.CreatedAt = newest.info.CreatedAt
	} else {
		newest = pe.sandboxes[0]
	}
	pod.Name, pod.Namespace = newest.info.Metadata.Name, newest.info.Metadata.Namespace
	return i
}

// listRunningLocked lists the pods with a ready sandbox or a running container, with only
// those, afresh (four allocations in all): GetPods(all=false).
func (r *Runtime) listRunningLocked() []*container.Pod {
	nPods, total := 0, 0
	for _, pe := range r.pods {
		if n := pe.count(false); n > 0 {
			nPods++
			total += n
		}
	}
	pods := make([]container.Pod, nPods)
	out := make([]*container.Pod, nPods)
	items := make([]container.Container, total)
	ptrs := make([]*container.Container, total)
	next, p := 0, 0
	for _, pe := range r.pods {
		if p == nPods {
			break // every pod with something running is listed
		}
		n := pe.fill(&pods[p], items[next:], ptrs[next:], false)
		if n == 0 {
			continue
		}
		out[p] = &pods[p]
		next += n
		p++
	}
	return out
}

// GetPodStatus reads one pod's status as view.View.GetPodStatus would over this runtime
// (ListPodSandbox, PodSandboxStatus, ListContainers, ContainerStatus, each for the pod's UID
// label): while any fault is set it goes through those calls, so a fault on any of them
// applies as it would. Without faults it reads the pod's entry under one lock, with the
// same result: a relist reads every changed pod's status, and the four kinds of call (six
// lock rounds and two ID lookups in tables of every container and sandbox) were most of a
// relist under churn at 10,000 pods. The one read is also one instant: the calls' could
// see a container exit between them.
func (r *Runtime) GetPodStatus(ctx context.Context, uid types.UID, name, namespace string) (*container.PodStatus, error) {
	if r.nFaults.Load() != 0 || ctx.Err() != nil {
		return r.view.GetPodStatus(ctx, uid, name, namespace) // and a done context's error as it words it
	}
	ts := r.clk.Now() // as the view: before the read
	// The view's filters select the pod's UID label: what sandboxMatches and containerMatches
	// then check, without a selector map for every read.
	ofPod := func(labels map[string]string) bool {
		got, ok := labels[cri.PodUIDLabel]
		return ok && got == string(uid)
	}
	now := r.lock()
	defer r.unlock(now)
	status := &container.PodStatus{ID: uid, Name: name, Namespace: namespace, TimeStamp: ts}
	var entries []*sandbox
	if pe := r.podByUID[string(uid)]; pe != nil {
		entries = pe.sandboxes
	}
	var buf [4]*sandbox
	sandboxes := buf[:0]
	n := 0
	for _, sb := range entries {
		if ofPod(sb.info.Labels) {
			sandboxes = append(sandboxes, sb)
		}
		n += len(sb.containers)
	}
	// Newest first, ties in listing order (the view's stable sort of the listing).
	slices.SortStableFunc(sandboxes, func(a, b *sandbox) int { return cmp.Compare(b.info.CreatedAt, a.info.CreatedAt) })
	for i, sb := range sandboxes {
		st := sb.status()
		if i == 0 && st.State == cri.SandboxReady && st.IP != "" {
			status.IPs = []string{st.IP}
		}
		status.SandboxStatuses = append(status.SandboxStatuses, st)
	}
	statuses := make([]container.ContainerStatus, 0, n)
	for _, sb := range entries {
		for _, c := range sb.containers {
			if ofPod(c.info.Labels) {
				statuses = append(statuses, view.ContainerStatusFromCRI(r.containerStatusLocked(c)))
			}
		}
	}
	status.ContainerStatuses = view.NewestFirst(statuses)
	return status, nil
}
