package kubelet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/pkg/container"
	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/kuberuntime"
	"github.com/minikubelet/minikubelet/pkg/vfs"
)

// Paths in the container the kubelet and the runtime provide.
const (
	etcHostsPath    = "/etc/hosts"
	etcHostnamePath = "/etc/hostname"
	resolvConfPath  = "/etc/resolv.conf"
)

// Headers of the /etc/hosts the kubelet writes.
const (
	managedHostsHeader                = "# Kubernetes-managed hosts file.\n"
	managedHostsHeaderWithHostNetwork = "# Kubernetes-managed hosts file (host network).\n"
)

// podHostFileMode is the mode of etc-hosts, hostname and resolv.conf.
const podHostFileMode fs.FileMode = 0o644

// runContainerOptions is the kubelet's GenerateRunContainerOptions (kuberuntime's
// RunContainerOptions): the container's environment, its mounts (makeMounts, plus the
// /etc/hostname and /etc/resolv.conf containerd would mount), its image volumes (those of
// imageVolumes it mounts) and the directory of its termination message files. Errors name
// the field and value at fault; the container waits with CreateContainerConfigError.
func (k *Kubelet) runContainerOptions(ctx context.Context, pod *v1.Pod, c *v1.Container, podIPs []string, imageVolumes kuberuntime.ImageVolumes) (*kuberuntime.ContainerOptions, error) {
	envs, err := k.makeEnvironmentVariables(ctx, pod, c, podIPs)
	if err != nil {
		return nil, err
	}
	mounts, images, err := k.makeMounts(pod, c, envs, k.podIPsFor(pod, podIPs), imageVolumes)
	if err != nil {
		return nil, err
	}
	opts := &kuberuntime.ContainerOptions{Envs: envs, Mounts: mounts, ImageMounts: images}
	if c.TerminationMessagePath != "" {
		opts.PodContainerDir = podContainerDir(pod.UID, c.Name)
	}
	return opts, nil
}

// makeMounts is the kubelet's makeMounts: each volumeMount from its volume's directory (a
// subPath inside it, made when missing; read-only when asked, and always for configMap,
// secret, downwardAPI and projected volumes) or, for an image volume of imageVolumes, from
// its image, which the runtime mounts read-only (a subPath inside it the runtime checks:
// the kubelet only refuses an absolute one or one with ".."), then /etc/hosts from the
// pod's etc-hosts, written now with the pod's IPs (unless the container mounts something
// there itself, or the pod has no IP yet), then the pod's /etc/hostname and
// /etc/resolv.conf as containerd mounts them (read-only with a read-only root filesystem).
func (k *Kubelet) makeMounts(pod *v1.Pod, c *v1.Container, envs []cri.KeyValue, podIPs []string, imageVolumes kuberuntime.ImageVolumes) ([]cri.Mount, []cri.ImageMount, error) {
	volumes := make(map[string]*v1.Volume, len(pod.Spec.Volumes))
	for i := range pod.Spec.Volumes {
		volumes[pod.Spec.Volumes[i].Name] = &pod.Spec.Volumes[i]
	}
	mounted := map[string]bool{}
	mounts := make([]cri.Mount, 0, len(c.VolumeMounts)+3)
	var images []cri.ImageMount
	for _, m := range c.VolumeMounts {
		vol, ok := volumes[m.Name]
		if !ok {
			return nil, nil, fmt.Errorf("cannot find volume %q to mount into container %q", m.Name, c.Name)
		}
		subPath := m.SubPath
		if m.SubPathExpr != "" {
			var err error
			if subPath, err = expandSubPathExpr(m.SubPathExpr, envs); err != nil {
				return nil, nil, err
			}
		}
		if err := checkSubPath(subPath); err != nil {
			return nil, nil, err
		}
		containerPath := m.MountPath
		if !path.IsAbs(containerPath) {
			containerPath = "/" + containerPath
		}
		mounted[path.Clean(containerPath)] = true
		if image, ok := imageVolumes[m.Name]; ok {
			images = append(images, cri.ImageMount{ContainerPath: containerPath, Image: image, SubPath: subPath})
			continue
		}
		hostPath := volumeHostPath(pod, vol)
		if subPath != "" {
			var err error
			if hostPath, err = k.prepareSubPath(hostPath, subPath, m.Name, c.Name); err != nil {
				return nil, nil, err
			}
		}
		mounts = append(mounts, cri.Mount{ContainerPath: containerPath, HostPath: hostPath, Readonly: m.ReadOnly || mustMountReadOnly(vol)})
	}
	if !mounted[etcHostsPath] && (len(podIPs) > 0 || pod.Spec.HostNetwork) {
		p, err := k.writeEtcHosts(pod, podIPs)
		if err != nil {
			return nil, nil, err
		}
		mounts = append(mounts, cri.Mount{ContainerPath: etcHostsPath, HostPath: p})
	}
	ro := readOnlyRootFilesystem(c)
	files := k.podFiles(pod.UID)
	for _, f := range []struct{ containerPath, hostPath string }{
		{etcHostnamePath, files.hostname},
		{resolvConfPath, files.resolv},
	} {
		if mounted[f.containerPath] {
			continue
		}
		if _, err := k.nodeFS.Stat(f.hostPath); err != nil {
			continue // the pod's sync has not written it (a pod without a sync, in tests)
		}
		mounts = append(mounts, cri.Mount{ContainerPath: f.containerPath, HostPath: f.hostPath, Readonly: ro})
	}
	return mounts, images, nil
}

// expandSubPathExpr is upstream's ExpandContainerVolumeMounts: subPathExpr with $(VAR)
// references to the container's environment, every one of which must be set.
func expandSubPathExpr(expr string, envs []cri.KeyValue) (string, error) {
	lookup := kuberuntime.EnvLookup(envs)
	var missing []string
	out := kuberuntime.Expand(expr, func(name string) (string, bool) {
		v, ok := lookup(name)
		if !ok || v == "" {
			missing = append(missing, name)
		}
		return v, true
	})
	if len(missing) > 0 {
		sort.Strings(missing)
		return "", fmt.Errorf("missing value for %s", strings.Join(omitDuplicates(missing), ", "))
	}
	return out, nil
}

// checkSubPath refuses a volumeMount's subPath (or expanded subPathExpr) that is absolute or
// goes up (".."), with upstream's messages, whatever the volume.
func checkSubPath(subPath string) error {
	if subPath == "" {
		return nil
	}
	if path.IsAbs(subPath) {
		return fmt.Errorf("error SubPath `%s` must not be an absolute path", subPath)
	}
	for _, item := range strings.Split(subPath, "/") {
		if item == ".." {
			return fmt.Errorf("unable to provision SubPath `%s`: must not contain '..'", subPath)
		}
	}
	return nil
}

// prepareSubPath returns the node path to bind for a volumeMount's subPath (checkSubPath
// passed it): made as a directory with the volume's mode when missing, it must stay inside
// the volume once its symbolic links are followed (else upstream's opaque message: the
// details would tell about the node).
func (k *Kubelet) prepareSubPath(volumePath, subPath, volumeName, containerName string) (string, error) {
	hostPath := path.Join(volumePath, subPath)
	if _, err := k.nodeFS.Stat(hostPath); errors.Is(err, fs.ErrNotExist) {
		// The volume's mode with its setgid and sticky bits (a tmpfs's root is 1777, an
		// fsGroup adds setgid): upstream's SafeMakeDir chmods the directory it made to
		// all of them, past the umask.
		mode := fs.FileMode(0o755)
		if info, err := k.nodeFS.Stat(volumePath); err == nil {
			mode = info.Mode & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
		}
		err := k.nodeFS.MkdirAll(hostPath, mode, 0, 0)
		if err == nil {
			err = k.nodeFS.Chmod(hostPath, mode)
		}
		if err != nil {
			klog.ErrorS(err, "Failed to create subPath directory for volumeMount of the container", "containerName", containerName, "volumeMountName", volumeName)
			return "", fmt.Errorf("failed to create subPath directory for volumeMount %q of container %q", volumeName, containerName)
		}
	}
	real, err := evalSymlinks(k.nodeFS, hostPath)
	if err == nil {
		var base string
		if base, err = evalSymlinks(k.nodeFS, volumePath); err == nil && real != base && !strings.HasPrefix(real, strings.TrimSuffix(base, "/")+"/") {
			err = fmt.Errorf("subpath %q not within volume path %q", real, base)
		}
	}
	if err != nil {
		klog.ErrorS(err, "Failed to prepare subPath for volumeMount of the container", "containerName", containerName, "volumeMountName", volumeName)
		return "", fmt.Errorf("failed to prepare subPath for volumeMount %q of container %q", volumeName, containerName)
	}
	return hostPath, nil
}

// evalSymlinks is p with every symbolic link on the way followed (filepath.EvalSymlinks).
func evalSymlinks(nodeFS *vfs.View, p string) (string, error) {
	const maxLinks = 40
	pending := strings.Split(p, "/")
	cur := "/"
	for links := 0; len(pending) > 0; {
		name := pending[0]
		pending = pending[1:]
		switch name {
		case "", ".":
			continue
		case "..":
			cur = path.Dir(cur)
			continue
		}
		next := path.Join(cur, name)
		info, err := nodeFS.Lstat(next)
		if err != nil {
			return "", err
		}
		if info.Mode&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		if links++; links > maxLinks {
			return "", vfs.ELOOP
		}
		// A relative target is read from the link's directory, cur.
		if path.IsAbs(info.Target) {
			cur = "/"
		}
		pending = append(strings.Split(info.Target, "/"), pending...)
	}
	return cur, nil
}

// mustMountReadOnly: the plugins whose volumes are always mounted read-only (their
// attributes say ReadOnly since the kubelet's atomic writer owns their content).
func mustMountReadOnly(vol *v1.Volume) bool {
	return vol.ConfigMap != nil || vol.Secret != nil || vol.DownwardAPI != nil || vol.Projected != nil
}

// readOnlyRootFilesystem is the container's securityContext.readOnlyRootFilesystem.
func readOnlyRootFilesystem(c *v1.Container) bool {
	return c.SecurityContext != nil && c.SecurityContext.ReadOnlyRootFilesystem != nil && *c.SecurityContext.ReadOnlyRootFilesystem
}

// podHostnameAndDomain is the pod's hostname (container.PodHostname) and domain
// (<subdomain>.<ns>.svc.<clusterDomain> with a subdomain, none with a hostnameOverride), as
// the kubelet's GeneratePodHostNameAndDomain.
func (k *Kubelet) podHostnameAndDomain(pod *v1.Pod) (string, string) {
	hostname := container.PodHostname(pod)
	domain := ""
	if pod.Spec.Subdomain != "" && pod.Spec.HostnameOverride == nil {
		clusterDomain := ""
		if k.dns != nil {
			clusterDomain = k.dns.clusterDomain
		}
		domain = fmt.Sprintf("%s.%s.svc.%s", pod.Spec.Subdomain, pod.Namespace, clusterDomain)
	}
	return hostname, domain
}

// writeEtcHosts writes the pod's etc-hosts (upstream's ensureHostsFile) and returns its
// path: on the host network, the node's /etc/hosts; otherwise the managed file: localhost
// entries and the pod's IPs with its hostname (and FQDN with a subdomain); then the
// hostAliases.
func (k *Kubelet) writeEtcHosts(pod *v1.Pod, podIPs []string) (string, error) {
	var content []byte
	if pod.Spec.HostNetwork {
		node, err := k.nodeFS.ReadFile(nodeHostsPath)
		if err != nil {
			return "", fmt.Errorf("read the node's %s: %w", nodeHostsPath, err)
		}
		var b bytes.Buffer
		b.WriteString(managedHostsHeaderWithHostNetwork)
		b.Write(node)
		b.Write(hostAliasEntries(pod.Spec.HostAliases))
		content = b.Bytes()
	} else {
		hostname, domain := k.podHostnameAndDomain(pod)
		content = managedHostsFileContent(podIPs, hostname, domain, pod.Spec.HostAliases)
	}
	p := k.podFiles(pod.UID).hosts
	if err := writeNodeFile(k.nodeFS, p, content, podHostFileMode); err != nil {
		return "", fmt.Errorf("write %s: %w", p, err)
	}
	return p, nil
}

// managedHostsFileContent is the /etc/hosts of a pod off the host network.
func managedHostsFileContent(podIPs []string, hostname, domain string, aliases []v1.HostAlias) []byte {
	var b bytes.Buffer
	b.WriteString(managedHostsHeader)
	b.WriteString("127.0.0.1\tlocalhost\n")
	b.WriteString("::1\tlocalhost ip6-localhost ip6-loopback\n")
	b.WriteString("fe00::0\tip6-localnet\n")
	b.WriteString("fe00::0\tip6-mcastprefix\n")
	b.WriteString("fe00::1\tip6-allnodes\n")
	b.WriteString("fe00::2\tip6-allrouters\n")
	for _, ip := range podIPs {
		if domain != "" {
			fmt.Fprintf(&b, "%s\t%s.%s\t%s\n", ip, hostname, domain, hostname)
		} else {
			fmt.Fprintf(&b, "%s\t%s\n", ip, hostname)
		}
	}
	b.Write(hostAliasEntries(aliases))
	return b.Bytes()
}

// hostAliasEntries is the hostAliases block: a blank line, a comment, then one line per IP
// with its names.
func hostAliasEntries(aliases []v1.HostAlias) []byte {
	if len(aliases) == 0 {
		return nil
	}
	var b bytes.Buffer
	b.WriteString("\n# Entries added by HostAliases.\n")
	for _, a := range aliases {
		fmt.Fprintf(&b, "%s\t%s\n", a.IP, strings.Join(a.Hostnames, "\t"))
	}
	return b.Bytes()
}

// writePodNetworkFiles writes the pod's hostname and resolv.conf files, which containerd
// would write when it creates the sandbox, unless they exist: a pod's DNS settings and name
// do not change. The hostname is the node's on the host network; with setHostnameAsFQDN
// it is the FQDN.
func (k *Kubelet) writePodNetworkFiles(pod *v1.Pod) error {
	files := k.podFiles(pod.UID)
	resolv := files.resolv
	if _, err := k.nodeFS.Lstat(resolv); err != nil {
		cfg, err := k.dns.podDNS(k.nodeFS, pod, k.events)
		if err != nil {
			return err
		}
		if err := writeNodeFile(k.nodeFS, resolv, cfg.resolvConf(), podHostFileMode); err != nil {
			return fmt.Errorf("write %s: %w", resolv, err)
		}
	}
	name := files.hostname
	if _, err := k.nodeFS.Lstat(name); err != nil {
		hostname := k.nodeName
		if !pod.Spec.HostNetwork {
			var domain string
			hostname, domain = k.podHostnameAndDomain(pod)
			if pod.Spec.SetHostnameAsFQDN != nil && *pod.Spec.SetHostnameAsFQDN && domain != "" {
				hostname = hostname + "." + domain
			}
		}
		if err := writeNodeFile(k.nodeFS, name, []byte(hostname+"\n"), podHostFileMode); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
	}
	return nil
}
