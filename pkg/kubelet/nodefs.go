package kubelet

import (
	"errors"
	"fmt"
	"io/fs"
	"path"

	"k8s.io/apimachinery/pkg/types"

	"github.com/minikubelet/minikubelet/pkg/vfs"
)

// Where the kubelet keeps pods' files on the node's filesystem: the layout of a real
// kubelet's root directory (--root-dir, default /var/lib/kubelet), so that a container's
// mounts name the same host paths as on a real node.
const (
	kubeletRootDir = "/var/lib/kubelet"
	podsDir        = kubeletRootDir + "/pods"
	// The node's own files a pod may get: the host network's /etc/hosts, the resolver
	// configuration of dnsPolicy Default (kubeletConfiguration.resolvConf) and its name.
	nodeHostsPath    = "/etc/hosts"
	nodeResolvPath   = "/etc/resolv.conf"
	nodeHostnamePath = "/etc/hostname"
)

// Modes of the kubelet's directories (upstream's makePodDataDirs: 0750).
const podDirMode fs.FileMode = 0o750

// podDir is /var/lib/kubelet/pods/<uid>.
func podDir(uid types.UID) string { return podsDir + "/" + string(uid) }

// podVolumesDir holds the pod's volumes, one directory per plugin (kubernetes.io~<plugin>).
func podVolumesDir(uid types.UID) string { return podDir(uid) + "/volumes" }

// podVolumeDir is where a volume of the plugin is set up.
func podVolumeDir(uid types.UID, plugin, volume string) string {
	return podVolumesDir(uid) + "/kubernetes.io~" + plugin + "/" + volume
}

// podContainerDir holds a container's termination message files, one per instance.
func podContainerDir(uid types.UID, container string) string {
	return podDir(uid) + "/containers/" + container
}

// podEtcHostsPath is the pod's /etc/hosts (upstream's getEtcHostsPath).
func podEtcHostsPath(uid types.UID) string { return podDir(uid) + "/etc-hosts" }

// podResolvConfPath and podHostnamePath are the pod's /etc/resolv.conf and /etc/hostname.
// On a real node containerd writes them into its sandbox directory
// (/var/lib/containerd/io.containerd.grpc.v1.cri/sandboxes/<id>/) from the DNS config and
// hostname of the PodSandboxConfig, and mounts them into each container; the simulator's
// CRI carries no DNS config, so the kubelet writes them beside etc-hosts and mounts them
// itself, the way containerd does (read-only with a read-only root filesystem).
func podResolvConfPath(uid types.UID) string { return podDir(uid) + "/resolv.conf" }
func podHostnamePath(uid types.UID) string   { return podDir(uid) + "/hostname" }

// podFilePaths are the pod's etc-hosts, hostname and resolv.conf paths.
type podFilePaths struct {
	uid                     types.UID
	hosts, hostname, resolv string
}

// podFiles returns the pod's file paths, the same strings for each of its containers: every
// container's mounts keep them for its life, and at 10,000 pods a copy per container was
// 2.4 MB. The pod's containers are created one after the other, so the last pod's paths
// are the ones asked for. The node's owner is the one caller.
func (k *Kubelet) podFiles(uid types.UID) podFilePaths {
	if k.lastPodFiles.uid != uid {
		k.lastPodFiles = podFilePaths{uid: uid, hosts: podEtcHostsPath(uid), hostname: podHostnamePath(uid), resolv: podResolvConfPath(uid)}
	}
	return k.lastPodFiles
}

// seedNodeFiles gives a fresh node filesystem the node's own /etc files (a real node's come
// with its operating system): /etc/hostname, an /etc/hosts naming the node, and an
// /etc/resolv.conf pointing at a resolver outside the cluster. Files already there (a
// filesystem shared with the runtime, or set up by a test) are kept.
func seedNodeFiles(nodeFS *vfs.View, nodeName, nodeIP string) error {
	if err := nodeFS.MkdirAll("/etc", 0o755, 0, 0); err != nil {
		return fmt.Errorf("create /etc on the node's filesystem: %w", err)
	}
	// The directories a Linux node has that pods' hostPath volumes use: /tmp is 1777, as
	// on every Linux machine (a hostPath of /tmp shows dtrwxrwxrwx in the container).
	for _, d := range []struct {
		path string
		mode fs.FileMode
	}{{"/tmp", fs.ModeSticky | 0o777}, {"/var/log", 0o755}, {"/var/lib", 0o755}, {"/run", 0o755}} {
		if _, err := nodeFS.Stat(d.path); err == nil {
			continue
		}
		if err := nodeFS.MkdirAll(d.path, 0o755, 0, 0); err != nil {
			return fmt.Errorf("create %s on the node's filesystem: %w", d.path, err)
		}
		if err := nodeFS.Chmod(d.path, d.mode); err != nil {
			return fmt.Errorf("chmod %s on the node's filesystem: %w", d.path, err)
		}
	}
	files := []struct{ path, content string }{
		{nodeHostnamePath, nodeName + "\n"},
		{nodeHostsPath, "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n" + nodeIP + "\t" + nodeName + "\n"},
		{nodeResolvPath, "nameserver 8.8.8.8\n"},
	}
	for _, f := range files {
		if _, err := nodeFS.Lstat(f.path); err == nil || !errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err := nodeFS.WriteFile(f.path, []byte(f.content), 0o644, false, 0, 0); err != nil {
			return fmt.Errorf("write %s on the node's filesystem: %w", f.path, err)
		}
	}
	return nil
}

// writeNodeFile replaces the file at p with data and mode (created with its parents as
// needed), as os.WriteFile followed by a chmod does on a real node.
func writeNodeFile(nodeFS *vfs.View, p string, data []byte, mode fs.FileMode) error {
	if err := nodeFS.MkdirAll(path.Dir(p), podDirMode, 0, 0); err != nil {
		return err
	}
	if err := nodeFS.WriteFile(p, data, mode, false, 0, 0); err != nil {
		return err
	}
	return nodeFS.Chmod(p, mode)
}
