package kuberuntime

import (
	"context"
	"fmt"
	"hash/fnv"
	"io/fs"
	"path"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/intern"
)

// ContainerOptions is what the kubelet resolves for one container before it is created
// (upstream's kubecontainer.RunContainerOptions, from GenerateRunContainerOptions).
type ContainerOptions struct {
	// Envs is the container's environment, in order.
	Envs []cri.KeyValue
	// Mounts are its volumes and the pod's /etc/hosts, /etc/hostname and /etc/resolv.conf,
	// bound from the node's filesystem. The manager adds the termination message file.
	Mounts []cri.Mount
	// ImageMounts are its image volumes (of the ImageVolumes it was given), which the
	// runtime mounts.
	ImageMounts []cri.ImageMount
	// PodContainerDir is the node directory that holds the container's termination
	// message files (/var/lib/kubelet/pods/<uid>/containers/<name>); "" for none.
	PodContainerDir string
}

// Mode of a termination message file: the container may run as any user (upstream chmods
// it so regardless of the kubelet's umask).
const terminationMessageFileMode fs.FileMode = 0o666

// podContainerDirMode is the mode of /var/lib/kubelet/pods/<uid>/containers/<name>.
const podContainerDirMode fs.FileMode = 0o750

// generateContainerConfig is the CreateContainer request for c (upstream's
// generateContainerConfig): the kubelet's options (environment, mounts), the command and
// args with $(VAR) references expanded, the termination message file, the security
// context and the terminal settings. An error is a configuration error of the pod (the
// container waits with CreateContainerConfigError and the error as its message).
func (m *Manager) generateContainerConfig(ctx context.Context, c *v1.Container, pod *v1.Pod, restartCount int, image string, kind containerKind, podIPs []string, imageVolumes ImageVolumes) (*cri.ContainerConfig, error) {
	opts := &ContainerOptions{}
	if m.cfg.RunContainerOptions != nil {
		var err error
		if opts, err = m.cfg.RunContainerOptions(ctx, pod, c, podIPs, imageVolumes); err != nil {
			return nil, err
		}
	}
	uid, username, err := m.imageUser(ctx, image)
	if err != nil {
		return nil, err
	}
	if err := verifyRunAsNonRoot(pod, c, uid, username); err != nil {
		return nil, err
	}
	sec, err := securityContext(pod, c)
	if err != nil {
		return nil, err
	}
	command, args := expandCommandAndArgs(c, opts.Envs)
	config := &cri.ContainerConfig{
		Metadata: cri.ContainerMetadata{Name: c.Name, Attempt: uint32(restartCount)},
		// The image by name (with its default tag), as containerd reports it back in the
		// container status; imageID carries the resolved id.
		Image:  cri.ImageSpec{Image: image},
		Labels: newContainerLabels(c, pod),
		// Read only from here (the runtime's): a template's containers share equal maps.
		Annotations: intern.StringMap(newContainerAnnotations(c, pod, restartCount, kind)),
		Resources:   m.containerResources(pod, c),
		Command:     command,
		Args:        args,
		WorkingDir:  c.WorkingDir,
		Envs:        opts.Envs,
		Mounts:      m.makeMounts(ctx, pod, c, restartCount, opts),
		ImageMounts: opts.ImageMounts,
		Stdin:       c.Stdin,
		StdinOnce:   c.StdinOnce,
		TTY:         c.TTY,
		Security:    sec,
	}
	return config, nil
}

// makeMounts is the kubelet's mounts plus the termination message file, which the manager
// creates itself (as upstream's makeMounts: the file is per container instance, so it is
// made just before the container is). A file that cannot be made is logged and left out,
// as upstream. The mounts are ordered by depth (parents first), as containerd orders them
// before mounting, so a runtime can bind them in order.
func (m *Manager) makeMounts(ctx context.Context, pod *v1.Pod, c *v1.Container, restartCount int, opts *ContainerOptions) []cri.Mount {
	// Room for the termination message file: the runtime keeps this slice for the
	// container's life, so it is not left with an append's doubled capacity.
	mounts := append(make([]cri.Mount, 0, len(opts.Mounts)+1), opts.Mounts...)
	if m.cfg.NodeFS != nil && opts.PodContainerDir != "" && c.TerminationMessagePath != "" {
		hostPath, err := m.createTerminationMessageFile(pod, c, restartCount, opts.PodContainerDir)
		if err != nil {
			klog.FromContext(ctx).Error(err, "Error on creating termination-log file", "pod", klog.KObj(pod), "containerName", c.Name)
		} else {
			mounts = append(mounts, cri.Mount{ContainerPath: c.TerminationMessagePath, HostPath: hostPath})
		}
	}
	sort.SliceStable(mounts, func(i, j int) bool {
		return pathDepth(mounts[i].ContainerPath) < pathDepth(mounts[j].ContainerPath)
	})
	return mounts
}

// pathDepth is the number of components of a clean absolute path ("/" has none).
func pathDepth(p string) int {
	p = path.Clean("/" + p)
	if p == "/" {
		return 0
	}
	return strings.Count(p, "/")
}

// createTerminationMessageFile makes an empty file for the container's termination message
// in dir, named by 8 hex digits (upstream's makeUID is random; this one is derived from the
// pod, the container, the attempt and the clock, so a simulation replays the same names).
func (m *Manager) createTerminationMessageFile(pod *v1.Pod, c *v1.Container, restartCount int, dir string) (string, error) {
	nodeFS := m.cfg.NodeFS
	if err := nodeFS.MkdirAll(dir, podContainerDirMode, 0, 0); err != nil {
		return "", fmt.Errorf("create %s: %w", dir, err)
	}
	h := fnv.New32a()
	fmt.Fprintf(h, "%s/%s/%d/%d", pod.UID, c.Name, restartCount, m.clock.Now().UnixNano())
	seed := h.Sum32()
	for i := uint32(0); ; i++ {
		p := path.Join(dir, fmt.Sprintf("%08x", seed+i))
		if _, err := nodeFS.Lstat(p); err == nil {
			continue // taken by an earlier instance: the next name
		}
		if err := nodeFS.WriteFile(p, nil, terminationMessageFileMode, false, 0, 0); err != nil {
			return "", fmt.Errorf("create %s: %w", p, err)
		}
		return p, nil
	}
}

// securityContext is the container's security context over the pod's, as the kubelet's
// determineEffectiveSecurityContext: runAsUser and runAsGroup from the container, else the
// pod (nil: the image's user); readOnlyRootFilesystem and privileged from the container; the
// supplemental groups are the pod's fsGroup first, then its supplementalGroups, and the
// pod's supplementalGroupsPolicy says whether the runtime adds the image's groups. A
// policy the CRI has no value for fails with upstream's message (the container waits with
// CreateContainerConfigError); the API server refuses such a pod first.
func securityContext(pod *v1.Pod, c *v1.Container) (*cri.SecurityContext, error) {
	sc := &cri.SecurityContext{}
	if psc := pod.Spec.SecurityContext; psc != nil {
		sc.RunAsUser = copyInt64(psc.RunAsUser)
		sc.RunAsGroup = copyInt64(psc.RunAsGroup)
		if psc.FSGroup != nil {
			sc.SupplementalGroups = append(sc.SupplementalGroups, *psc.FSGroup)
		}
		sc.SupplementalGroups = append(sc.SupplementalGroups, psc.SupplementalGroups...)
		if p := psc.SupplementalGroupsPolicy; p != nil {
			switch *p {
			case v1.SupplementalGroupsPolicyMerge:
				sc.SupplementalGroupsPolicy = cri.SupplementalGroupsMerge
			case v1.SupplementalGroupsPolicyStrict:
				sc.SupplementalGroupsPolicy = cri.SupplementalGroupsStrict
			default:
				return nil, fmt.Errorf("unsupported supplementalGroupsPolicy: %s", *p)
			}
		}
	}
	if csc := c.SecurityContext; csc != nil {
		if csc.RunAsUser != nil {
			sc.RunAsUser = copyInt64(csc.RunAsUser)
		}
		if csc.RunAsGroup != nil {
			sc.RunAsGroup = copyInt64(csc.RunAsGroup)
		}
		if csc.ReadOnlyRootFilesystem != nil {
			sc.ReadonlyRootfs = *csc.ReadOnlyRootFilesystem
		}
		if csc.Privileged != nil {
			sc.Privileged = *csc.Privileged
		}
		// Upstream's AddNoNewPrivileges: only an explicit false sets no_new_privs.
		if csc.AllowPrivilegeEscalation != nil && !*csc.AllowPrivilegeEscalation {
			sc.NoNewPrivs = true
		}
	}
	sc.MaskedPaths, sc.ReadonlyPaths = procPaths(c)
	return sc, nil
}

// defaultMaskedPaths and defaultReadonlyPaths are the kubelet's (pkg/securitycontext): what
// a container's /proc and /sys hide and make read-only unless its procMount is Unmasked.
// Upstream adds /sys/devices/system/cpu/cpu<N>/thermal_throttle for each such directory on
// the node; a simulated node has none. Shared by every request: never changed.
var (
	defaultMaskedPaths = []string{
		"/proc/asound", "/proc/acpi", "/proc/interrupts", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
		"/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi", "/sys/firmware",
		"/sys/devices/virtual/powercap",
	}
	defaultReadonlyPaths = []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}
	unmaskedPaths        = []string{}
)

// procPaths are the masked and read-only paths the kubelet asks for c (upstream's
// ConvertToRuntimeMaskedPaths and ConvertToRuntimeReadonlyPaths, ProcMountType GA): none
// (empty, not nil, lists) for procMount Unmasked, which the API server allows only with
// hostUsers: false; the defaults otherwise. A privileged container gets them too: the
// runtime drops them.
func procPaths(c *v1.Container) (masked, readonly []string) {
	if csc := c.SecurityContext; csc != nil && csc.ProcMount != nil && *csc.ProcMount == v1.UnmaskedProcMount {
		return unmaskedPaths, unmaskedPaths
	}
	return defaultMaskedPaths, defaultReadonlyPaths
}

func copyInt64(p *int64) *int64 {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// imageUser is the user the image runs as, from the runtime's ImageStatus, as upstream's
// getImageUser: its uid, else its user name, else (neither set, or the image not found)
// root.
func (m *Manager) imageUser(ctx context.Context, image string) (*int64, string, error) {
	img, err := m.images.ImageStatus(ctx, cri.ImageSpec{Image: image})
	if err != nil {
		return nil, "", err
	}
	if img != nil {
		if img.Uid != nil {
			uid := *img.Uid
			return &uid, "", nil
		}
		if img.Username != "" {
			return nil, img.Username, nil
		}
	}
	return new(int64), "", nil
}

// verifyRunAsNonRoot is upstream's check of runAsNonRoot, with its messages: against an
// explicit runAsUser of 0, else against the image's user (uid, or username when the image
// names its user).
func verifyRunAsNonRoot(pod *v1.Pod, c *v1.Container, uid *int64, username string) error {
	var nonRoot *bool
	var user *int64
	if psc := pod.Spec.SecurityContext; psc != nil {
		nonRoot, user = psc.RunAsNonRoot, psc.RunAsUser
	}
	if csc := c.SecurityContext; csc != nil {
		if csc.RunAsNonRoot != nil {
			nonRoot = csc.RunAsNonRoot
		}
		if csc.RunAsUser != nil {
			user = csc.RunAsUser
		}
	}
	if nonRoot == nil || !*nonRoot {
		return nil
	}
	if user != nil {
		if *user == 0 {
			return fmt.Errorf("container's runAsUser breaks non-root policy (pod: %q, container: %s)", FormatPod(pod), c.Name)
		}
		return nil
	}
	switch {
	case uid != nil && *uid == 0:
		return fmt.Errorf("container has runAsNonRoot and image will run as root (pod: %q, container: %s)", FormatPod(pod), c.Name)
	case uid == nil && username != "":
		return fmt.Errorf("container has runAsNonRoot and image has non-numeric user (%s), cannot verify user is non-root (pod: %q, container: %s)", username, FormatPod(pod), c.Name)
	}
	return nil
}
