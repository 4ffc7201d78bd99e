package kuberuntime

import (
	"context"
	"errors"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/events"
)

// Image volumes (the ImageVolume gate, GA and locked in v1.37), as the kubelet's SyncPod
// pulls them: once per sync, before the first container it starts, every image volume of
// the pod is pulled as a container's image is (the same policies, back-off, credentials
// and events, the events on the pod, not a container), whether a container mounts it or
// not. A container that mounts one whose pull failed is not started: it waits with the
// pull's reason (ErrImagePull, ImagePullBackOff, ErrImageNeverPull). The runtime mounts the
// others (cri.ImageMount), read-only.

// ImageVolumes are the image volumes a container mounts, by volume name: the image each is
// pulled as (upstream's kubecontainer.ImageVolumes). Nil: none.
type ImageVolumes map[string]cri.ImageSpec

// imageVolumePull is the pull of one image volume: the image the runtime knows it by, or
// why it failed (err, one of the Err* sentinels, and msg) and the image as the pod names it.
type imageVolumePull struct {
	image     string
	reference string
	err       error
	msg       string
}

// imageVolumePulls are the pulls of a pod's image volumes, by volume name; nil when the
// pod has none.
type imageVolumePulls map[string]imageVolumePull

// pullImageVolumes is upstream's getImageVolumes: it pulls every image volume of the pod
// and returns how each went. A pod without image volumes costs a walk of its volumes.
func (m *Manager) pullImageVolumes(ctx context.Context, pod *v1.Pod, sandboxConfig *cri.PodSandboxConfig) imageVolumePulls {
	if !m.cfg.ImageVolume {
		return nil
	}
	var pulls imageVolumePulls
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		if vol.Image == nil {
			continue
		}
		if pulls == nil {
			pulls = imageVolumePulls{}
		}
		pull := imagePull{
			image:       vol.Image.Reference,
			policy:      defaultPullPolicy(vol.Image.PullPolicy, vol.Image.Reference),
			annotations: map[string]string{cri.ImageVolumeAnnotation: vol.Name},
		}
		// The events are the pod's: the volume is no container's.
		image, msg, err := m.ensureImageExists(ctx, podRef(pod), pod, pull, sandboxConfig)
		if err != nil {
			klog.FromContext(ctx).Error(err, "Failed to ensure image", "pod", klog.KObj(pod))
			pulls[vol.Name] = imageVolumePull{reference: vol.Image.Reference, err: err, msg: msg}
			continue
		}
		klog.FromContext(ctx).V(4).Info("Pulled image", "ref", image, "pod", klog.KObj(pod))
		pulls[vol.Name] = imageVolumePull{image: image, reference: vol.Image.Reference}
	}
	return pulls
}

// containerImageVolumes is upstream's toKubeContainerImageVolumes: the image volumes c
// mounts, or, when the pull of one failed, a Warning Failed event for each failed one and
// r failed with the last one's reason and message (and, for ImagePullBackOff, when its
// back-off ends).
func (m *Manager) containerImageVolumes(pulls imageVolumePulls, pod *v1.Pod, c *v1.Container, r *SyncResult) (ImageVolumes, error) {
	if len(pulls) == 0 {
		return nil, nil
	}
	var out ImageVolumes
	var last *imageVolumePull
	for _, mnt := range c.VolumeMounts {
		p, ok := pulls[mnt.Name]
		if !ok {
			continue
		}
		if p.err != nil {
			m.recorder.Eventf(events.ContainerRef(pod, c.Name), v1.EventTypeWarning, "Failed", "Error: %v", p.err)
			last = &p
			continue
		}
		if out == nil {
			out = ImageVolumes{}
		}
		out[mnt.Name] = cri.ImageSpec{Image: p.image}
	}
	if last != nil {
		r.Fail(last.err, last.msg)
		if last.err == ErrImagePullBackOff {
			r.BackOffUntil, _ = m.imageBackOff.ExpiryAfterUpdate(imageBackOffKey(pod, last.reference))
		}
		return nil, last.err
	}
	return out, nil
}

// countImageVolumeMounts is upstream's incrementImageVolumeMetrics, after a start of c with
// its image volumes: each is a requested volume, and each of c's mounts of one a mount that
// succeeded, unless the runtime refused to create c with an ImageVolumeMountFailed message
// (a message that only begins with it counts: containerd's, which begins "failed to mount
// image volume: ", counts as a success there too).
func (m *Manager) countImageVolumeMounts(err error, msg string, c *v1.Container, volumes ImageVolumes) {
	if !m.cfg.ImageVolume || len(volumes) == 0 {
		return
	}
	m.metrics.imageVolumesRequested.Add(float64(len(volumes)))
	failed := errors.Is(err, ErrCreateContainer) && strings.HasPrefix(msg, cri.ErrImageVolumeMountFailed.Error())
	for _, mnt := range c.VolumeMounts {
		if _, ok := volumes[mnt.Name]; !ok {
			continue
		}
		if failed {
			m.metrics.imageVolumeMountErrors.Inc()
		} else {
			m.metrics.imageVolumeMounts.Inc()
		}
	}
}
