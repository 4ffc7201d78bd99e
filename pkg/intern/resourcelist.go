package intern

import (
	"slices"
	"sync"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
)

// MaxResourceLists bounds the table: past it, new lists are returned as they are, so a node
// whose pods all request differently keeps no more than this many extra lists.
const MaxResourceLists int64 = 4096

// A v1.ResourceList is a map, and a small Go map takes a whole group of eight slots: about
// 700 bytes for {cpu: 10m, memory: 16Mi}, however few entries it has. Pods stamped from one
// template (a Deployment's, a DaemonSet's, a scale test's) request alike, so a node with
// 10,000 of them held 30,000 equal lists (two containers' requests and admission's sum per
// pod). Shared, they are one each.
var (
	resourceLists     sync.Map // canonical key -> v1.ResourceList
	resourceListsHeld atomic.Int64
)

// ResourceList returns a list equal to l (the same names, each quantity printing the same,
// which is the same value in the same format) that is shared with every other caller that
// asked for an equal one. The caller must not change l afterwards, nor the list returned:
// treat both as read-only. An empty list and a list of more than 8 names are returned as
// they are. Safe for concurrent use (the nodes of one process share the table).
func ResourceList(l v1.ResourceList) v1.ResourceList {
	if len(l) == 0 || len(l) > 8 {
		return l
	}
	return share(&resourceLists, &resourceListsHeld, MaxResourceLists, resourceListKey(l), l)
}

// share returns the value table holds for key, storing v there first when there is none
// and the table holds fewer than bound.
func share[V any](table *sync.Map, held *atomic.Int64, bound int64, key string, v V) V {
	if shared, ok := table.Load(key); ok {
		return shared.(V)
	}
	if held.Load() >= bound {
		return v
	}
	shared, loaded := table.LoadOrStore(key, v)
	if !loaded {
		held.Add(1)
	}
	return shared.(V)
}

// resourceListKey is l's names in order, each with its quantity's canonical text.
func resourceListKey(l v1.ResourceList) string {
	var names [8]v1.ResourceName
	sorted := names[:0]
	for name := range l {
		sorted = append(sorted, name)
	}
	slices.Sort(sorted)
	b := make([]byte, 0, 64)
	for _, name := range sorted {
		q := l[name]
		b = appendField(appendField(b, string(name)), q.String())
	}
	return string(b)
}

// resourceListsCount is how many lists the table holds (tests).
func resourceListsCount() int { return int(resourceListsHeld.Load()) }

// PodResources shares the pod's containers' requests and limits and its overhead through
// ResourceList. Call it once the pod is final (defaulted and validated), before anyone else
// sees it; from then on the pod's resource lists are read-only, as a pod from a source is.
func PodResources(pod *v1.Pod) {
	for _, cs := range [2][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			r := &cs[i].Resources
			r.Requests, r.Limits = ResourceList(r.Requests), ResourceList(r.Limits)
		}
	}
	pod.Spec.Overhead = ResourceList(pod.Spec.Overhead)
}
