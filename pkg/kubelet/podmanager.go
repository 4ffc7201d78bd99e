package kubelet

import (
	"sort"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// podManager is the kubelet's desired set of pods (upstream pod manager without mirror
// pods): what the sources want, keyed by UID. It holds the pods as the sources sent them;
// their status lives in the status manager. Safe for concurrent use.
type podManager struct {
	mu    sync.RWMutex
	byUID map[types.UID]*v1.Pod
}

func newPodManager() *podManager {
	return &podManager{byUID: map[types.UID]*v1.Pod{}}
}

// AddPod adds or replaces a pod (ADD, UPDATE, RECONCILE all store the newest spec).
func (m *podManager) AddPod(pod *v1.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.byUID[pod.UID] = pod
}

// RemovePod forgets a pod.
func (m *podManager) RemovePod(pod *v1.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.byUID, pod.UID)
}

// GetPodByUID returns the pod with the UID.
func (m *podManager) GetPodByUID(uid types.UID) (*v1.Pod, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	p, ok := m.byUID[uid]
	return p, ok
}

// GetPods returns every pod, sorted by namespace, name and UID so that callers iterate
// in a stable order (admission and simulate mode depend on it).
func (m *podManager) GetPods() []*v1.Pod {
	m.mu.RLock()
	pods := make([]*v1.Pod, 0, len(m.byUID))
	for _, p := range m.byUID {
		pods = append(pods, p)
	}
	m.mu.RUnlock()
	sort.Slice(pods, func(i, j int) bool {
		a, b := pods[i], pods[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.UID < b.UID
	})
	return pods
}
