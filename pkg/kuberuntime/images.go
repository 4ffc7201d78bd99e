package kuberuntime

import (
	"context"
	"fmt"
	"github.com/minikubelet/minikubelet/pkg/images"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/pkg/cri"
)

// applyDefaultImageTag appends ":latest" to an image with neither tag nor digest, as the
// kubelet does before asking the runtime (it never qualifies the registry, keeping the CRI
// agnostic of default hostnames).
func applyDefaultImageTag(image string) (string, error) {
	if image == "" || strings.ContainsAny(image, " \t\n") || strings.HasSuffix(image, ":") || strings.HasSuffix(image, "/") {
		return "", fmt.Errorf("couldn't parse image name %q: invalid reference format", image)
	}
	if strings.Contains(image, "@") {
		return image, nil
	}
	if last := image[strings.LastIndex(image, "/")+1:]; !strings.Contains(last, ":") {
		image += ":latest"
	}
	return image, nil
}

// pullPolicy is the container's policy, defaulted as the API server does: Always for a
// :latest (or untagged) image, IfNotPresent otherwise.
func pullPolicy(c *v1.Container) v1.PullPolicy { return defaultPullPolicy(c.ImagePullPolicy, c.Image) }

// defaultPullPolicy is policy, or when it is empty the API server's default for image
// (SetDefaults_Container and SetDefaults_Volume for an image volume alike).
func defaultPullPolicy(policy v1.PullPolicy, image string) v1.PullPolicy {
	if policy != "" {
		return policy
	}
	if strings.Contains(image, "@") {
		return v1.PullIfNotPresent
	}
	last := image[strings.LastIndex(image, "/")+1:]
	if i := strings.LastIndex(last, ":"); i < 0 || last[i+1:] == "latest" {
		return v1.PullAlways
	}
	return v1.PullIfNotPresent
}

// evalPullErr maps a pull failure to its waiting reason as upstream's evalCRIPullErr does:
// a registry outage or a signature failure keep their own reason, anything else is
// ErrImagePull with the runtime's message.
func evalPullErr(image string, err error) (string, error) {
	msg := err.Error()
	switch {
	case strings.Contains(msg, ErrRegistryUnavailable.Error()):
		return fmt.Sprintf("image pull failed for %s because the registry is unavailable", image), ErrRegistryUnavailable
	case strings.Contains(msg, ErrSignatureValidationFailed.Error()):
		return fmt.Sprintf("image pull failed for %s because the signature validation failed", image), ErrSignatureValidationFailed
	}
	return msg, ErrImagePull
}

func shouldPullImage(policy v1.PullPolicy, present bool) bool {
	switch policy {
	case v1.PullNever:
		return false
	case v1.PullAlways:
		return true
	default:
		return !present
	}
}

// imageBackOffKey is the image pull back-off key: the pod UID plus the image as the pod
// names it, as upstream (a container and an image volume of one image share it).
func imageBackOffKey(pod *v1.Pod, image string) string { return string(pod.UID) + "_" + image }

// imagePull is what ensureImageExists pulls: an image as the pod names it (a container's
// image or an image volume's reference), its pull policy, and the annotations that tell the
// runtime what the pull is for.
type imagePull struct {
	image       string
	policy      v1.PullPolicy
	annotations map[string]string
}

// containerPull is the pull of c's image; the container name tells the runtime whose
// scripted pull behaviour applies.
func containerPull(c *v1.Container) imagePull {
	return imagePull{image: c.Image, policy: pullPolicy(c), annotations: map[string]string{cri.ContainerNameLabel: c.Name}}
}

// ensureImageExists is the kubelet's EnsureImageExists: it makes sure the image is present
// according to the pull policy, with a per pod-and-image back-off after a failed pull (10s
// doubling to 5m): the first failure answers ErrImagePull, a sync within the back-off
// ImagePullBackOff, whose message carries the failure that started it. It returns the image
// name the runtime knows the image by (the name with its default tag), a message and one of
// the Err* sentinels, and records the kubelet's Pulling/Pulled/Failed/BackOff events on ref
// (the container, or the pod for an image volume).
func (m *Manager) ensureImageExists(ctx context.Context, ref *v1.ObjectReference, pod *v1.Pod, pull imagePull, sandboxConfig *cri.PodSandboxConfig) (string, string, error) {
	requested := pull.image
	image, err := applyDefaultImageTag(requested)
	if err != nil {
		msg := fmt.Sprintf("Failed to apply default image tag %q: %v", requested, err)
		m.recorder.Eventf(ref, v1.EventTypeWarning, "InspectFailed", "%s", msg)
		return "", msg, ErrInvalidImageName
	}
	spec := cri.ImageSpec{Image: image, Annotations: pull.annotations}
	img, err := m.images.ImageStatus(ctx, spec)
	if err != nil && !isNotFound(err) {
		msg := fmt.Sprintf("Failed to inspect image %q: %v", requested, err)
		m.recorder.Eventf(ref, v1.EventTypeWarning, "InspectFailed", "%s", msg)
		return "", msg, ErrImageInspect
	}
	present := err == nil && img != nil && img.ID != ""
	if !shouldPullImage(pull.policy, present) {
		if present {
			m.recorder.Eventf(ref, v1.EventTypeNormal, "Pulled", "Container image %q already present on machine", requested)
			return image, "", nil
		}
		msg := fmt.Sprintf("Container image %q is not present with pull policy of Never", requested)
		m.recorder.Eventf(ref, v1.EventTypeWarning, "ErrImageNeverPull", "%s", msg)
		return "", msg, ErrImageNeverPull
	}

	key := imageBackOffKey(pod, requested)
	if m.imageBackOff.IsInBackOffSinceUpdate(key, m.clock.Now()) {
		msg := fmt.Sprintf("Back-off pulling image %q", requested)
		m.recorder.Eventf(ref, v1.EventTypeNormal, "BackOff", "%s", msg)
		// The waiting message tells why the back-off began (upstream since v1.33).
		if prev, ok := m.prevPullErr[key]; ok {
			msg += ": " + prev
		}
		return "", msg, ErrImagePullBackOff
	}
	delete(m.prevPullErr, key)
	m.recorder.Eventf(ref, v1.EventTypeNormal, "Pulling", "Pulling image %q", requested)
	start := m.clock.Now()
	if m.cfg.PullCredentials != nil {
		spec.Auth = credentialFor(image, m.cfg.PullCredentials(ctx, pod))
	}
	_, err = m.images.PullImage(ctx, spec, sandboxConfig)
	if err != nil {
		m.recorder.Eventf(ref, v1.EventTypeWarning, "Failed", "Failed to pull image %q: %v", requested, err)
		m.imageBackOff.Next(key, m.clock.Now())
		msg, reason := evalPullErr(requested, err)
		if m.prevPullErr == nil {
			m.prevPullErr = map[string]string{}
		}
		m.prevPullErr[key] = fmt.Sprintf("%s: %s", reason, msg)
		return "", msg, reason
	}
	// Pulls are not queued here, so the pull time and the time including waiting are equal.
	d := m.clock.Since(start).Truncate(time.Millisecond)
	// The image's size, as upstream's puller asks the runtime after the pull (0 if it cannot).
	var size uint64
	if img, err := m.images.ImageStatus(ctx, spec); err == nil && img != nil {
		size = img.Size
	}
	m.recorder.Eventf(ref, v1.EventTypeNormal, "Pulled", "Successfully pulled image %q in %v (%v including waiting). Image size: %v bytes.", requested, d, d, size)
	m.imageBackOff.GC()
	return image, "", nil
}

// gcPrevPullErrors forgets the failures of pulls whose back-off is gone (after the image
// back-off's GC), so pods removed during a back-off leave nothing behind.
func (m *Manager) gcPrevPullErrors() {
	for key := range m.prevPullErr {
		if _, ok := m.imageBackOff.ExpiryAfterUpdate(key); !ok {
			delete(m.prevPullErr, key)
		}
	}
}

// credentialFor picks the credential whose server is the image's registry, as the
// kubelet's keyring matches a docker config's keys ("https://gcr.io", "gcr.io/v1/").
func credentialFor(image string, creds []cri.AuthConfig) *cri.AuthConfig {
	ref, err := images.ParseReference(image)
	if err != nil {
		return nil
	}
	for i := range creds {
		server := creds[i].ServerAddress
		server = strings.TrimPrefix(strings.TrimPrefix(server, "https://"), "http://")
		server, _, _ = strings.Cut(server, "/")
		if server == ref.Domain || server == "index.docker.io" && ref.Domain == "docker.io" {
			return &creds[i]
		}
	}
	return nil
}
