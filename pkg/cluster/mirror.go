package cluster

import (
	"context"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/pkg/kubetypes"
	"github.com/minikubelet/minikubelet/pkg/task"
)

// IsMirrorPod reports whether pod is the API server's mirror of a static pod.
func IsMirrorPod(pod *v1.Pod) bool {
	_, ok := pod.Annotations[kubetypes.ConfigMirrorAnnotationKey]
	return ok
}

// MirrorPods creates and deletes the API server's mirror pods of the node's static pods
// (upstream's mirror pod client).
type MirrorPods struct {
	client interface {
		CreatePod(ctx context.Context, pod *v1.Pod) error
		DeletePod(ctx context.Context, namespace, name string, uid *string) error
	}
	caller *Caller
}

// NewMirrorPods returns the mirror pod client of api.
func NewMirrorPods(api *NodeAPI) *MirrorPods {
	return &MirrorPods{client: podClient{api}, caller: api.caller}
}

type podClient struct{ api *NodeAPI }

func (c podClient) CreatePod(ctx context.Context, pod *v1.Pod) error {
	_, err := c.api.client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	return err
}

func (c podClient) DeletePod(ctx context.Context, namespace, name string, uid *string) error {
	zero := int64(0) // a mirror pod has nothing to stop: upstream deletes it at once
	opts := metav1.DeleteOptions{GracePeriodSeconds: &zero}
	if uid != nil {
		u := types.UID(*uid)
		opts.Preconditions = &metav1.Preconditions{UID: &u}
	}
	return c.api.client.CoreV1().Pods(namespace).Delete(ctx, name, opts)
}

// Create creates the mirror pod of static pod: its spec, labels and annotations, with
// kubernetes.io/config.mirror set to the static pod's config hash and the node as owner.
func (m *MirrorPods) Create(ctx context.Context, static *v1.Pod, node *v1.Node) error {
	mirror := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: static.Name, Namespace: static.Namespace,
			Labels:      static.Labels,
			Annotations: map[string]string{},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID, Controller: boolPtr(true),
			}},
		},
		Spec: *static.Spec.DeepCopy(),
	}
	for k, v := range static.Annotations {
		mirror.Annotations[k] = v
	}
	mirror.Annotations[kubetypes.ConfigMirrorAnnotationKey] = static.Annotations[kubetypes.ConfigHashAnnotationKey]
	err := task.Await(ctx, m.caller.Go(func(cctx context.Context) error { return m.client.CreatePod(cctx, mirror) }))
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	klog.FromContext(ctx).V(3).Info("Created mirror pod", "pod", klog.KObj(static))
	return nil
}

// Delete deletes a mirror pod at once (grace 0), with its UID as precondition when known.
func (m *MirrorPods) Delete(ctx context.Context, mirror *v1.Pod) error {
	var uid *string
	if mirror.UID != "" {
		u := string(mirror.UID)
		uid = &u
	}
	err := task.Await(ctx, m.caller.Go(func(cctx context.Context) error {
		return m.client.DeletePod(cctx, mirror.Namespace, mirror.Name, uid)
	}))
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	klog.FromContext(ctx).V(3).Info("Deleted mirror pod", "pod", klog.KObj(mirror))
	return nil
}

// MirrorMatches reports whether mirror is the current mirror of static (same config hash).
func MirrorMatches(mirror, static *v1.Pod) bool {
	return mirror.DeletionTimestamp == nil &&
		mirror.Annotations[kubetypes.ConfigMirrorAnnotationKey] == static.Annotations[kubetypes.ConfigHashAnnotationKey]
}

func boolPtr(b bool) *bool { return &b }
