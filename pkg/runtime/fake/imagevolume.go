package fake

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/vfs"
)

// Image volumes, as containerd's CRI plugin mounts them (mutateMounts, at CreateContainer):
// the image must already be on the node (the kubelet pulled it), its filesystem is mounted
// once per sandbox and image under imageVolumeDir, and the container binds that directory,
// or the directory subPath names in it, read-only. Here nothing is mounted on the node's
// filesystem: the container binds the image's frozen tree itself (what the image's
// containers share as their root), so a write under it fails with EROFS and an image
// volume costs no copy. Its mount keeps the path containerd's would have, for /proc/mounts.

// imageVolumeDir is where containerd mounts the images of a sandbox's image volumes:
// <state dir>/image-volumes/<sandbox id>/<image digest>.
const imageVolumeDir = "/run/containerd/io.containerd.grpc.v1.cri/image-volumes"

// imageVolumeMount is an image volume resolved for a new container: the mount it keeps (bound
// from where containerd mounts the image), the node of the image's tree it binds, and the
// mount as ContainerStatus reports it.
type imageVolumeMount struct {
	mount  cri.Mount
	node   *vfs.Node
	status cri.ImageMount
}

// mountImageVolumesLocked resolves a new container's image volumes in sb. An error is
// containerd's, which the kubelet shows as the container's CreateContainerError message:
// "failed to mount image volume: ImageVolumeMountFailed: <why>".
func (r *Runtime) mountImageVolumesLocked(sb *sandbox, mounts []cri.ImageMount) ([]imageVolumeMount, error) {
	out := make([]imageVolumeMount, 0, len(mounts))
	for _, m := range mounts {
		ivm, err := r.mountImageVolumeLocked(sb, m)
		if err != nil {
			return nil, fmt.Errorf("failed to mount image volume: %w: %w", cri.ErrImageVolumeMountFailed, err)
		}
		out = append(out, ivm)
	}
	return out, nil
}

// mountImageVolumeLocked is containerd's mutateImageMount for one mount.
func (r *Runtime) mountImageVolumeLocked(sb *sandbox, m cri.ImageMount) (imageVolumeMount, error) {
	if m.ContainerPath == "" {
		return imageVolumeMount{}, fmt.Errorf("container path not specified for image %q", m.Image.Image)
	}
	ref := m.Image.Image
	if ref == "" {
		return imageVolumeMount{}, fmt.Errorf("image not specified for the mount at %q", m.ContainerPath)
	}
	img := r.findImageLocked(ref)
	if img == nil {
		return imageVolumeMount{}, fmt.Errorf("failed to resolve image %q: %w", ref, cri.ErrNotFound)
	}
	tree := r.imageInfoLocked(img).tree
	if tree == nil {
		tree = vfs.NewDir(0o755) // an image of no files (only tests' stubs have none)
	}
	target := path.Join(imageVolumeDir, sb.info.ID, strings.TrimPrefix(img.ID, "sha256:"))
	node, hostPath := tree, target
	if m.SubPath != "" {
		view := vfs.NewView(r.nodeFS, tree, true)
		p, err := openInRoot(view, m.SubPath)
		if err != nil {
			return imageVolumeMount{}, fmt.Errorf("failed to ensure image subpath %q in %q: %w", m.SubPath, target, err)
		}
		info, err := view.Stat(p)
		if err == nil && !info.Mode.IsDir() {
			// Mounting a single file is a non-goal of the image volume source (KEP-4639).
			return imageVolumeMount{}, fmt.Errorf("failed to ensure image subpath %q in %q: only directory subpath is supported, subpath: %q, mountpoint: %q ", m.SubPath, target, m.SubPath, target)
		}
		if err == nil {
			node, err = view.Resolve(p)
		}
		if err != nil {
			return imageVolumeMount{}, fmt.Errorf("failed to ensure image subpath %q in %q: %w", m.SubPath, target, err)
		}
		hostPath = path.Join(target, m.SubPath)
	}
	return imageVolumeMount{
		mount:  cri.Mount{ContainerPath: m.ContainerPath, HostPath: hostPath, Readonly: true},
		node:   node,
		status: cri.ImageMount{ContainerPath: m.ContainerPath, Image: cri.ImageSpec{Image: img.ID}, SubPath: m.SubPath},
	}, nil
}

// errPathEscapes is os.Root's error for a path that leads out of its root.
var errPathEscapes = errors.New("path escapes from parent")

// openInRoot finds name inside root view v as Go's os.OpenInRoot, with which containerd
// checks a subPath, does: symbolic links are followed but may neither be absolute nor lead
// out of the root, and ".." stops at nothing (it is an escape at the root). It returns the
// canonical path in v. Its errors read as os.OpenInRoot's: "openat <name>: no such file or
// directory".
func openInRoot(v *vfs.View, name string) (string, error) {
	const maxLinks = 40 // the kernel's limit, as os.Root's
	fail := func(err error) (string, error) { return "", &fs.PathError{Op: "openat", Path: name, Err: err} }
	pending := strings.Split(name, "/")
	cur := "/"
	for links := 0; len(pending) > 0; {
		elem := pending[0]
		pending = pending[1:]
		switch elem {
		case "", ".":
			continue
		case "..":
			if cur == "/" {
				return fail(errPathEscapes)
			}
			cur = path.Dir(cur)
			continue
		}
		next := path.Join(cur, elem)
		info, err := v.Lstat(next)
		if err != nil {
			return fail(goErrno(err))
		}
		if info.Mode&fs.ModeSymlink == 0 {
			cur = next // a file with more to walk fails the next Lstat: ENOTDIR
			continue
		}
		if links++; links > maxLinks {
			return fail(errTooManyLinks)
		}
		if path.IsAbs(info.Target) {
			return fail(errPathEscapes)
		}
		pending = append(strings.Split(info.Target, "/"), pending...)
	}
	return cur, nil
}

// The errors of Go's syscall package, as os.OpenInRoot words them (the vfs's Errno text is
// C's strerror, for programs): containerd's message carries Go's.
var (
	errNoEnt        = errors.New("no such file or directory")
	errNotDir       = errors.New("not a directory")
	errTooManyLinks = errors.New("too many levels of symbolic links")
)

// goErrno is err as Go's syscall package words it.
func goErrno(err error) error {
	switch vfs.ErrnoOf(err) {
	case vfs.ENOENT:
		return errNoEnt
	case vfs.ENOTDIR:
		return errNotDir
	case vfs.ELOOP:
		return errTooManyLinks
	}
	return err
}

// mountDepth is the number of components of a container path, by which containerd orders a
// container's mounts before binding them (parents before what is mounted inside them).
func mountDepth(p string) int {
	p = path.Clean("/" + p)
	if p == "/" {
		return 0
	}
	return strings.Count(p, "/")
}
