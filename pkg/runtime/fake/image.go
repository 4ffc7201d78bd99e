package fake

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/images"
	"github.com/minikubelet/minikubelet/pkg/runtime/behavior"
	"github.com/minikubelet/minikubelet/pkg/vfs"
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

// RegistryError is a pull the registry refuses (images.Exists): an image that does not
// exist, a registry that does not resolve, a private repository. Its text is what a CRI
// client sees of containerd's error, gRPC status included, as the kubelet prints it in its
// Failed event ("rpc error: code = NotFound desc = failed to pull and unpack image ...").
type RegistryError struct {
	Image string
	Err   *images.PullError
}

func (e *RegistryError) Error() string {
	return fmt.Sprintf("rpc error: code = %s desc = %s", e.Err.Code, e.Err.Message)
}

func (e *RegistryError) Unwrap() error { return e.Err }

// pullScript returns the pull delay and error for a pull. The kubelet names the container in
// image.Annotations[cri.ContainerNameLabel]; a pull for an image volume
// (cri.ImageVolumeAnnotation) gets the default behaviour, no container's script; a pull that
// names neither gets the pod's pull scripts for any container (the longest pullDelay, the
// first pullError by container name).
func (r *Runtime) pullScript(image cri.ImageSpec, sandboxConfig *cri.PodSandboxConfig) (behavior.Behavior, string, error) {
	var annotations map[string]string
	if sandboxConfig != nil {
		annotations = sandboxConfig.Annotations
	}
	if name := image.Annotations[cri.ContainerNameLabel]; name != "" {
		return r.behaviourFor(annotations, name)
	}
	if image.Annotations[cri.ImageVolumeAnnotation] != "" {
		return r.defaultBeh, "", nil
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

// PullImage pulls an image. A scripted pullError fails it with a *PullError after the
// scripted pullDelay (a pending operation on the clock, honouring ctx). Otherwise the
// registry decides (images.Exists): an image that cannot be pulled fails at once with a
// *RegistryError, as containerd fails when the reference does not resolve; one that can
// takes the pullDelay, is recorded and its id returned. Ids and sizes derive from the
// image name.
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
	if beh.PullError == "" {
		// Resolving the reference is the pull's first step: a refusal comes before any
		// download time.
		if err := images.ExistsWithAuth(image.Image, image.Auth != nil); err != nil {
			r.logger.V(4).Info("Pull refused by the registry", "image", image.Image, "err", err)
			var pe *images.PullError
			if !errors.As(err, &pe) {
				pe = &images.PullError{Code: images.CodeUnknown, Message: err.Error()}
			}
			return "", &RegistryError{Image: image.Image, Err: pe}
		}
	}
	if err := r.delay(ctx, beh.PullDelay); err != nil {
		return "", err
	}
	if beh.PullError != "" {
		return "", &PullError{Image: image.Image, Reason: beh.PullError, Annotation: key}
	}
	now := r.lock()
	defer r.unlock(now)
	img := r.addImageLocked(image.Image)
	r.logger.V(4).Info("Pulled image", "image", image.Image, "imageID", img.ID)
	return img.ID, nil
}

// LoadImage puts an image on the node without asking a registry, as `kind load
// docker-image` or `ctr -n k8s.io images import` do, and returns its id. It is how a node
// runs an image no registry has (a scenario's own "leaky:1.0"): the kubelet finds it
// present and, with pull policy IfNotPresent or Never, does not pull it; a pull (policy
// Always, or a :latest tag) still asks the registry and fails, as it does for real.
func (r *Runtime) LoadImage(ref string) string {
	now := r.lock()
	defer r.unlock(now)
	return r.addImageLocked(ref).ID
}

// addImageLocked records image ref (once) and returns it. Ids and sizes derive from the
// name.
func (r *Runtime) addImageLocked(ref string) *cri.Image {
	if img := r.findImageLocked(ref); img != nil {
		return img
	}
	sum := sha256.Sum256([]byte(ref))
	const mib = 1 << 20
	img := &cri.Image{
		ID:       "sha256:" + hex.EncodeToString(sum[:]),
		RepoTags: []string{ref},
		// 10 to 500 MiB, stable per image, so node status image lists look real.
		Size: (10 + binary.BigEndian.Uint64(sum[:8])%491) * mib,
	}
	r.images = append(r.images, img)
	return img
}

// imageConfig is what the catalogue says of a pulled image, by the name it was pulled as:
// the config its containers start from (copies, safe to change), its root filesystem
// (built once per image, frozen and shared: vfs.NewView copies on write) and whether the
// catalogue describes it. An image it does not describe gets the generic userland (sh and
// the applets) and an empty config: its own entrypoint is not simulated, only commands
// the pod gives run. Needs no lock.
func imageConfig(img *cri.Image) (images.Config, *vfs.Node, bool) {
	ref := ""
	if len(img.RepoTags) > 0 {
		ref = img.RepoTags[0]
	}
	entry, known := images.Lookup(ref)
	cfg := entry.Config
	cfg.Entrypoint = slices.Clone(cfg.Entrypoint)
	cfg.Cmd = slices.Clone(cfg.Cmd)
	cfg.Env = slices.Clone(cfg.Env)
	return cfg, entry.Tree(), known
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
	out.Uid, out.Username = imageUser(r.imageInfoLocked(img).user)
	return &out, nil
}

// imageUser is the user an image's config names as ImageStatus reports it (containerd's
// getUserFromImage): a numeric uid, else a name; neither when the config has none.
func imageUser(user string) (*int64, string) {
	if user == "" {
		return nil, ""
	}
	user, _, _ = strings.Cut(user, ":")
	if uid, err := strconv.ParseInt(user, 10, 64); err == nil {
		return &uid, ""
	}
	return nil, user
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
	delete(r.imageInfos, img)
	return nil
}
