package podstatus

import (
	"k8s.io/apimachinery/pkg/types"
)

// Reason is why a container could not be started on the last sync: Reason is the waiting
// reason (CrashLoopBackOff, ErrImagePull, ImagePullBackOff, CreateContainerError...) and
// Message its detail.
type Reason struct {
	Reason  string
	Message string
}

// ReasonGetter reads the last start failure of a container.
type ReasonGetter interface {
	Get(uid types.UID, container string) (Reason, bool)
}

// ReasonCache keeps the last start failure per pod and container (the kubelet's
// reasonCache). It implements kuberuntime.ReasonRecorder. Not safe for concurrent use: the
// pod syncs, on the node's owner, are its callers.
type ReasonCache struct {
	pods map[types.UID]map[string]Reason
}

var _ ReasonGetter = (*ReasonCache)(nil)

// NewReasonCache returns an empty cache.
func NewReasonCache() *ReasonCache {
	return &ReasonCache{pods: map[types.UID]map[string]Reason{}}
}

// Add records a failure.
func (c *ReasonCache) Add(uid types.UID, container, reason, message string) {
	m := c.pods[uid]
	if m == nil {
		m = map[string]Reason{}
		c.pods[uid] = m
	}
	m[container] = Reason{Reason: reason, Message: message}
}

// Remove clears a container's failure (it started).
func (c *ReasonCache) Remove(uid types.UID, container string) {
	if m := c.pods[uid]; m != nil {
		delete(m, container)
		if len(m) == 0 {
			delete(c.pods, uid)
		}
	}
}

// Get returns a container's last failure.
func (c *ReasonCache) Get(uid types.UID, container string) (Reason, bool) {
	r, ok := c.pods[uid][container]
	return r, ok
}

// ForgetPod drops every entry of a pod; the kubelet's LRU bounds the cache, here the pod's
// end does (called once the pod is terminated).
func (c *ReasonCache) ForgetPod(uid types.UID) {
	delete(c.pods, uid)
}

// Len is the number of pods with recorded failures.
func (c *ReasonCache) Len() int {
	return len(c.pods)
}
