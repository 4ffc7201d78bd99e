package stats

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/podstatus"
)

// cAdvisor's series as the kubelet serves them on /metrics/cadvisor, the ones the
// kubernetes-mixin's and kube-prometheus' rules and dashboards read. Every container series
// has cAdvisor's labels: container, id (the cgroup), image, name (the runtime's container
// ID), namespace, pod; the pod's own cgroup has them empty but for id, namespace and pod.
var (
	cadvisorLabels = []string{"container", "id", "image", "name", "namespace", "pod"}

	cpuUsageDesc = prometheus.NewDesc("container_cpu_usage_seconds_total",
		"Cumulative cpu time consumed in seconds.", cadvisorLabels, nil)
	cfsPeriodsDesc = prometheus.NewDesc("container_cpu_cfs_periods_total",
		"Number of elapsed enforcement period intervals.", cadvisorLabels, nil)
	cfsThrottledDesc = prometheus.NewDesc("container_cpu_cfs_throttled_periods_total",
		"Number of throttled period intervals.", cadvisorLabels, nil)
	workingSetDesc = prometheus.NewDesc("container_memory_working_set_bytes",
		"Current working set in bytes.", cadvisorLabels, nil)
	memUsageDesc = prometheus.NewDesc("container_memory_usage_bytes",
		"Current memory usage in bytes, including all memory regardless of when it was accessed", cadvisorLabels, nil)
	rssDesc = prometheus.NewDesc("container_memory_rss",
		"Size of RSS in bytes.", cadvisorLabels, nil)
	cacheDesc = prometheus.NewDesc("container_memory_cache",
		"Number of bytes of page cache memory.", cadvisorLabels, nil)
	swapDesc = prometheus.NewDesc("container_memory_swap",
		"Container swap usage in bytes.", cadvisorLabels, nil)
	fsUsageDesc = prometheus.NewDesc("container_fs_usage_bytes",
		"Number of bytes that are consumed by the container on this filesystem.", append(cadvisorLabels, "device"), nil)
	oomEventsDesc = prometheus.NewDesc("container_oom_events_total",
		"Count of out of memory events observed for the container", cadvisorLabels, nil)
	startDesc = prometheus.NewDesc("container_start_time_seconds",
		"Start time of the container since unix epoch in seconds.", cadvisorLabels, nil)
	specMemLimitDesc = prometheus.NewDesc("container_spec_memory_limit_bytes",
		"Memory limit for the container.", cadvisorLabels, nil)
	specCPUPeriodDesc = prometheus.NewDesc("container_spec_cpu_period",
		"CPU period of the container.", cadvisorLabels, nil)
	specCPUQuotaDesc = prometheus.NewDesc("container_spec_cpu_quota",
		"CPU quota of the container.", cadvisorLabels, nil)
	specCPUSharesDesc = prometheus.NewDesc("container_spec_cpu_shares",
		"CPU share of the container.", cadvisorLabels, nil)
	machineCoresDesc = prometheus.NewDesc("machine_cpu_cores",
		"Number of logical CPU cores.", nil, nil)
	machineMemoryDesc = prometheus.NewDesc("machine_memory_bytes",
		"Amount of memory installed on the machine.", nil, nil)

	// cAdvisor's pressure series (its PressureMetrics, which the kubelet asks for with
	// KubeletPSI): full is "stalled", some is "waiting", in seconds.
	cpuStalledDesc = prometheus.NewDesc("container_pressure_cpu_stalled_seconds_total",
		"Total time duration no tasks in the container could make progress due to CPU congestion.", cadvisorLabels, nil)
	cpuWaitingDesc = prometheus.NewDesc("container_pressure_cpu_waiting_seconds_total",
		"Total time duration tasks in the container have waited due to CPU congestion.", cadvisorLabels, nil)
	memoryStalledDesc = prometheus.NewDesc("container_pressure_memory_stalled_seconds_total",
		"Total time duration no tasks in the container could make progress due to memory congestion.", cadvisorLabels, nil)
	memoryWaitingDesc = prometheus.NewDesc("container_pressure_memory_waiting_seconds_total",
		"Total time duration tasks in the container have waited due to memory congestion.", cadvisorLabels, nil)
	ioStalledDesc = prometheus.NewDesc("container_pressure_io_stalled_seconds_total",
		"Total time duration no tasks in the container could make progress due to IO congestion.", cadvisorLabels, nil)
	ioWaitingDesc = prometheus.NewDesc("container_pressure_io_waiting_seconds_total",
		"Total time duration tasks in the container have waited due to IO congestion.", cadvisorLabels, nil)
	pressureDescs = []*prometheus.Desc{cpuStalledDesc, cpuWaitingDesc, memoryStalledDesc, memoryWaitingDesc, ioStalledDesc, ioWaitingDesc}
)

// fsDevice is the device of the node's one simulated filesystem.
const fsDevice = "/dev/vda1"

// Cgroups is what cAdvisor reads: the running containers' and the pods' cgroups, from the
// runtime's usage model (*fake.Runtime). It is not a CRI call: a hung runtime does not stop
// cAdvisor, and it never waits.
type Cgroups interface {
	Cgroups() ([]cri.ContainerStats, []cri.PodSandboxStats)
}

// CadvisorCollector serves cAdvisor's container series from the runtime's usage model: CPU
// (capped at the CPU limit, with the CFS periods it was throttled in), memory (the working
// set; no page cache or swap in the model), the writable layer, the limits and shares as the
// kubelet set them, and the machine's cores and memory.
type CadvisorCollector struct {
	cgroups Cgroups
	pods    func() []*v1.Pod
	memory  float64
	cores   float64
	psi     bool // the pressure series (WithPSI)
}

var _ prometheus.Collector = (*CadvisorCollector)(nil)

// NewCadvisorCollector returns a collector of the cgroups of the pods pods returns, on a
// machine of cores CPUs and memory bytes.
func NewCadvisorCollector(cg Cgroups, pods func() []*v1.Pod, cores float64, memory int64) *CadvisorCollector {
	return &CadvisorCollector{cgroups: cg, pods: pods, cores: cores, memory: float64(memory)}
}

// Describe implements prometheus.Collector.
func (c *CadvisorCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{cpuUsageDesc, cfsPeriodsDesc, cfsThrottledDesc, workingSetDesc, memUsageDesc, rssDesc,
		cacheDesc, swapDesc, fsUsageDesc, oomEventsDesc, startDesc, specMemLimitDesc, specCPUPeriodDesc, specCPUQuotaDesc, specCPUSharesDesc,
		machineCoresDesc, machineMemoryDesc} {
		ch <- d
	}
	if c.psi {
		for _, d := range pressureDescs {
			ch <- d
		}
	}
}

// WithPSI adds cAdvisor's pressure series (KubeletPSI) to what c serves, and returns c.
func (c *CadvisorCollector) WithPSI() *CadvisorCollector {
	c.psi = true
	return c
}

// pressure writes the pressure series of one cgroup: its CPU's from p (nil: none yet),
// its memory's and I/O's zero (nothing stalls on them in the usage model).
func pressure(counter func(*prometheus.Desc, float64, ...string), p *cri.PSI, lv []string) {
	var cpu cri.PSI
	if p != nil {
		cpu = *p
	}
	counter(cpuStalledDesc, float64(cpu.Full.Total)/1e6, lv...)
	counter(cpuWaitingDesc, float64(cpu.Some.Total)/1e6, lv...)
	for _, d := range pressureDescs[2:] {
		counter(d, 0, lv...)
	}
}

// Collect implements prometheus.Collector.
func (c *CadvisorCollector) Collect(ch chan<- prometheus.Metric) { c.CollectFamilies(ch, nil) }

// CollectFamilies writes the families keep wants (all when nil): a scrape that stores two of
// the seventeen (the rules' storage) does not build the others' metrics to drop them.
func (c *CadvisorCollector) CollectFamilies(ch chan<- prometheus.Metric, keep func(*prometheus.Desc) bool) {
	gauge := func(d *prometheus.Desc, v float64, lv ...string) {
		if keep == nil || keep(d) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, lv...)
		}
	}
	counter := func(d *prometheus.Desc, v float64, lv ...string) {
		if keep == nil || keep(d) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, lv...)
		}
	}
	gauge(machineCoresDesc, c.cores)
	gauge(machineMemoryDesc, c.memory)
	containers, sandboxes := c.cgroups.Cgroups()
	pods := map[string]*v1.Pod{}
	for _, p := range c.pods() {
		pods[string(p.UID)] = p
	}
	// The pods' cgroups: what all their containers use, a restart not resetting the CPU.
	// One cgroup a pod, whatever its sandboxes (a re-created one and the old one, stopped).
	type podUse struct {
		cpu, mem uint64
		psi      *cri.PSI
	}
	use := map[string]podUse{}
	var order []string
	for _, sb := range sandboxes {
		if pods[sb.Metadata.UID] == nil {
			continue
		}
		u, seen := use[sb.Metadata.UID]
		if !seen {
			order = append(order, sb.Metadata.UID)
		}
		u.cpu += sb.UsageCoreNanoSeconds
		u.mem += sb.WorkingSetBytes
		if u.psi == nil {
			u.psi = sb.CPUPressure
		} else if sb.CPUPressure != nil {
			sum := *u.psi
			sum.Some.Total += sb.CPUPressure.Some.Total
			sum.Full.Total += sb.CPUPressure.Full.Total
			u.psi = &sum
		}
		use[sb.Metadata.UID] = u
	}
	podCgroup := map[string]string{}
	for _, uid := range order {
		pod, u := pods[uid], use[uid]
		id := podCgroupPath(pod)
		podCgroup[uid] = id
		lv := []string{"", id, "", "", pod.Namespace, pod.Name}
		counter(cpuUsageDesc, float64(u.cpu)/1e9, lv...)
		gauge(workingSetDesc, float64(u.mem), lv...)
		gauge(memUsageDesc, float64(u.mem), lv...)
		gauge(rssDesc, float64(u.mem), lv...)
		if c.psi {
			pressure(counter, u.psi, lv)
		}
	}
	for _, s := range containers {
		uid := s.Labels[cri.PodUIDLabel]
		pod := pods[uid]
		parent, ok := podCgroup[uid]
		if pod == nil || !ok {
			continue
		}
		lv := []string{s.Metadata.Name, parent + "/" + s.ID, s.Image, s.ID, pod.Namespace, pod.Name}
		counter(cpuUsageDesc, float64(s.UsageCoreNanoSeconds)/1e9, lv...)
		if s.CPUQuota > 0 {
			counter(cfsPeriodsDesc, float64(s.CFSPeriods), lv...)
			counter(cfsThrottledDesc, float64(s.CFSThrottled), lv...)
		}
		gauge(workingSetDesc, float64(s.WorkingSetBytes), lv...)
		gauge(memUsageDesc, float64(s.WorkingSetBytes), lv...)
		gauge(rssDesc, float64(s.WorkingSetBytes), lv...)
		gauge(cacheDesc, 0, lv...)
		gauge(swapDesc, 0, lv...)
		// cAdvisor counts an OOM kill on the cgroup that hit its limit. Here, as on a v1.30
		// node with cgroup v2 (the kubelet sets memory.oom.group), that kill ends the whole
		// container, and its cgroup and series go with it: a running container's count is 0,
		// and its restarted successor's starts again at 0.
		counter(oomEventsDesc, 0, lv...)
		if c.psi {
			pressure(counter, s.CPUPressure, lv)
		}
		ch <- prometheus.MustNewConstMetric(fsUsageDesc, prometheus.GaugeValue, float64(s.WritableLayerBytes), append(lv, fsDevice)...)
		if s.StartedAt != 0 {
			gauge(startDesc, float64(s.StartedAt)/1e9, lv...)
		}
		gauge(specMemLimitDesc, float64(s.MemoryLimitBytes), lv...)
		shares := s.CPUShares
		if shares == 0 {
			shares = 2 // a BestEffort container's, as the kubelet sets it
		}
		gauge(specCPUSharesDesc, float64(shares), lv...)
		if s.CPUQuota > 0 {
			gauge(specCPUPeriodDesc, float64(s.CPUPeriod), lv...)
			gauge(specCPUQuotaDesc, float64(s.CPUQuota), lv...)
		}
	}
}

// podCgroupPath is the pod's cgroup with the cgroupfs driver: /kubepods/pod<uid> for a
// Guaranteed pod, /kubepods/<qos>/pod<uid> for the others. The class is the spec's (a pod
// without a status yet has the cgroup it will have).
func podCgroupPath(pod *v1.Pod) string {
	switch podstatus.QOS(pod) {
	case v1.PodQOSGuaranteed:
		return "/kubepods/pod" + string(pod.UID)
	case v1.PodQOSBestEffort:
		return "/kubepods/besteffort/pod" + string(pod.UID)
	}
	return "/kubepods/" + strings.ToLower(string(v1.PodQOSBurstable)) + "/pod" + string(pod.UID)
}
