package stats

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/pkg/cri"
)

// Runtime is what the provider asks the container runtime (through the CRI client, so its
// deadline and faults apply).
type Runtime interface {
	ListContainerStats(ctx context.Context, filter *cri.ContainerStatsFilter) ([]cri.ContainerStats, error)
	ListPodSandboxStats(ctx context.Context) ([]cri.PodSandboxStats, error)
}

// NodeUsage is the node's own figures: the machine's, not any container's.
type NodeUsage struct {
	CPUCoreNanoSeconds uint64   // cumulative, every container that ever ran
	CPUNanoCores       uint64   // in use now
	MemoryBytes        int64    // working set: the node's base use plus its containers'
	DiskBytes          int64    // used on the node's filesystem
	PIDs               int64    // processes running
	CPUPressure        *cri.PSI // /proc/pressure/cpu (nil: nothing stalled yet)
}

// Config configures a Provider.
type Config struct {
	NodeName string
	Clock    clock.PassiveClock
	// StartTime is the node's (the kubelet's) start.
	StartTime time.Time
	// The machine's capacity: memory and ephemeral storage in bytes, and the pid limit.
	MemoryCapacity, FsCapacity, MaxPID int64
	Runtime                            Runtime
	Node                               func() NodeUsage
	// Pods returns the pods the node runs, with their statuses; ctx is the caller's
	// (Summary's).
	Pods func(ctx context.Context) []*v1.Pod
	// Volumes returns what each emptyDir of pod holds now (nil: none measured).
	Volumes func(pod *v1.Pod) []VolumeUsage
	// PodMemoryLimit is the memory limit of pod's cgroup in bytes (0: none; nil: never),
	// which its stats' availableBytes is measured against, as cAdvisor's of the pod cgroup.
	PodMemoryLimit func(pod *v1.Pod) int64
	// PSI adds pressure stall information to the CPU and memory stats of the node, its
	// pods and containers, and their I/O stats (KubeletPSI).
	PSI bool
}

// VolumeUsage is what one of a pod's volumes holds.
type VolumeUsage struct {
	Name  string
	Bytes int64
	// Memory is a memory-backed volume (a tmpfs): not the node's disk, so not the pod's
	// ephemeral storage (its pages are its writer's memory).
	Memory bool
}

// Provider computes the node's stats from the runtime's usage model. Safe for concurrent use.
type Provider struct {
	cfg Config
}

// New validates cfg.
func New(cfg Config) (*Provider, error) {
	switch {
	case cfg.NodeName == "":
		return nil, errors.New("stats: Config.NodeName is required")
	case cfg.Clock == nil, cfg.Runtime == nil, cfg.Node == nil, cfg.Pods == nil:
		return nil, errors.New("stats: Config.Clock, Runtime, Node and Pods are required")
	}
	return &Provider{cfg: cfg}, nil
}

// Summary is the /stats/summary document: the node's CPU, memory, filesystem and process
// counts, and for every pod its CPU and memory (from its sandbox: a container restart does not
// reset the pod's CPU) and its running containers'. A runtime error fails the whole summary,
// as upstream's does.
func (p *Provider) Summary(ctx context.Context) (*statsapi.Summary, error) {
	containers, err := p.cfg.Runtime.ListContainerStats(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("failed to list container stats: %w", err)
	}
	sandboxes, err := p.cfg.Runtime.ListPodSandboxStats(ctx)
	if err != nil {
		return nil, fmt.Errorf("failed to list pod sandbox stats: %w", err)
	}
	now := metav1.NewTime(p.cfg.Clock.Now())
	node := p.cfg.Node()
	s := &statsapi.Summary{Node: statsapi.NodeStats{
		NodeName:  p.cfg.NodeName,
		StartTime: metav1.NewTime(p.cfg.StartTime),
		CPU:       cpu(now, node.CPUNanoCores, node.CPUCoreNanoSeconds),
		Memory:    memory(now, uint64(max(node.MemoryBytes, 0)), p.cfg.MemoryCapacity),
		Fs:        fs(now, node.DiskBytes, p.cfg.FsCapacity),
		Rlimit:    &statsapi.RlimitStats{Time: now, MaxPID: ptr(p.cfg.MaxPID), NumOfRunningProcesses: ptr(node.PIDs)},
	}}
	s.Node.Runtime = &statsapi.RuntimeStats{ImageFs: s.Node.Fs, ContainerFs: s.Node.Fs}
	if p.cfg.PSI {
		s.Node.IO = p.pressure(now, s.Node.CPU, s.Node.Memory, node.CPUPressure)
	}

	byUID := map[string][]cri.ContainerStats{}
	for _, c := range containers {
		uid := c.Labels[cri.PodUIDLabel]
		byUID[uid] = append(byUID[uid], c)
	}
	podUsage := map[string]cri.PodSandboxStats{} // a pod's sandboxes, summed: its cgroup
	for _, sb := range sandboxes {
		u := podUsage[sb.Metadata.UID]
		u.UsageCoreNanoSeconds += sb.UsageCoreNanoSeconds
		u.UsageNanoCores += sb.UsageNanoCores
		u.WorkingSetBytes += sb.WorkingSetBytes
		u.Processes += sb.Processes
		if sb.CPUPressure != nil {
			sum := cri.PSI{}
			if u.CPUPressure != nil {
				sum = *u.CPUPressure
			}
			sum.Some.Total += sb.CPUPressure.Some.Total
			sum.Full.Total += sb.CPUPressure.Full.Total
			// the averages of the pod's sandbox that runs (an old one's are decayed)
			sum.Some.Avg10, sum.Some.Avg60, sum.Some.Avg300 = max(sum.Some.Avg10, sb.CPUPressure.Some.Avg10), max(sum.Some.Avg60, sb.CPUPressure.Some.Avg60), max(sum.Some.Avg300, sb.CPUPressure.Some.Avg300)
			sum.Full.Avg10, sum.Full.Avg60, sum.Full.Avg300 = max(sum.Full.Avg10, sb.CPUPressure.Full.Avg10), max(sum.Full.Avg60, sb.CPUPressure.Full.Avg60), max(sum.Full.Avg300, sb.CPUPressure.Full.Avg300)
			u.CPUPressure = &sum
		}
		podUsage[sb.Metadata.UID] = u
	}
	pods := p.cfg.Pods(ctx)
	sort.Slice(pods, func(i, j int) bool {
		if pods[i].Namespace != pods[j].Namespace {
			return pods[i].Namespace < pods[j].Namespace
		}
		return pods[i].Name < pods[j].Name
	})
	s.Pods = make([]statsapi.PodStats, 0, len(pods))
	for _, pod := range pods {
		u, ok := podUsage[string(pod.UID)]
		if !ok {
			continue // no sandbox yet, or none left: nothing to measure
		}
		ps := statsapi.PodStats{
			PodRef:     statsapi.PodReference{Name: pod.Name, Namespace: pod.Namespace, UID: string(pod.UID)},
			StartTime:  podStart(pod),
			Containers: []statsapi.ContainerStats{},
			CPU:        cpu(now, u.UsageNanoCores, u.UsageCoreNanoSeconds),
			Memory:     memory(now, u.WorkingSetBytes, p.podMemoryLimit(pod)),
			// The pod's processes, what pid.available's eviction ranks pods by.
			ProcessStats: &statsapi.ProcessStats{ProcessCount: ptr(u.Processes)},
		}
		if p.cfg.PSI {
			ps.IO = p.pressure(now, ps.CPU, ps.Memory, u.CPUPressure)
		}
		cs := byUID[string(pod.UID)]
		sort.Slice(cs, func(i, j int) bool { return cs[i].Metadata.Name < cs[j].Metadata.Name })
		var podDisk uint64
		for _, c := range cs {
			t := metav1.NewTime(time.Unix(0, c.Timestamp))
			ps.Containers = append(ps.Containers, statsapi.ContainerStats{
				Name:      c.Metadata.Name,
				StartTime: containerStart(pod, c.Metadata.Name),
				CPU:       cpu(t, c.UsageNanoCores, c.UsageCoreNanoSeconds),
				Memory:    memory(t, c.WorkingSetBytes, memoryLimit(pod, c.Metadata.Name)),
				Rootfs:    &statsapi.FsStats{Time: t, UsedBytes: ptr(c.WritableLayerBytes)},
				Logs:      &statsapi.FsStats{Time: t, UsedBytes: ptr(c.LogBytes)},
			})
			if p.cfg.PSI {
				last := &ps.Containers[len(ps.Containers)-1]
				last.IO = p.pressure(t, last.CPU, last.Memory, c.CPUPressure)
			}
			podDisk += c.WritableLayerBytes + c.LogBytes
		}
		// The pod's ephemeral storage: its containers' writable layers and logs, and its
		// emptyDirs on the node's disk, as upstream's podLocalEphemeralStorageUsage.
		if p.cfg.Volumes != nil {
			for _, v := range p.cfg.Volumes(pod) {
				ps.VolumeStats = append(ps.VolumeStats, statsapi.VolumeStats{Name: v.Name,
					FsStats: statsapi.FsStats{Time: now, UsedBytes: ptr(uint64(max(v.Bytes, 0)))}})
				if !v.Memory {
					podDisk += uint64(max(v.Bytes, 0))
				}
			}
		}
		ps.EphemeralStorage = &statsapi.FsStats{Time: now, UsedBytes: ptr(podDisk)}
		s.Pods = append(s.Pods, ps)
	}
	return s, nil
}

func (p *Provider) podMemoryLimit(pod *v1.Pod) int64 {
	if p.cfg.PodMemoryLimit == nil {
		return 0
	}
	return p.cfg.PodMemoryLimit(pod)
}

// pressure sets the pressure stall information of one cgroup's CPU (from psi: nil, none
// yet) and memory stats (zero: the usage model has no reclaim) and returns its I/O stats
// (zero pressure: no disk queue), as upstream's cadvisorPSIToStatsPSI gives them.
func (p *Provider) pressure(t metav1.Time, c *statsapi.CPUStats, m *statsapi.MemoryStats, psi *cri.PSI) *statsapi.IOStats {
	c.PSI = &statsapi.PSIStats{}
	if psi != nil {
		c.PSI.Some = statsapi.PSIData(psi.Some)
		c.PSI.Full = statsapi.PSIData(psi.Full)
	}
	m.PSI = &statsapi.PSIStats{}
	return &statsapi.IOStats{Time: t, PSI: &statsapi.PSIStats{}}
}

func cpu(t metav1.Time, nanoCores, coreNanoSeconds uint64) *statsapi.CPUStats {
	return &statsapi.CPUStats{Time: t, UsageNanoCores: ptr(nanoCores), UsageCoreNanoSeconds: ptr(coreNanoSeconds)}
}

// memory reports a working set (the model has no page cache, so usage and RSS equal it) and,
// with a limit or capacity, what is left of it.
func memory(t metav1.Time, workingSet uint64, limit int64) *statsapi.MemoryStats {
	m := &statsapi.MemoryStats{Time: t, UsageBytes: ptr(workingSet), WorkingSetBytes: ptr(workingSet), RSSBytes: ptr(workingSet),
		PageFaults: ptr(uint64(0)), MajorPageFaults: ptr(uint64(0))}
	if limit > 0 {
		avail := uint64(0)
		if uint64(limit) > workingSet {
			avail = uint64(limit) - workingSet
		}
		m.AvailableBytes = ptr(avail)
	}
	return m
}

func fs(t metav1.Time, used, capacity int64) *statsapi.FsStats {
	used = max(used, 0)
	avail := max(capacity-used, 0)
	return &statsapi.FsStats{Time: t, CapacityBytes: ptr(uint64(capacity)), UsedBytes: ptr(uint64(used)), AvailableBytes: ptr(uint64(avail))}
}

// podStart is the pod's status start time (when the kubelet first saw it), else its creation.
func podStart(pod *v1.Pod) metav1.Time {
	if pod.Status.StartTime != nil {
		return *pod.Status.StartTime
	}
	return pod.CreationTimestamp
}

// containerStart is when the container's current instance started, from the pod status.
func containerStart(pod *v1.Pod, name string) metav1.Time {
	for _, list := range [][]v1.ContainerStatus{pod.Status.ContainerStatuses, pod.Status.InitContainerStatuses} {
		for _, cs := range list {
			if cs.Name == name && cs.State.Running != nil {
				return cs.State.Running.StartedAt
			}
		}
	}
	return metav1.Time{}
}

func memoryLimit(pod *v1.Pod, name string) int64 {
	for _, list := range [][]v1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for _, c := range list {
			if c.Name == name {
				if q, ok := c.Resources.Limits[v1.ResourceMemory]; ok {
					return q.Value()
				}
			}
		}
	}
	return 0
}

func ptr[T any](v T) *T { return &v }
