package userns

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"path"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/vfs"
)

// UnitLength is the unit of a pod's range: userNamespaces.idsPerPod is a multiple of it
// (upstream's userNsUnitLength), and its default.
const UnitLength = 65536

// MappingsFile is where a pod's mappings are kept, in its directory (upstream's "userns").
const MappingsFile = "userns"

// ErrNoRange is what allocating a pod's range fails with when every range is taken.
var ErrNoRange = errors.New("could not find an empty slot to allocate a user namespace")

// Config configures a Manager.
type Config struct {
	// IDsPerPod is the length of a pod's range (userNamespaces.idsPerPod); 0: UnitLength.
	IDsPerPod uint32
	// FirstID and Length are the host IDs the kubelet may give pods (upstream reads them
	// with getsubids for the "kubelet" user; a node without one gets these defaults):
	// 0 for both is IDsPerPod and 2^32 - IDsPerPod, every ID but the node's own first range.
	FirstID, Length uint32
	// MaxPods is the node's maxPods: the ranges must be enough for that many pods.
	MaxPods int
	// NodeFS is the node's filesystem, where each pod's mappings are kept in its directory;
	// PodDir names that directory. Required.
	NodeFS *vfs.View
	PodDir func(types.UID) string
	// PodsDir is the directory of the pods' directories, read by New for the ranges of the
	// pods a previous kubelet left (a kubelet restart). "" : none are read.
	PodsDir string
	// Seed seeds the choice of a free range (upstream picks at random).
	Seed uint64
	// Supports says whether the runtime's handler (the default, "") supports user
	// namespaces, as the kubelet's HandlerSupportsUserNamespaces reads the runtime's
	// status: an error is a handler the runtime does not know. Required.
	Supports func(handler string) (bool, error)
}

// Manager is the kubelet's user namespace manager (upstream's UsernsManager): it gives each
// pod with hostUsers: false a range of IDsPerPod host IDs, at random among the free ones,
// mapped from 0 in the pod's namespace, and keeps it in the pod's directory until the pod
// is gone. A node whose pods keep the node's namespace holds nothing here. Not safe for
// concurrent use: the node's owner is its one caller.
type Manager struct {
	cfg    Config
	off    uint32 // the first range's index: FirstID / IDsPerPod
	ranges int    // how many ranges there are
	rng    *rand.Rand
	// The ranges in use, by index from off, and each pod's: made with the first.
	used  map[int]types.UID
	byPod map[types.UID]int
}

// New checks the configuration as upstream's MakeUserNsManager does, with its messages, and
// records the ranges of the pods whose directories keep mappings.
func New(logger klog.Logger, cfg Config) (*Manager, error) {
	if cfg.NodeFS == nil || cfg.PodDir == nil || cfg.Supports == nil {
		return nil, errors.New("userns: Config.NodeFS, PodDir and Supports are required")
	}
	if cfg.IDsPerPod == 0 {
		cfg.IDsPerPod = UnitLength
	}
	if cfg.FirstID == 0 && cfg.Length == 0 {
		cfg.FirstID, cfg.Length = cfg.IDsPerPod, uint32(1<<32-uint64(cfg.IDsPerPod))
	}
	n := cfg.IDsPerPod
	switch {
	case n%UnitLength != 0:
		return nil, fmt.Errorf("kubelet user namespace length %v is not a multiple of %d", n, UnitLength)
	case cfg.FirstID%n != 0:
		return nil, fmt.Errorf("kubelet user assigned ID %v is not a multiple of %v", cfg.FirstID, n)
	case cfg.FirstID < n:
		// Mapping a pod's root to the node's root would undo the point of the namespace.
		return nil, fmt.Errorf("kubelet user assigned ID %v must be greater or equal to %v", cfg.FirstID, n)
	case cfg.Length%n != 0:
		return nil, fmt.Errorf("kubelet user assigned IDs length %v is not a multiple of %v", cfg.Length, n)
	case cfg.Length/n < uint32(cfg.MaxPods):
		return nil, fmt.Errorf("kubelet user assigned IDs are not enough to support %v pods", cfg.MaxPods)
	}
	m := &Manager{cfg: cfg, off: cfg.FirstID / n, ranges: int(cfg.Length / n), rng: rand.New(rand.NewPCG(cfg.Seed, 0x7573657273))}
	logger.V(5).Info("User namespace manager mapping", "offset", m.off, "length", m.ranges, "idsPerPod", n)
	if cfg.PodsDir == "" {
		return m, nil
	}
	entries, err := cfg.NodeFS.ReadDir(cfg.PodsDir)
	if errors.Is(err, fs.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read pods from disk: %w", err)
	}
	for _, e := range entries {
		uid := types.UID(e.Name())
		data, err := cfg.NodeFS.ReadFile(path.Join(cfg.PodDir(uid), MappingsFile))
		if errors.Is(err, fs.ErrNotExist) || err == nil && len(data) == 0 {
			continue // a pod in the node's namespace
		}
		if err == nil {
			_, err = m.parseAndRecord(logger, uid, data)
		}
		if err != nil {
			return nil, fmt.Errorf("record pod mappings for existing pod %q: %w", uid, err)
		}
	}
	return m, nil
}

// mappings is the file a pod's range is kept in: upstream's JSON.
type mappings struct {
	UIDMappings []idMapping `json:"uidMappings"`
	GIDMappings []idMapping `json:"gidMappings"`
}

type idMapping struct {
	HostID      uint32 `json:"hostId"`
	ContainerID uint32 `json:"containerId"`
	Length      uint32 `json:"length"`
}

// UserNamespace is the user namespace of pod's sandbox (upstream's
// GetOrCreateUserNamespaceMappings): nil (the node's) unless hostUsers is false; then the
// pod's range, from its directory or newly allocated and written there. It fails with
// upstream's messages when the runtime's handler does not support user namespaces, when
// the pod's file is not one the kubelet wrote, and when no range is free: the sandbox is
// not created, and a later sync tries again.
func (m *Manager) UserNamespace(logger klog.Logger, pod *v1.Pod, handler string) (*cri.UserNamespace, error) {
	if pod == nil || pod.Spec.HostUsers == nil || *pod.Spec.HostUsers {
		return nil, nil
	}
	if ok, err := m.cfg.Supports(handler); err != nil || !ok {
		msg := "can't set `spec.hostUsers: false`, runtime does not support user namespaces"
		if handler != "" {
			msg = fmt.Sprintf("can't set `spec.hostUsers: false`, RuntimeClass handler %q does not support user namespaces", handler)
		}
		if err != nil {
			return nil, fmt.Errorf("%v: %w", msg, err)
		}
		return nil, errors.New(msg)
	}
	file := path.Join(m.cfg.PodDir(pod.UID), MappingsFile)
	data, err := m.cfg.NodeFS.ReadFile(file)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	var ns mappings
	if len(data) > 0 {
		if ns, err = m.parseAndRecord(logger, pod.UID, data); err != nil {
			return nil, fmt.Errorf("user namespace: %w", err)
		}
	} else if ns, err = m.create(logger, pod.UID, file); err != nil {
		return nil, fmt.Errorf("create user namespace: %w", err)
	}
	out := &cri.UserNamespace{Mode: cri.NamespaceModePod}
	for _, u := range ns.UIDMappings {
		out.UIDs = append(out.UIDs, cri.IDMapping{HostID: u.HostID, ContainerID: u.ContainerID, Length: u.Length})
	}
	for _, g := range ns.GIDMappings {
		out.GIDs = append(out.GIDs, cri.IDMapping{HostID: g.HostID, ContainerID: g.ContainerID, Length: g.Length})
	}
	return out, nil
}

// create allocates a free range to uid and writes its mappings to file; a write that fails
// gives the range back.
func (m *Manager) create(logger klog.Logger, uid types.UID, file string) (mappings, error) {
	first, err := m.allocate(logger, uid)
	if err != nil {
		return mappings{}, err
	}
	one := []idMapping{{HostID: first, ContainerID: 0, Length: m.cfg.IDsPerPod}}
	ns := mappings{UIDMappings: one, GIDMappings: one}
	data, err := json.Marshal(ns)
	if err == nil {
		err = m.cfg.NodeFS.WriteFile(file, data, 0o644, false, 0, 0)
	}
	if err != nil {
		m.release(logger, uid)
		return mappings{}, err
	}
	return ns, nil
}

// allocate takes a free range for uid: the first free one from a random index, as
// upstream's allocation map's random scan.
func (m *Manager) allocate(logger klog.Logger, uid types.UID) (uint32, error) {
	if m.used == nil {
		m.used, m.byPod = map[int]types.UID{}, map[types.UID]int{}
	}
	start := m.rng.IntN(m.ranges)
	for i := 0; i < m.ranges; i++ {
		at := (start + i) % m.ranges
		if _, taken := m.used[at]; taken {
			continue
		}
		m.used[at], m.byPod[uid] = uid, at
		logger.V(5).Info("new pod user namespace allocation", "podUID", uid)
		return (uint32(at) + m.off) * m.cfg.IDsPerPod, nil
	}
	return 0, ErrNoRange
}

// parseAndRecord checks a pod's mappings file as upstream does (one mapping, the same for
// UIDs and GIDs, from 0, of IDsPerPod IDs at a multiple of it in the kubelet's IDs, not
// another pod's) and records its range.
func (m *Manager) parseAndRecord(logger klog.Logger, uid types.UID, data []byte) (mappings, error) {
	var ns mappings
	if err := json.Unmarshal(data, &ns); err != nil {
		return mappings{}, fmt.Errorf("invalid user namespace mappings file: %w", err)
	}
	switch {
	case len(ns.UIDMappings) != 1:
		return mappings{}, errors.New("invalid user namespace configuration: no more than one mapping allowed.")
	case len(ns.UIDMappings) != len(ns.GIDMappings):
		return mappings{}, errors.New("invalid user namespace configuration: GID and UID mappings should be identical.")
	case ns.UIDMappings[0] != ns.GIDMappings[0]:
		return mappings{}, errors.New("invalid user namespace configuration: GID and UID mapping should be identical")
	case ns.UIDMappings[0].ContainerID != 0:
		return mappings{}, errors.New("invalid user namespace configuration: UID 0 must be mapped")
	}
	from, length := ns.UIDMappings[0].HostID, ns.UIDMappings[0].Length
	n := m.cfg.IDsPerPod
	if length != n {
		return mappings{}, fmt.Errorf("wrong user namespace length %v", length)
	}
	if from%n != 0 {
		return mappings{}, fmt.Errorf("wrong user namespace offset specified %v", from)
	}
	index := int(from/n) - int(m.off)
	if index < 0 || index >= m.ranges {
		return mappings{}, fmt.Errorf("id %v is out of range", from)
	}
	if m.used == nil {
		m.used, m.byPod = map[int]types.UID{}, map[types.UID]int{}
	}
	if at, ok := m.byPod[uid]; ok {
		if at != index {
			return mappings{}, fmt.Errorf("different user namespace range already used by pod %q", uid)
		}
		return ns, nil
	}
	if _, taken := m.used[index]; taken {
		return mappings{}, fmt.Errorf("range picked for pod %q already taken", uid)
	}
	m.used[index], m.byPod[uid] = uid, index
	logger.V(5).Info("new pod user namespace allocation", "podUID", uid)
	return ns, nil
}

// Release gives back pod's range, once the pod terminated (upstream's SyncTerminatedPod),
// and removes its mappings file. A pod without one is nothing.
func (m *Manager) Release(logger klog.Logger, uid types.UID) { m.release(logger, uid) }

func (m *Manager) release(logger klog.Logger, uid types.UID) {
	at, ok := m.byPod[uid]
	if !ok {
		return
	}
	delete(m.byPod, uid)
	delete(m.used, at)
	_ = m.cfg.NodeFS.Remove(path.Join(m.cfg.PodDir(uid), MappingsFile), false)
	logger.V(5).Info("releasing pod user namespace allocation", "podUID", uid)
	if len(m.byPod) == 0 {
		m.used, m.byPod = nil, nil // a node's last user namespace pod gone: nothing kept
	}
}

// CleanupOrphans releases the ranges of the pods known says the node no longer has (neither
// a source nor the runtime: upstream's CleanupOrphanedPodUsernsAllocations, at
// housekeeping). It looks only at the pods that have a range.
func (m *Manager) CleanupOrphans(logger klog.Logger, known func(types.UID) bool) {
	for uid := range m.byPod {
		if !known(uid) {
			logger.V(5).Info("Clean up orphaned pod user namespace possible allocation", "podUID", uid)
			m.release(logger, uid)
		}
	}
}

// InUse is how many pods have a range now.
func (m *Manager) InUse() int { return len(m.byPod) }
