package kubelet

import (
	"sort"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/minikubelet/minikubelet/pkg/admission"
	"github.com/minikubelet/minikubelet/pkg/intern"
)

// podManager is the kubelet's desired set of pods (upstream pod manager without mirror
// pods): what the sources want, keyed by UID. It holds the pods as the sources sent them;
// their status lives in the status manager. The node's owner is its one caller (the read
// edges go through Kubelet.listedPods), so it keeps no lock.
type podManager struct {
	byUID map[types.UID]podEntry
	// withDeadline holds the pods with spec.activeDeadlineSeconds, so the sync tick checks
	// their deadlines without walking every pod each second.
	withDeadline map[types.UID]*v1.Pod
}

// podEntry is a desired pod and its effective requests, computed once when the pod is
// stored so that admission does not recompute them for every pod of the node.
type podEntry struct {
	pod      *v1.Pod
	requests v1.ResourceList // admission.PodRequests(pod); read only
}

func newPodManager() *podManager {
	return &podManager{byUID: map[types.UID]podEntry{}, withDeadline: map[types.UID]*v1.Pod{}}
}

// AddPod adds or replaces a pod (ADD, UPDATE, RECONCILE all store the newest spec) and
// returns its requests (admission.PodRequests; read only).
func (m *podManager) AddPod(pod *v1.Pod) v1.ResourceList {
	// Read only, so pods that request alike share one list.
	e := podEntry{pod: pod, requests: intern.ResourceList(admission.PodRequests(pod))}
	m.byUID[pod.UID] = e
	if pod.Spec.ActiveDeadlineSeconds != nil {
		m.withDeadline[pod.UID] = pod
	} else {
		delete(m.withDeadline, pod.UID)
	}
	return e.requests
}

// RemovePod forgets a pod.
func (m *podManager) RemovePod(pod *v1.Pod) {
	delete(m.byUID, pod.UID)
	delete(m.withDeadline, pod.UID)
}

// podsWithDeadline returns the pods with spec.activeDeadlineSeconds, in no particular order.
func (m *podManager) podsWithDeadline() []*v1.Pod {
	if len(m.withDeadline) == 0 {
		return nil
	}
	out := make([]*v1.Pod, 0, len(m.withDeadline))
	for _, p := range m.withDeadline {
		out = append(out, p)
	}
	return out
}

// GetPodByUID returns the pod with the UID.
func (m *podManager) GetPodByUID(uid types.UID) (*v1.Pod, bool) {
	e, ok := m.byUID[uid]
	return e.pod, ok
}

// entries returns every pod with its requests, in no particular order.
func (m *podManager) entries() []podEntry {
	out := make([]podEntry, 0, len(m.byUID))
	for _, e := range m.byUID {
		out = append(out, e)
	}
	return out
}

// GetPods returns every pod, sorted by namespace, name and UID so that callers iterate
// in a stable order (simulate mode and /pods depend on it).
func (m *podManager) GetPods() []*v1.Pod {
	pods := m.unsortedPods()
	sortPods(pods)
	return pods
}

// unsortedPods returns every pod in no particular order, for callers that only build sets
// or sums: sorting thousands of pods is most of the cost of a listing.
func (m *podManager) unsortedPods() []*v1.Pod {
	pods := make([]*v1.Pod, 0, len(m.byUID))
	for _, e := range m.byUID {
		pods = append(pods, e.pod)
	}
	return pods
}

// sortPods sorts pods by namespace, name and UID.
func sortPods(pods []*v1.Pod) {
	sort.Slice(pods, func(i, j int) bool { return podLess(pods[i], pods[j]) })
}

// podLess orders pods by namespace, name and UID.
func podLess(a, b *v1.Pod) bool {
	if a.Namespace != b.Namespace {
		return a.Namespace < b.Namespace
	}
	if a.Name != b.Name {
		return a.Name < b.Name
	}
	return a.UID < b.UID
}
