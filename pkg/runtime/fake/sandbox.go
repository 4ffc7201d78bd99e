package fake

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"

	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/shell"
	"github.com/minikubelet/minikubelet/pkg/vfs"
)

// CRI method names, as faults name them.
const (
	methodRunPodSandbox       = "RunPodSandbox"
	methodStopPodSandbox      = "StopPodSandbox"
	methodRemovePodSandbox    = "RemovePodSandbox"
	methodPodSandboxStatus    = "PodSandboxStatus"
	methodListPodSandbox      = "ListPodSandbox"
	methodCreateContainer     = "CreateContainer"
	methodStartContainer      = "StartContainer"
	methodStopContainer       = "StopContainer"
	methodRemoveContainer     = "RemoveContainer"
	methodListContainers      = "ListContainers"
	methodContainerStatus     = "ContainerStatus"
	methodStatus              = "Status"
	methodGetContainerEvents  = "GetContainerEvents"
	methodPullImage           = "PullImage"
	methodImageStatus         = "ImageStatus"
	methodListImages          = "ListImages"
	methodRemoveImage         = "RemoveImage"
	methodExecSync            = "ExecSync"
	methodListContainerStats  = "ListContainerStats"
	methodListPodSandboxStats = "ListPodSandboxStats"
	methodUpdateContainer     = "UpdateContainerResources"
)

func one() int { return 1 }

// defaultSysctls are the namespaced sysctls a pod's /proc/sys shows, with a fresh
// namespace's values, as on a Linux node.
var defaultSysctls = map[string]string{
	"kernel.shm_rmid_forced":              "0",
	"kernel.shmmax":                       "18446744073692774399",
	"kernel.shmall":                       "18446744073692774399",
	"kernel.shmmni":                       "4096",
	"kernel.msgmax":                       "8192",
	"kernel.msgmnb":                       "16384",
	"kernel.msgmni":                       "32000",
	"kernel.sem":                          "32000\t1024000000\t500\t32000",
	"net.ipv4.ip_local_port_range":        "32768\t60999",
	"net.ipv4.ping_group_range":           "1\t0",
	"net.ipv4.ip_unprivileged_port_start": "1024",
	"net.ipv4.tcp_syncookies":             "1",
	"net.ipv4.ip_forward":                 "1",
	"net.core.somaxconn":                  "4096",
	"fs.mqueue.msg_max":                   "10",
}

// sysctlTree builds a /proc/sys tree: the defaults with values set over them.
func sysctlTree(values map[string]string) *vfs.Node {
	all := make(map[string]string, len(defaultSysctls)+len(values))
	for k, v := range defaultSysctls {
		all[k] = v
	}
	for k, v := range values {
		all[k] = v
	}
	root := vfs.NewDir(0o555)
	for name, v := range all {
		parts := strings.Split(name, ".")
		dir := root
		for _, p := range parts[:len(parts)-1] {
			dir = dir.Dir(p)
		}
		dir.Add(parts[len(parts)-1], vfs.NewFile([]byte(v+"\n"), 0o644))
	}
	return root
}

// defaultSysctlTree is the /proc/sys of every pod that sets no sysctl: one frozen tree,
// which a privileged container writing to it copies.
var defaultSysctlTree = sync.OnceValue(func() *vfs.Node {
	t := sysctlTree(nil)
	t.Freeze()
	return t
})

// writeSysctlsLocked gives a pod that sets sysctls a /proc/sys of its own, as the runtime
// sets them in the sandbox's namespaces; the others share the defaults.
func (r *Runtime) writeSysctlsLocked(sb *sandbox, sysctls map[string]string) error {
	if len(sysctls) > 0 {
		sb.sysctls = sysctlTree(sysctls)
		sb.sysctls.Freeze()
	}
	return nil
}

// sysctlRoot is the sandbox's /proc/sys.
func (sb *sandbox) sysctlRoot() *vfs.Node {
	if sb.sysctls != nil {
		return sb.sysctls
	}
	return defaultSysctlTree()
}

// podIPLocked is the next pod IP of the range: from its third address (the first two are
// the network and its gateway), wrapping round when the range is used up.
func (r *Runtime) podIPLocked() string {
	size := uint32(1) << (32 - r.podNet.Bits())
	base := r.podNet.Addr().As4()
	n := uint32(base[0])<<24 | uint32(base[1])<<16 | uint32(base[2])<<8 | uint32(base[3])
	n += 2 + (r.ipSeq-1)%(size-3)
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}).String()
}

// RunPodSandbox creates a ready sandbox with the next pod IP (10.88.0.0/16, containerd's
// default CNI range). The pod UID, name and namespace labels are added from the metadata if
// the caller did not set them. Like containerd, a second sandbox with the same name,
// namespace, UID and attempt is refused, and so is a runtime handler it has not (a
// RuntimeClass's handler this node lacks). Emits CONTAINER_CREATED then CONTAINER_STARTED with
// the sandbox id as container id.
func (r *Runtime) RunPodSandbox(ctx context.Context, config *cri.PodSandboxConfig) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if config == nil {
		return "", fmt.Errorf("run pod sandbox: config is required")
	}
	md := config.Metadata
	if md.Name == "" || md.Namespace == "" || md.UID == "" {
		return "", fmt.Errorf("run pod sandbox: metadata name, namespace and uid are required, got name=%q namespace=%q uid=%q", md.Name, md.Namespace, md.UID)
	}
	// As containerd: a handler the runtime has no configuration for (a RuntimeClass whose
	// handler this node lacks) fails the sandbox.
	handler, ok := r.handler(config.RuntimeHandler)
	if !ok {
		return "", fmt.Errorf("rpc error: code = Unknown desc = failed to get sandbox runtime: no runtime for %q is configured", config.RuntimeHandler)
	}
	userns := config.UserNamespace
	if userns != nil && userns.Mode != cri.NamespaceModePod {
		userns = nil // the node's: what the runtime does without one
	}
	if userns != nil {
		if !handler.UserNamespaces {
			return "", fmt.Errorf("run pod sandbox: user namespaces are not supported by the runtime")
		}
		if len(userns.UIDs) == 0 || len(userns.GIDs) == 0 {
			return "", fmt.Errorf("run pod sandbox: user namespace: a pod-level user namespace needs UID and GID mappings, got %d and %d", len(userns.UIDs), len(userns.GIDs))
		}
	}
	if err := r.inject(ctx, methodRunPodSandbox, one); err != nil {
		return "", err
	}
	now := r.lock()
	defer r.unlock(now)
	name := fmt.Sprintf("%s_%s_%s_%d", md.Name, md.Namespace, md.UID, md.Attempt)
	if owner, ok := r.sandboxNames[name]; ok {
		return "", fmt.Errorf("run pod sandbox: failed to reserve sandbox name %q: name is reserved for %q", name, owner)
	}
	labels := withDefaults(config.Labels, cri.PodUIDLabel, md.UID, cri.PodNameLabel, md.Name, cri.PodNamespaceLabel, md.Namespace)
	id := r.newIDLocked()
	r.ipSeq++
	sb := &sandbox{
		hostname: config.Hostname,
		info: cri.PodSandbox{
			ID:             id,
			Metadata:       md,
			State:          cri.SandboxReady,
			CreatedAt:      now,
			Labels:         labels,
			Annotations:    config.Annotations, // the runtime's now (cri.RuntimeService)
			RuntimeHandler: config.RuntimeHandler,
		},
		ip:   r.podIPLocked(),
		name: name,
		pids: &shell.Pids{Max: int(min(max(r.podPids, 0), 1<<30))},
	}
	if sb.cgroup = config.CgroupParent; sb.cgroup == "" {
		// A kubelet that manages no pod cgroups: the containers still need a parent, and
		// a pod without limits is BestEffort's.
		sb.cgroup, sb.ownCgroup = "/kubepods/besteffort/pod"+md.UID, true
	}
	pe := r.podByUID[md.UID]
	if pe == nil {
		pe = &podEntry{uid: md.UID}
		r.podByUID[md.UID] = pe
		r.pods = append(r.pods, pe)
	}
	sb.ns = r.network.NewNamespace(sb.ip)
	if err := r.writeSysctlsLocked(sb, config.Sysctls); err != nil {
		return "", fmt.Errorf("run pod sandbox: %w", err)
	}
	sb.pod = pe
	pe.sandboxes = append(pe.sandboxes, sb)
	if userns != nil {
		// Kept beside the sandbox, not in it: most pods have none.
		if r.userns == nil {
			r.userns = map[*sandbox]*cri.UserNamespace{}
		}
		r.userns[sb] = userns
	}
	r.sandboxes[id] = sb
	r.sandboxNames[name] = id
	r.logger.V(4).Info("Created pod sandbox", "podSandboxID", id, "pod", md.Namespace+"/"+md.Name, "podUID", md.UID)
	r.changedLocked(cri.ContainerCreatedEvent, id, sb, now)
	r.changedLocked(cri.ContainerStartedEvent, id, sb, now)
	return id, nil
}

// StopPodSandbox kills every running container of the sandbox (exit 137, as containerd stops
// them with no grace period; the kubelet stops them gracefully before) and marks it not
// ready. Stopping a stopped or unknown sandbox succeeds, as the CRI requires.
func (r *Runtime) StopPodSandbox(ctx context.Context, podSandboxID string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := r.inject(ctx, methodStopPodSandbox, r.sandboxTouch(podSandboxID)); err != nil {
		return err
	}
	now := r.lock()
	defer r.unlock(now)
	sb, ok := r.sandboxes[podSandboxID]
	if !ok {
		return nil
	}
	r.stopSandboxLocked(sb, now)
	return nil
}

func (r *Runtime) stopSandboxLocked(sb *sandbox, now int64) {
	for _, c := range sb.containers {
		r.killLocked(c, now)
	}
	if sb.info.State == cri.SandboxNotReady {
		return
	}
	sb.info.State = cri.SandboxNotReady
	sb.ns.Close() // its network is torn down: its IP answers no more
	r.logger.V(4).Info("Stopped pod sandbox", "podSandboxID", sb.info.ID, "podUID", sb.info.Metadata.UID)
	r.changedLocked(cri.ContainerStoppedEvent, sb.info.ID, sb, now)
}

// RemovePodSandbox stops the sandbox if needed, removes its containers (forcibly, as the CRI
// requires), then the sandbox. Removing an unknown sandbox succeeds.
func (r *Runtime) RemovePodSandbox(ctx context.Context, podSandboxID string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := r.inject(ctx, methodRemovePodSandbox, r.sandboxTouch(podSandboxID)); err != nil {
		return err
	}
	now := r.lock()
	defer r.unlock(now)
	sb, ok := r.sandboxes[podSandboxID]
	if !ok {
		return nil
	}
	r.stopSandboxLocked(sb, now)
	for len(sb.containers) > 0 {
		r.removeContainerLocked(sb.containers[len(sb.containers)-1], now)
	}
	r.cpuGone += sb.cpuGone // its containers are all removed by now
	r.stallGone += sb.stallGone
	if sb.ownCgroup {
		_ = r.cgroups.Remove(sb.cgroup) // busy while another sandbox of the pod has containers
	}
	delete(r.sandboxes, sb.info.ID)
	delete(r.sandboxNames, sb.name)
	delete(r.userns, sb)
	pe := sb.pod
	pe.sandboxes = slices.DeleteFunc(pe.sandboxes, func(s *sandbox) bool { return s == sb })
	if len(pe.sandboxes) == 0 {
		delete(r.podByUID, pe.uid)
		r.pods = slices.DeleteFunc(r.pods, func(p *podEntry) bool { return p == pe })
	}
	r.logger.V(4).Info("Removed pod sandbox", "podSandboxID", sb.info.ID, "podUID", sb.info.Metadata.UID)
	r.changedLocked(cri.ContainerDeletedEvent, sb.info.ID, sb, now)
	return nil
}

// PodSandboxStatus returns the sandbox's status; an unknown id wraps cri.ErrNotFound.
func (r *Runtime) PodSandboxStatus(ctx context.Context, podSandboxID string) (*cri.PodSandboxStatus, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := r.inject(ctx, methodPodSandboxStatus, one); err != nil {
		return nil, err
	}
	now := r.lock()
	defer r.unlock(now)
	sb, ok := r.sandboxes[podSandboxID]
	if !ok {
		return nil, notFound("pod sandbox", podSandboxID)
	}
	return sb.status(), nil
}

func (sb *sandbox) status() *cri.PodSandboxStatus {
	return &cri.PodSandboxStatus{
		ID:          sb.info.ID,
		Metadata:    sb.info.Metadata,
		State:       sb.info.State,
		CreatedAt:   sb.info.CreatedAt,
		IP:          sb.ip,
		Labels:      sb.info.Labels,
		Annotations: sb.info.Annotations,
	}
}

// ListPodSandbox lists sandboxes grouped by pod (pods in order of their first sandbox,
// sandboxes in creation order). The result is one allocation; its Labels and Annotations
// maps are shared with the runtime and must not be modified.
func (r *Runtime) ListPodSandbox(ctx context.Context, filter *cri.PodSandboxFilter) ([]cri.PodSandbox, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := r.inject(ctx, methodListPodSandbox, func() int { return r.count(filter, nil) }); err != nil {
		return nil, err
	}
	now := r.lock()
	defer r.unlock(now)
	var out []cri.PodSandbox
	r.eachSandboxLocked(filter, func(n int) { out = make([]cri.PodSandbox, 0, n) }, func(sb *sandbox) {
		out = append(out, sb.info)
	})
	return out, nil
}

// eachSandboxLocked calls size with an upper bound of the matches, then fn for each match.
func (r *Runtime) eachSandboxLocked(f *cri.PodSandboxFilter, size func(int), fn func(*sandbox)) {
	if f != nil && f.ID != "" {
		sb, ok := r.sandboxes[f.ID]
		size(1)
		if ok && sandboxMatches(sb, f) {
			fn(sb)
		}
		return
	}
	pods := r.pods
	if f != nil {
		if uid, ok := f.LabelSelector[cri.PodUIDLabel]; ok {
			pods = nil
			if pe := r.podByUID[uid]; pe != nil {
				pods = []*podEntry{pe}
			}
		}
	}
	n := len(r.sandboxes)
	if len(pods) <= 1 {
		n = 0
		for _, pe := range pods {
			n += len(pe.sandboxes)
		}
	}
	size(n)
	for _, pe := range pods {
		for _, sb := range pe.sandboxes {
			if sandboxMatches(sb, f) {
				fn(sb)
			}
		}
	}
}

func sandboxMatches(sb *sandbox, f *cri.PodSandboxFilter) bool {
	if f == nil {
		return true
	}
	if f.ID != "" && sb.info.ID != f.ID {
		return false
	}
	if f.State != nil && sb.info.State != *f.State {
		return false
	}
	return labelsMatch(sb.info.Labels, f.LabelSelector)
}

func labelsMatch(labels, selector map[string]string) bool {
	for k, v := range selector {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// count returns how many sandboxes (sf) or containers (cf) a listing would return; latency
// faults with perContainer need it.
func (r *Runtime) count(sf *cri.PodSandboxFilter, cf *cri.ContainerFilter) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	if cf != nil {
		r.eachContainerLocked(cf, func(int) {}, func(*ctr) { n++ })
		return n
	}
	r.eachSandboxLocked(sf, func(int) {}, func(*sandbox) { n++ })
	return n
}

// sandboxTouch counts a sandbox and its containers, for perContainer latency.
func (r *Runtime) sandboxTouch(id string) func() int {
	return func() int {
		r.mu.Lock()
		defer r.mu.Unlock()
		if sb, ok := r.sandboxes[id]; ok {
			return 1 + len(sb.containers)
		}
		return 1
	}
}

// withDefaults is m with each key of kv (key, value, key, value ...) it lacks set. m itself
// when it has them all (the runtime owns the configs it is given: cri.RuntimeService), as
// the kubelet's always do; else a copy, so the caller's map is never written.
func withDefaults(m map[string]string, kv ...string) map[string]string {
	complete := true
	for i := 0; i < len(kv); i += 2 {
		if _, ok := m[kv[i]]; !ok {
			complete = false
			break
		}
	}
	if complete {
		return m
	}
	out := make(map[string]string, len(m)+len(kv)/2)
	for k, v := range m {
		out[k] = v
	}
	for i := 0; i < len(kv); i += 2 {
		if _, ok := out[kv[i]]; !ok {
			out[kv[i]] = kv[i+1]
		}
	}
	return out
}
