package view

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/pkg/container"
	"github.com/minikubelet/minikubelet/pkg/cri"
)

// Config configures a View.
type Config struct {
	// Runtime is the CRI runtime service the views read (required).
	Runtime cri.RuntimeService
	// Clock stamps PodStatus.TimeStamp. Required.
	Clock clock.PassiveClock
}

// View answers GetPods and GetPodStatus with ListPodSandbox + ListContainers and
// PodSandboxStatus + ContainerStatus, as the kubelet's kuberuntime manager does. It holds no
// state, so it is safe for concurrent use when the runtime is.
type View struct {
	rs  cri.RuntimeService
	clk clock.PassiveClock
}

var (
	_ container.PodLister       = (*View)(nil)
	_ container.PodStatusGetter = (*View)(nil)
)

// New returns a view over cfg.Runtime.
func New(cfg Config) (*View, error) {
	if cfg.Runtime == nil {
		return nil, errors.New("create runtime view: config field \"Runtime\" is required")
	}
	if cfg.Clock == nil {
		// No silent real clock: every loop must be able to run on a fake one.
		return nil, errors.New("runtime view: Config.Clock is required")
	}
	return &View{rs: cfg.Runtime, clk: cfg.Clock}, nil
}

// Errors of GetPods name the CRI call that failed, so a PLEG log says which call broke.
const (
	listSandboxesAction   = "list pod sandboxes"
	listContainersAction  = "list containers"
	sandboxStatusAction   = "get pod sandbox status"
	containerStatusAction = "get container status"
)

// GetPods lists pods with their sandboxes and containers. With all=false only ready
// sandboxes and running containers are listed (so only pods with one of them appear), as
// upstream. Pods appear in the order their first sandbox is listed; pods known only from
// containers follow. An error from either list call is returned wrapped, and no pods.
func (v *View) GetPods(ctx context.Context, all bool) ([]*container.Pod, error) {
	var sf cri.PodSandboxFilter
	var cf cri.ContainerFilter
	if !all {
		ready, running := cri.SandboxReady, cri.ContainerRunning
		sf.State, cf.State = &ready, &running
	}
	sandboxes, err := v.rs.ListPodSandbox(ctx, &sf)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", listSandboxesAction, err)
	}
	containers, err := v.rs.ListContainers(ctx, &cf)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", listContainersAction, err)
	}
	return BuildPods(sandboxes, containers), nil
}

// GetPod lists one pod's sandboxes and containers (in any state) with the pod UID label
// filter, as upstream's GetPod; container.ErrPodNotFound when the runtime has none.
func (v *View) GetPod(ctx context.Context, uid types.UID) (*container.Pod, error) {
	selector := map[string]string{cri.PodUIDLabel: string(uid)}
	sandboxes, err := v.rs.ListPodSandbox(ctx, &cri.PodSandboxFilter{LabelSelector: selector})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", listSandboxesAction, err)
	}
	containers, err := v.rs.ListContainers(ctx, &cri.ContainerFilter{LabelSelector: selector})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", listContainersAction, err)
	}
	for _, p := range BuildPods(sandboxes, containers) {
		if p.ID == uid {
			return p, nil
		}
	}
	return nil, fmt.Errorf("get pod %s: %w", uid, container.ErrPodNotFound)
}

// BuildPods groups listed sandboxes (by metadata UID) and containers (by the pod UID label;
// containers without it were not made by a kubelet and are skipped) into pods. It allocates a
// fixed number of slices plus one index map, however many pods there are.
func BuildPods(sandboxes []cri.PodSandbox, containers []cri.Container) []*container.Pod {
	type acc struct {
		uid, name, namespace string
		createdAt            int64
		nSandboxes, nTotal   int32
		next                 int32 // fill cursor into the pointer slice
	}
	accs := make([]acc, 0, len(sandboxes))
	index := make(map[string]int32, len(sandboxes))
	owner := make([]int32, len(sandboxes)+len(containers))
	lookup := func(uid string) int32 {
		p, ok := index[uid]
		if !ok {
			p = int32(len(accs))
			index[uid] = p
			accs = append(accs, acc{uid: uid})
		}
		return p
	}
	for i := range sandboxes {
		s := &sandboxes[i]
		p := lookup(s.Metadata.UID)
		a := &accs[p]
		a.nSandboxes++
		a.nTotal++
		if a.name == "" || s.CreatedAt >= a.createdAt {
			a.name, a.namespace, a.createdAt = s.Metadata.Name, s.Metadata.Namespace, s.CreatedAt
		}
		owner[i] = p
	}
	for j := range containers {
		c := &containers[j]
		uid := c.Labels[cri.PodUIDLabel]
		if uid == "" {
			owner[len(sandboxes)+j] = -1
			continue
		}
		p := lookup(uid)
		a := &accs[p]
		a.nTotal++
		if a.name == "" {
			a.name, a.namespace = c.Labels[cri.PodNameLabel], c.Labels[cri.PodNamespaceLabel]
		}
		owner[len(sandboxes)+j] = p
	}

	total := int32(0)
	for i := range accs {
		accs[i].next = total
		total += accs[i].nTotal
	}
	pods := make([]container.Pod, len(accs))
	out := make([]*container.Pod, len(accs))
	items := make([]container.Container, total)
	ptrs := make([]*container.Container, total)
	for i := range accs {
		a := &accs[i]
		start, mid, end := a.next, a.next+a.nSandboxes, a.next+a.nTotal
		pods[i] = container.Pod{
			ID:         types.UID(a.uid),
			Name:       a.name,
			Namespace:  a.namespace,
			CreatedAt:  a.createdAt,
			Sandboxes:  ptrs[start:mid:mid],
			Containers: ptrs[mid:end:end],
		}
		out[i] = &pods[i]
	}
	// Sandboxes fill each pod's region first, then containers, so Sandboxes and Containers
	// keep listing order.
	for i := range sandboxes {
		a := &accs[owner[i]]
		items[a.next] = SandboxFromCRI(&sandboxes[i])
		ptrs[a.next] = &items[a.next]
		a.next++
	}
	for j := range containers {
		p := owner[len(sandboxes)+j]
		if p < 0 {
			continue
		}
		a := &accs[p]
		items[a.next] = ContainerFromCRI(&containers[j])
		ptrs[a.next] = &items[a.next]
		a.next++
	}
	return out
}

// SandboxFromCRI turns a listed sandbox into the kubelet's container view of it: a ready
// sandbox counts as running.
func SandboxFromCRI(s *cri.PodSandbox) container.Container {
	return container.Container{
		ID:        container.ContainerID{Type: container.RuntimeType, ID: s.ID},
		State:     container.SandboxStateFromCRI(s.State),
		CreatedAt: s.CreatedAt,
		Attempt:   s.Metadata.Attempt,
	}
}

// ContainerFromCRI turns a listed container into the kubelet's view of it.
func ContainerFromCRI(c *cri.Container) container.Container {
	return container.Container{
		ID:        container.ContainerID{Type: container.RuntimeType, ID: c.ID},
		Name:      c.Metadata.Name,
		Image:     c.Image.Image,
		ImageID:   c.ImageRef,
		State:     container.StateFromCRI(c.State),
		CreatedAt: c.CreatedAt,
		Attempt:   c.Metadata.Attempt,
	}
}

// GetPodStatus reads one pod's status: its sandboxes (newest first; the pod IP comes from the
// newest one if it is ready) and its containers (newest first). A sandbox or container
// removed between the list and the status call is skipped, as upstream; any other error
// fails the whole call. TimeStamp is the clock's time when the read began.
func (v *View) GetPodStatus(ctx context.Context, uid types.UID, name, namespace string) (*container.PodStatus, error) {
	ts := v.clk.Now()
	selector := map[string]string{cri.PodUIDLabel: string(uid)}
	sandboxes, err := v.rs.ListPodSandbox(ctx, &cri.PodSandboxFilter{LabelSelector: selector})
	if err != nil {
		return nil, fmt.Errorf("%s of pod %q: %w", listSandboxesAction, uid, err)
	}
	sort.SliceStable(sandboxes, func(i, j int) bool { return sandboxes[i].CreatedAt > sandboxes[j].CreatedAt })
	status := &container.PodStatus{ID: uid, Name: name, Namespace: namespace, TimeStamp: ts}
	for i := range sandboxes {
		st, err := v.rs.PodSandboxStatus(ctx, sandboxes[i].ID)
		if errors.Is(err, cri.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s %q of pod %q: %w", sandboxStatusAction, sandboxes[i].ID, uid, err)
		}
		if i == 0 && st.State == cri.SandboxReady && st.IP != "" {
			status.IPs = []string{st.IP}
		}
		status.SandboxStatuses = append(status.SandboxStatuses, st)
	}
	containers, err := v.rs.ListContainers(ctx, &cri.ContainerFilter{LabelSelector: selector})
	if err != nil {
		return nil, fmt.Errorf("%s of pod %q: %w", listContainersAction, uid, err)
	}
	statuses := make([]container.ContainerStatus, 0, len(containers))
	for i := range containers {
		cs, err := v.rs.ContainerStatus(ctx, containers[i].ID)
		if errors.Is(err, cri.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s %q of pod %q: %w", containerStatusAction, containers[i].ID, uid, err)
		}
		statuses = append(statuses, ContainerStatusFromCRI(cs))
	}
	status.ContainerStatuses = NewestFirst(statuses)
	return status, nil
}

// NewestFirst sorts statuses newest first, as the kubelet keeps them (the first status of a
// name is the current container), and returns pointers into the slice. Equal creation times
// (a fast virtual clock) fall back to the higher attempt, then the given order, so the
// result is deterministic.
func NewestFirst(statuses []container.ContainerStatus) []*container.ContainerStatus {
	sort.SliceStable(statuses, func(i, j int) bool {
		if statuses[i].CreatedAt.Equal(statuses[j].CreatedAt) {
			return statuses[i].RestartCount > statuses[j].RestartCount
		}
		return statuses[i].CreatedAt.After(statuses[j].CreatedAt)
	})
	out := make([]*container.ContainerStatus, len(statuses))
	for i := range statuses {
		out[i] = &statuses[i]
	}
	return out
}

// ContainerStatusFromCRI turns a CRI container status into the kubelet's. A zero CRI time
// (not started, not finished) becomes the zero time.Time.
func ContainerStatusFromCRI(s *cri.ContainerStatus) container.ContainerStatus {
	return container.ContainerStatus{
		ID:           container.ContainerID{Type: container.RuntimeType, ID: s.ID},
		Name:         s.Metadata.Name,
		PodSandboxID: s.PodSandboxID,
		State:        container.StateFromCRI(s.State),
		CreatedAt:    unixNano(s.CreatedAt),
		StartedAt:    unixNano(s.StartedAt),
		FinishedAt:   unixNano(s.FinishedAt),
		ExitCode:     int(s.ExitCode),
		Image:        s.Image.Image,
		ImageID:      s.ImageRef,
		Reason:       s.Reason,
		Message:      s.Message,
		RestartCount: int(s.Metadata.Attempt),
		Hash:         hashAnnotation(s.Annotations),
		Resources:    s.Resources,
		User:         s.User,
	}
}

// ContainerHashAnnotation is the container annotation with the hash of the spec it was
// created from, as the kubelet's io.kubernetes.container.hash.
const ContainerHashAnnotation = "io.kubernetes.container.hash"

func hashAnnotation(a map[string]string) uint64 {
	h, err := strconv.ParseUint(a[ContainerHashAnnotation], 16, 64)
	if err != nil {
		return 0
	}
	return h
}

func unixNano(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}
