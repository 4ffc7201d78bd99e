package fake

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"slices"
	"sort"

	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/runtime/behavior"
)

// PullError is the error of a pull scripted to fail with pullError. Reason is the scripted
// reason (e.g. ErrImagePull, ErrRegistryUnavailable), for the kubelet's container status.
type PullError struct {
	Image      string
	Reason     string
	Annotation string // the behaviour annotation that scripted it; empty for the default behaviour
}

func (e *PullError) Error() string {
	src := "the default behaviour"
	if e.Annotation != "" {
		src = "annotation " + e.Annotation
	}
	return fmt.Sprintf("pull image %q: %s (scripted by %s)", e.Image, e.Reason, src)
}

// pullScript returns the pull delay and error for a pull. The kubelet names the container in
// image.Annotations[cri.ContainerNameLabel]; a pull that names none gets the pod's pull
// scripts for any container (the longest pullDelay, the first pullError by container name).
func (r *Runtime) pullScript(image cri.ImageSpec, sandboxConfig *cri.PodSandboxConfig) (behavior.Behavior, string, error) {
	var annotations map[string]string
	if sandboxConfig != nil {
		annotations = sandboxConfig.Annotations
	}
	if name := image.Annotations[cri.ContainerNameLabel]; name != "" {
		return r.behaviourFor(annotations, name)
	}
	all, err := behavior.ParseAll(annotations)
	if err != nil {
		return behavior.Behavior{}, "", err
	}
	if len(all) == 0 {
		return r.defaultBeh, "", nil
	}
	names := make([]string, 0, len(all))
	for n := range all {
		names = append(names, n)
	}
	sort.Strings(names)
	var out behavior.Behavior
	var key string
	for _, n := range names {
		b := all[n]
		out.PullDelay = max(out.PullDelay, b.PullDelay)
		if out.PullError == "" && b.PullError != "" {
			out.PullError, key = b.PullError, behavior.AnnotationKey(n)
		}
	}
	return out, key, nil
}

// PullImage pulls an image: it takes the container's scripted pullDelay on the clock (a
// pending operation, honouring ctx), then fails with a *PullError if pullError is scripted, else records the
// image and returns its id. Ids and sizes derive from the image name.
func (r *Runtime) PullImage(ctx context.Context, image cri.ImageSpec, sandboxConfig *cri.PodSandboxConfig) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if image.Image == "" {
		return "", fmt.Errorf("pull image: image name is required")
	}
	if err := r.inject(ctx, methodPullImage, one); err != nil {
		return "", err
	}
	beh, key, err := r.pullScript(image, sandboxConfig)
	if err != nil {
		return "", fmt.Errorf("pull image %q: invalid behaviour: %w", image.Image, err)
	}
	if err := r.delay(ctx, beh.PullDelay); err != nil {
		return "", err
	}
	if beh.PullError != "" {
		return "", &PullError{Image: image.Image, Reason: beh.PullError, Annotation: key}
	}
	now := r.lock()
	defer r.unlock(now)
	if img := r.findImageLocked(image.Image); img != nil {
		return img.ID, nil
	}
	sum := sha256.Sum256([]byte(image.Image))
	const mib = 1 << 20
	img := &cri.Image{
		ID:       "sha256:" + hex.EncodeToString(sum[:]),
		RepoTags: []string{image.Image},
		// 10 to 500 MiB, stable per image, so node status image lists look real.
		Size: (10 + binary.BigEndian.Uint64(sum[:8])%491) * mib,
	}
	r.images = append(r.images, img)
	r.logger.V(4).Info("Pulled image", "image", image.Image, "imageID", img.ID)
	return img.ID, nil
}

// findImageLocked finds an image by tag or id.
func (r *Runtime) findImageLocked(ref string) *cri.Image {
	for _, img := range r.images {
		if img.ID == ref || slices.Contains(img.RepoTags, ref) {
			return img
		}
	}
	return nil
}

// ImageStatus returns the image, or nil and no error when it is not present (as the CRI).
func (r *Runtime) ImageStatus(ctx context.Context, image cri.ImageSpec) (*cri.Image, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := r.inject(ctx, methodImageStatus, one); err != nil {
		return nil, err
	}
	now := r.lock()
	defer r.unlock(now)
	img := r.findImageLocked(image.Image)
	if img == nil {
		return nil, nil
	}
	out := *img
	out.RepoTags = slices.Clone(img.RepoTags)
	return &out, nil
}

// ListImages lists pulled images in pull order.
func (r *Runtime) ListImages(ctx context.Context) ([]cri.Image, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := r.inject(ctx, methodListImages, one); err != nil {
		return nil, err
	}
	now := r.lock()
	defer r.unlock(now)
	out := make([]cri.Image, len(r.images))
	for i, img := range r.images {
		out[i] = *img
		out[i].RepoTags = slices.Clone(img.RepoTags)
	}
	return out, nil
}

// RemoveImage removes an image (by tag or id); removing an absent image succeeds. Containers
// created from it keep running, as with containerd.
func (r *Runtime) RemoveImage(ctx context.Context, image cri.ImageSpec) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := r.inject(ctx, methodRemoveImage, one); err != nil {
		return err
	}
	now := r.lock()
	defer r.unlock(now)
	img := r.findImageLocked(image.Image)
	if img == nil {
		return nil
	}
	r.images = slices.DeleteFunc(r.images, func(x *cri.Image) bool { return x == img })
	return nil
}
