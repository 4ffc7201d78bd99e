package kubelet

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
	"time"
	"unsafe"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/pkg/admission"
	"github.com/minikubelet/minikubelet/pkg/events"
	"github.com/minikubelet/minikubelet/pkg/kuberuntime"
	"github.com/minikubelet/minikubelet/pkg/podworkers"
	"github.com/minikubelet/minikubelet/pkg/stats"
	"github.com/minikubelet/minikubelet/pkg/vfs"
)

// Volume plugins, by the directory their volumes live in (kubernetes.io~<plugin>).
const (
	pluginEmptyDir    = "empty-dir"
	pluginConfigMap   = "configmap"
	pluginSecret      = "secret"
	pluginDownwardAPI = "downward-api"
	pluginProjected   = "projected"
)

// The default mode of the files of configMap, secret, downwardAPI and projected volumes
// (the API's default of defaultMode).
const defaultVolumeFileMode fs.FileMode = 0o644

// emptyDirMode is an emptyDir's mode: anyone may write (upstream's perm).
const emptyDirMode fs.FileMode = 0o777

// SetVolumeOwnership's masks: what fsGroup may do with a volume's files.
const (
	rwMask   fs.FileMode = 0o660
	roMask   fs.FileMode = 0o440
	execMask fs.FileMode = 0o110
)

// mountedVolumes records the volumes set up for each pod: emptyDir, hostPath and the
// volumes the simulator does not model are set up once, the others rewritten at every sync.
type mountedVolumes struct {
	set map[types.UID]map[string]bool
	// retry is the delay before a pod whose volumes failed is tried again (mountRetry).
	retry map[types.UID]time.Duration
}

func (m *mountedVolumes) has(uid types.UID, name string) bool {
	return m.set[uid][name]
}

func (m *mountedVolumes) add(uid types.UID, name string) {
	if m.set == nil {
		m.set = map[types.UID]map[string]bool{}
	}
	if m.set[uid] == nil {
		m.set[uid] = map[string]bool{}
	}
	m.set[uid][name] = true
}

func (m *mountedVolumes) forget(uid types.UID) {
	delete(m.set, uid)
	delete(m.retry, uid)
}

// The retries of a pod whose volumes cannot be set up yet (a ConfigMap or Secret that does
// not exist yet, a token the API server did not issue in time). Upstream's syncPod waits in
// WaitForAttachAndMount (polling every 300ms, for 2m3s) while the volume manager retries the
// mount with an exponential back-off from 500ms to 2m2s (nestedpendingoperations): a
// ConfigMap created just after its pod is mounted within a second, and a thousand pods
// whose tokens an overloaded API server cannot issue back off instead of asking again every
// ten seconds. Here the sync returns and the pod is synced again after the same delays.
const (
	firstMountRetry = 500 * time.Millisecond
	maxMountRetry   = 2*time.Minute + 2*time.Second
)

// nextRetry returns the delay before the pod's next try: doubling from firstMountRetry up to
// maxMountRetry.
func (m *mountedVolumes) nextRetry(uid types.UID) time.Duration {
	if m.retry == nil {
		m.retry = map[types.UID]time.Duration{}
	}
	d := m.retry[uid]
	if d == 0 {
		d = firstMountRetry
	} else {
		d = min(2*d, maxMountRetry)
	}
	m.retry[uid] = d
	return d
}

// preparePod is what the kubelet's SyncPod does before it lets the runtime create the
// pod's containers: the pod's directory (makePodDataDirs), the files containerd would write
// for its sandbox (/etc/hostname, /etc/resolv.conf), then its volumes
// (WaitForAttachAndMount). A configMap, secret, downwardAPI or projected volume is written
// again at every sync, so that changes in the API (or in the pod's labels and annotations)
// reach it within a sync period, atomically. An error keeps the pod's containers waiting
// (ContainerCreating) until a later sync succeeds.
func (k *Kubelet) preparePod(ctx context.Context, pod *v1.Pod) error {
	if err := k.nodeFS.MkdirAll(podDir(pod.UID), podDirMode, 0, 0); err != nil {
		return fmt.Errorf("create the pod's directory %s: %w", podDir(pod.UID), err)
	}
	// The pod's cgroup, before its sandbox (upstream's EnsureExists): its limits bound
	// the pod's containers; what it is made with is what is actuated at the pod level.
	if k.podCgroups.ensure(pod) && k.alloc != nil && pod.Spec.Resources != nil {
		k.alloc.SetActuatedPod(pod.UID, pod.Spec.Resources)
	}
	if err := k.writePodNetworkFiles(pod); err != nil {
		k.recordEvent(events.PodRef(pod), v1.EventTypeWarning, "FailedCreatePodSandBox", "Failed to create pod sandbox: %v", err)
		return fmt.Errorf("generate the sandbox config of pod %q: %w", kuberuntime.FormatPod(pod), err)
	}
	if err := k.mountVolumes(ctx, pod); err != nil {
		return &podworkers.RetryAfterError{After: k.volumes.nextRetry(pod.UID), Err: err}
	}
	delete(k.volumes.retry, pod.UID)
	return nil
}

// mountVolumes sets up the pod's volumes that a container mounts (upstream skips the
// others). Each failure is a FailedMount event naming the volume, with upstream's
// "MountVolume.SetUp failed" message; the error lists the volumes not mounted.
func (k *Kubelet) mountVolumes(ctx context.Context, pod *v1.Pod) error {
	used := usedVolumes(pod)
	var failed []string
	var errs []error
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		if !used[vol.Name] {
			continue
		}
		if err := k.setUpVolume(ctx, pod, vol); err != nil {
			k.recordEvent(events.PodRef(pod), v1.EventTypeWarning, "FailedMount", "MountVolume.SetUp failed for volume %q : %v", vol.Name, err)
			klog.FromContext(ctx).V(2).Info("MountVolume.SetUp failed", "pod", klog.KObj(pod), "volume", vol.Name, "err", err)
			failed = append(failed, vol.Name)
			errs = append(errs, err)
		}
	}
	if len(failed) == 0 {
		return nil
	}
	sort.Strings(failed)
	return fmt.Errorf("unable to attach or mount volumes: unmounted volumes=%v: %w", failed, utilerrors.NewAggregate(errs))
}

// usedVolumes are the names of the volumes some container of the pod mounts.
func usedVolumes(pod *v1.Pod) map[string]bool {
	used := map[string]bool{}
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			for _, m := range list[i].VolumeMounts {
				used[m.Name] = true
			}
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		for _, m := range pod.Spec.EphemeralContainers[i].VolumeMounts {
			used[m.Name] = true
		}
	}
	return used
}

// volumePlugin is the plugin directory a volume lives in; hostPath volumes have none (the
// node's path itself is mounted). Volume types the simulator does not model (persistent
// volume claims, CSI, NFS ...) get an empty directory where their plugin would mount them.
func volumePlugin(vol *v1.Volume) string {
	switch {
	case vol.EmptyDir != nil:
		return pluginEmptyDir
	case vol.ConfigMap != nil:
		return pluginConfigMap
	case vol.Secret != nil:
		return pluginSecret
	case vol.DownwardAPI != nil:
		return pluginDownwardAPI
	case vol.Projected != nil:
		return pluginProjected
	case vol.PersistentVolumeClaim != nil, vol.CSI != nil, vol.Ephemeral != nil:
		return "csi"
	case vol.Image != nil:
		return "image" // only without the ImageVolume gate: otherwise the runtime mounts it
	case vol.NFS != nil:
		return "nfs"
	case vol.ISCSI != nil:
		return "iscsi"
	}
	return "unsupported"
}

// volumeHostPath is the node path a volume is mounted from.
func volumeHostPath(pod *v1.Pod, vol *v1.Volume) string {
	if vol.HostPath != nil {
		return path.Clean(vol.HostPath.Path)
	}
	return podVolumeDir(pod.UID, volumePlugin(vol), vol.Name)
}

// setUpVolume is one volume's SetUp.
func (k *Kubelet) setUpVolume(ctx context.Context, pod *v1.Pod, vol *v1.Volume) error {
	fsGroup := podFSGroup(pod)
	dir := volumeHostPath(pod, vol)
	switch {
	case vol.Image != nil && k.imageVolume:
		// Upstream's image plugin sets up nothing: the runtime mounts the image, which the
		// runtime manager pulls before it starts a container.
		return nil
	case vol.HostPath != nil:
		if k.volumes.has(pod.UID, vol.Name) {
			return nil
		}
		if err := checkHostPath(k.nodeFS, vol.HostPath); err != nil {
			return err
		}
	case vol.ConfigMap != nil, vol.Secret != nil, vol.DownwardAPI != nil, vol.Projected != nil:
		payload, err := k.volumePayload(ctx, pod, vol)
		if err != nil {
			return err
		}
		if !k.volumes.has(pod.UID, vol.Name) {
			// The plugins wrap an emptyDir, set up once: secret and projected ones of
			// medium Memory (a tmpfs, so a secret never touches the disk), as upstream's.
			if err := setUpEmptyDir(k.nodeFS, dir, fsGroup); err != nil {
				return err
			}
			if vol.Secret != nil || vol.Projected != nil {
				if err := k.mountTmpfs(dir, pod, nil); err != nil {
					return err
				}
			}
		}
		w := &atomicWriter{fs: k.nodeFS, targetDir: dir, now: k.clock.Now}
		wrote, err := w.write(payload)
		if err != nil {
			return err
		}
		if wrote {
			klog.FromContext(ctx).V(4).Info("Wrote the volume's payload", "pod", klog.KObj(pod), "volume", vol.Name, "path", dir)
			// These plugins' mounters are read-only: fsGroup may read, not write.
			if err := setVolumeOwnership(k.nodeFS, dir, fsGroup, true); err != nil {
				return err
			}
		}
	default: // emptyDir, and the types not modelled
		if k.volumes.has(pod.UID, vol.Name) {
			return nil
		}
		if vol.EmptyDir == nil {
			klog.FromContext(ctx).V(2).Info("Volume type not simulated, mounting an empty directory", "pod", klog.KObj(pod), "volume", vol.Name, "path", dir)
		}
		if err := setUpEmptyDir(k.nodeFS, dir, fsGroup); err != nil {
			return err
		}
		if vol.EmptyDir != nil && vol.EmptyDir.Medium == v1.StorageMediumMemory {
			// A fresh tmpfs's root is 1777: the sticky bit stays (dtrwxrwxrwx), as on a node.
			if err := k.mountTmpfs(dir, pod, vol.EmptyDir.SizeLimit); err != nil {
				return err
			}
			info, err := k.nodeFS.Stat(dir)
			if err != nil {
				return err
			}
			if err := k.nodeFS.Chmod(dir, info.Mode|fs.ModeSticky); err != nil {
				return err
			}
		}
	}
	k.volumes.add(pod.UID, vol.Name)
	return nil
}

// mountTmpfs makes dir a tmpfs of the size the kubelet mounts it with.
func (k *Kubelet) mountTmpfs(dir string, pod *v1.Pod, sizeLimit *resource.Quantity) error {
	if err := k.nodeFS.SetFSType(dir, "tmpfs"); err != nil {
		return err
	}
	return k.nodeFS.SetFSSize(dir, tmpfsSize(k.nodeInfo.Allocatable.Memory().Value(), pod, sizeLimit))
}

// tmpfsSize is the size= of a memory-backed emptyDir, as upstream's
// calculateEmptyDirMemorySize: the node's allocatable memory, or the pod's memory limit
// when it has one below that, or the volume's sizeLimit when it is below both.
func tmpfsSize(allocatable int64, pod *v1.Pod, sizeLimit *resource.Quantity) int64 {
	size := allocatable
	if l, ok := podMemoryLimit(pod); ok && l > 0 && l <= size {
		size = l
	}
	if sizeLimit != nil && sizeLimit.Value() > 0 && sizeLimit.Value() <= size {
		size = sizeLimit.Value()
	}
	return size
}

// podMemoryLimit is the memory limit of the pod's cgroup, as upstream's
// ResourceConfigForPod: the pod-level limit when spec.resources sets one; else, when every
// container has a memory limit, their aggregate (admission.PodLimits) plus the overhead;
// else none.
func podMemoryLimit(pod *v1.Pod) (int64, bool) {
	if r := pod.Spec.Resources; r != nil {
		if q, ok := r.Limits[v1.ResourceMemory]; ok {
			return q.Value(), true
		}
	}
	for _, cs := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			if _, ok := cs[i].Resources.Limits[v1.ResourceMemory]; !ok {
				return 0, false
			}
		}
	}
	total := admission.PodLimits(pod)[v1.ResourceMemory]
	if q, ok := pod.Spec.Overhead[v1.ResourceMemory]; ok {
		total.Add(q)
	}
	return total.Value(), true
}

// podFSGroup is the pod's securityContext.fsGroup.
func podFSGroup(pod *v1.Pod) *int64 {
	if pod.Spec.SecurityContext == nil {
		return nil
	}
	return pod.Spec.SecurityContext.FSGroup
}

// setUpEmptyDir makes an emptyDir: mode 0777 (whatever the parents' umask gave it) and, with
// an fsGroup, owned by that group with the setgid bit so its files inherit the group.
func setUpEmptyDir(nodeFS *vfs.View, dir string, fsGroup *int64) error {
	if err := nodeFS.MkdirAll(dir, 0o755, 0, 0); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	if err := nodeFS.Chmod(dir, emptyDirMode); err != nil {
		return fmt.Errorf("chmod %s: %w", dir, err)
	}
	return setVolumeOwnership(nodeFS, dir, fsGroup, false)
}

// setVolumeOwnership is upstream's SetVolumeOwnership: every file and directory of the volume
// goes to group fsGroup, with group read (and write unless readOnly) added, and directories
// also get group execute and the setgid bit. Symbolic links are left alone. Nothing
// happens without an fsGroup.
func setVolumeOwnership(nodeFS *vfs.View, dir string, fsGroup *int64, readOnly bool) error {
	if fsGroup == nil {
		return nil
	}
	mask := rwMask
	if readOnly {
		mask = roMask
	}
	change := func(p string, info vfs.Info) error {
		if info.Mode&fs.ModeSymlink != 0 {
			return nil
		}
		if err := nodeFS.Chown(p, -1, *fsGroup); err != nil {
			return fmt.Errorf("chown %s: %w", p, err)
		}
		m := mask
		if info.Mode.IsDir() {
			m |= fs.ModeSetgid | execMask
		}
		if err := nodeFS.Chmod(p, info.Mode|m); err != nil {
			return fmt.Errorf("chmod %s: %w", p, err)
		}
		return nil
	}
	info, err := nodeFS.Lstat(dir)
	if err != nil {
		return err
	}
	if err := change(dir, info); err != nil {
		return err
	}
	return walkTree(nodeFS, dir, change)
}

// walkTree calls fn for everything under dir (not dir itself), parents first; symbolic
// links are not followed.
func walkTree(nodeFS *vfs.View, dir string, fn func(p string, info vfs.Info) error) error {
	entries, err := nodeFS.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		p := path.Join(dir, e.Name())
		info := e.Stat()
		if err := fn(p, info); err != nil {
			return err
		}
		if info.Mode.IsDir() {
			if err := walkTree(nodeFS, p, fn); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkHostPath is the hostPath plugin's SetUp: no "..", then the type check (upstream's
// checkType): DirectoryOrCreate and FileOrCreate make what is missing (0755 directories,
// an empty 0644 file), Directory and File must find one; sockets and devices never exist
// on the simulated node.
func checkHostPath(nodeFS *vfs.View, src *v1.HostPathVolumeSource) error {
	p := src.Path
	for _, item := range strings.Split(p, "/") {
		if item == ".." {
			return fmt.Errorf("invalid HostPath `%s`: must not contain '..'", p)
		}
	}
	if src.Type == nil || *src.Type == v1.HostPathUnset {
		return nil
	}
	info, statErr := nodeFS.Stat(p)
	exists := statErr == nil
	switch t := *src.Type; t {
	case v1.HostPathDirectoryOrCreate, v1.HostPathDirectory:
		if t == v1.HostPathDirectoryOrCreate && !exists {
			return nodeFS.MkdirAll(p, 0o755, 0, 0)
		}
		if !exists || !info.Mode.IsDir() {
			return fmt.Errorf("hostPath type check failed: %s is not a directory", p)
		}
	case v1.HostPathFileOrCreate, v1.HostPathFile:
		if t == v1.HostPathFileOrCreate && !exists {
			// As open(2) with O_CREATE: the parent directory must exist.
			return nodeFS.WriteFile(p, nil, 0o644, true, 0, 0)
		}
		if !exists || !info.Mode.IsRegular() {
			return fmt.Errorf("hostPath type check failed: %s is not a file", p)
		}
	case v1.HostPathSocket:
		return fmt.Errorf("hostPath type check failed: %s is not a socket file", p)
	case v1.HostPathCharDev:
		return fmt.Errorf("hostPath type check failed: %s is not a character device", p)
	case v1.HostPathBlockDev:
		return fmt.Errorf("hostPath type check failed: %s is not a block device", p)
	default:
		return fmt.Errorf("%s is an invalid volume type", t)
	}
	return nil
}

// volumePayload is the content of a configMap, secret, downwardAPI or projected volume.
func (k *Kubelet) volumePayload(ctx context.Context, pod *v1.Pod, vol *v1.Volume) (map[string]fileProjection, error) {
	switch {
	case vol.ConfigMap != nil:
		src := vol.ConfigMap
		optional := isTrue(src.Optional)
		cm, err := k.objects.ConfigMap(ctx, pod.Namespace, src.Name)
		if err != nil {
			if !(apierrors.IsNotFound(err) && optional) {
				return nil, err
			}
			cm = &v1.ConfigMap{}
		}
		return configMapPayload(cm, src.Items, fileMode(src.DefaultMode), optional)
	case vol.Secret != nil:
		src := vol.Secret
		optional := isTrue(src.Optional)
		s, err := k.objects.Secret(ctx, pod.Namespace, src.SecretName)
		if err != nil {
			if !(apierrors.IsNotFound(err) && optional) {
				return nil, err
			}
			s = &v1.Secret{}
		}
		return secretPayload(s, src.Items, fileMode(src.DefaultMode), optional)
	case vol.DownwardAPI != nil:
		return downwardAPIPayload(pod, vol.DownwardAPI.Items, fileMode(vol.DownwardAPI.DefaultMode), k.nodeInfo.Allocatable)
	case vol.Projected != nil:
		return k.projectedPayload(ctx, pod, vol.Projected)
	}
	return nil, fmt.Errorf("volume %q has no content to write", vol.Name)
}

// fileMode is a defaultMode or an item's mode, 0644 when unset.
func fileMode(m *int32) fs.FileMode {
	if m == nil {
		return defaultVolumeFileMode
	}
	return fs.FileMode(*m) & fs.ModePerm
}

// stringBytes is s's bytes without a copy, for a payload: nothing writes a payload's data
// (the atomic writer compares it, and the node's filesystem holds it as it is: a file of
// the volume is the object's bytes, WriteFileShared). A pod's volumes are
// set up again at every sync, as the kubelet's volume manager remounts them, and a copy of
// each value (the 1.3 KB ca.crt and the token of every pod) was the largest part of what a
// node allocates in its steady state.
func stringBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// configMapPayload is upstream's configmap.MakePayload: every key (data and binaryData)
// under its name, or only the items' keys at their paths (a missing key is an error unless
// the volume is optional), each with the item's mode or the default.
func configMapPayload(cm *v1.ConfigMap, items []v1.KeyToPath, defaultMode fs.FileMode, optional bool) (map[string]fileProjection, error) {
	payload := make(map[string]fileProjection, len(cm.Data)+len(cm.BinaryData))
	if len(items) == 0 {
		for name, data := range cm.Data {
			payload[name] = fileProjection{data: stringBytes(data), mode: defaultMode}
		}
		for name, data := range cm.BinaryData {
			payload[name] = fileProjection{data: data, mode: defaultMode}
		}
		return payload, nil
	}
	for _, it := range items {
		var data []byte
		if s, ok := cm.Data[it.Key]; ok {
			data = stringBytes(s)
		} else if b, ok := cm.BinaryData[it.Key]; ok {
			data = b
		} else {
			if optional {
				continue
			}
			return nil, fmt.Errorf("configmap references non-existent config key: %s", it.Key)
		}
		mode := defaultMode
		if it.Mode != nil {
			mode = fileMode(it.Mode)
		}
		payload[it.Path] = fileProjection{data: data, mode: mode}
	}
	return payload, nil
}

// secretPayload is upstream's secret.MakePayload.
func secretPayload(s *v1.Secret, items []v1.KeyToPath, defaultMode fs.FileMode, optional bool) (map[string]fileProjection, error) {
	payload := make(map[string]fileProjection, len(s.Data))
	if len(items) == 0 {
		for name, data := range s.Data {
			payload[name] = fileProjection{data: data, mode: defaultMode}
		}
		return payload, nil
	}
	for _, it := range items {
		data, ok := s.Data[it.Key]
		if !ok {
			if optional {
				continue
			}
			return nil, fmt.Errorf("references non-existent secret key: %s", it.Key)
		}
		mode := defaultMode
		if it.Mode != nil {
			mode = fileMode(it.Mode)
		}
		payload[it.Path] = fileProjection{data: data, mode: mode}
	}
	return payload, nil
}

// downwardAPIPayload is upstream's downwardapi.CollectData: each item's field (metadata.*,
// labels and annotations in the key="value" lines format) or resource (a missing limit
// being the node's allocatable), at its path. Fields that cannot be resolved are errors,
// all of them reported.
func downwardAPIPayload(pod *v1.Pod, items []v1.DownwardAPIVolumeFile, defaultMode fs.FileMode, allocatable v1.ResourceList) (map[string]fileProjection, error) {
	payload := make(map[string]fileProjection, len(items))
	var errs []error
	for _, it := range items {
		f := fileProjection{mode: defaultMode}
		if it.Mode != nil {
			f.mode = fileMode(it.Mode)
		}
		switch {
		case it.FieldRef != nil:
			v, err := fieldPathValue(pod, it.FieldRef.FieldPath)
			if err != nil {
				errs = append(errs, err)
			}
			f.data = []byte(v)
		case it.ResourceFieldRef != nil:
			v, err := resourceFieldValue(it.ResourceFieldRef, pod, nil, allocatable)
			if err != nil {
				errs = append(errs, err)
			}
			f.data = []byte(v)
		}
		payload[path.Clean(it.Path)] = f
	}
	return payload, utilerrors.NewAggregate(errs)
}

// projectedPayload is upstream's projected collectData: the sources' files together. A
// service account token is requested for the pod (mode 0600 when the pod has an fsGroup or
// its containers share a user, who then owns it). ClusterTrustBundle and PodCertificate
// sources are left out: not modelled, though kubelet v1.37 writes both
// (ClusterTrustBundleProjection and PodCertificateRequest are GA there).
func (k *Kubelet) projectedPayload(ctx context.Context, pod *v1.Pod, src *v1.ProjectedVolumeSource) (map[string]fileProjection, error) {
	defaultMode := fileMode(src.DefaultMode)
	payload := map[string]fileProjection{}
	var errs []error
	merge := func(p map[string]fileProjection) {
		for name, f := range p {
			payload[name] = f
		}
	}
	for _, s := range src.Sources {
		switch {
		case s.Secret != nil:
			optional := isTrue(s.Secret.Optional)
			secret, err := k.objects.Secret(ctx, pod.Namespace, s.Secret.Name)
			if err != nil {
				if !(apierrors.IsNotFound(err) && optional) {
					errs = append(errs, err)
					continue
				}
				secret = &v1.Secret{}
			}
			p, err := secretPayload(secret, s.Secret.Items, defaultMode, optional)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			merge(p)
		case s.ConfigMap != nil:
			optional := isTrue(s.ConfigMap.Optional)
			cm, err := k.objects.ConfigMap(ctx, pod.Namespace, s.ConfigMap.Name)
			if err != nil {
				if !(apierrors.IsNotFound(err) && optional) {
					errs = append(errs, err)
					continue
				}
				cm = &v1.ConfigMap{}
			}
			p, err := configMapPayload(cm, s.ConfigMap.Items, defaultMode, optional)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			merge(p)
		case s.DownwardAPI != nil:
			p, err := downwardAPIPayload(pod, s.DownwardAPI.Items, defaultMode, k.nodeInfo.Allocatable)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			merge(p)
		case s.ServiceAccountToken != nil:
			fsUser := fsUserOf(pod)
			mode := defaultMode
			if fsUser != nil || podFSGroup(pod) != nil {
				// With an fsGroup, setVolumeOwnership makes it 0640.
				mode = 0o600
			}
			token, err := k.objects.ServiceAccountToken(ctx, pod, s.ServiceAccountToken)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			payload[s.ServiceAccountToken.Path] = fileProjection{data: stringBytes(token), mode: mode, fsUser: fsUser}
		}
	}
	return payload, utilerrors.NewAggregate(errs)
}

// fsUserOf is upstream's FsUserFrom: the user every init and app container runs as, when
// they all set the same one (else nil).
func fsUserOf(pod *v1.Pod) *int64 {
	var user *int64
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			u := effectiveRunAsUser(pod, &list[i])
			if u == nil || (user != nil && *user != *u) {
				return nil
			}
			user = u
		}
	}
	return user
}

func effectiveRunAsUser(pod *v1.Pod, c *v1.Container) *int64 {
	if c.SecurityContext != nil && c.SecurityContext.RunAsUser != nil {
		return c.SecurityContext.RunAsUser
	}
	if pod.Spec.SecurityContext != nil {
		return pod.Spec.SecurityContext.RunAsUser
	}
	return nil
}

// unmountVolumes tears the pod's volumes down once it is terminated (its containers are
// gone): the pod's volumes directory goes, with every emptyDir's data, and its tokens are
// forgotten. hostPath volumes are the node's and stay.
func (k *Kubelet) unmountVolumes(ctx context.Context, uid types.UID) {
	k.volumes.forget(uid)
	k.objects.forgetPodTokens(uid)
	if err := k.nodeFS.Remove(podVolumesDir(uid), true); err != nil && !errors.Is(err, fs.ErrNotExist) {
		klog.FromContext(ctx).Error(err, "Failed to remove the pod's volumes", "podUID", uid)
	}
}

// cleanupOrphanedPodDirs removes the directories of pods the kubelet no longer has
// (upstream's cleanupOrphanedPodDirs, from housekeeping): keep says which pods stay.
func (k *Kubelet) cleanupOrphanedPodDirs(ctx context.Context, keep func(types.UID) bool) {
	// Only the orphans are listed: none, mostly, among 10,000 pods every housekeeping.
	names, err := k.nodeFS.SelectDirNames(podsDir, func(name string) bool { return !keep(types.UID(name)) })
	if err != nil {
		return // no pod ever had a directory
	}
	for _, name := range names {
		uid := types.UID(name)
		klog.FromContext(ctx).V(3).Info("Orphaned pod found, removing", "podUID", uid)
		k.volumes.forget(uid)
		if k.runtimeMgr != nil {
			k.runtimeMgr.ForgetTerminationMessages(uid)
		}
		if err := k.nodeFS.Remove(podDir(uid), true); err != nil && !errors.Is(err, fs.ErrNotExist) {
			klog.FromContext(ctx).Error(err, "Failed to remove orphaned pod dir", "podUID", uid)
		}
	}
}

// volumeUsage is what each emptyDir of pod holds on the node's filesystem now (the stats'
// volume usage, what the eviction manager holds against a sizeLimit): a walk of its
// directory, no content read. A volume not set up yet is left out.
func (k *Kubelet) volumeUsage(pod *v1.Pod) []stats.VolumeUsage {
	var out []stats.VolumeUsage
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		if vol.EmptyDir == nil {
			continue
		}
		n, err := k.nodeFS.DirBytes(volumeHostPath(pod, vol))
		if err != nil {
			continue
		}
		out = append(out, stats.VolumeUsage{Name: vol.Name, Bytes: n, Memory: vol.EmptyDir.Medium == v1.StorageMediumMemory})
	}
	return out
}
