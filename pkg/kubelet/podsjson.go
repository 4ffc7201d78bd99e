package kubelet

import (
	"encoding/json"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// podsJSON keeps each pod's /pods encoding until the pod or its status changes. Encoding
// is nearly all of what /pods costs (10,000 pods are 25 MB of JSON, about a second with
// encoding/json); with the encodings kept, a request copies bytes. It holds one encoding
// per pod (about 2.5 KB for a pod of two containers), built by the first request.
//
// A pod's identity is its pointer: the pod manager stores the merger's pods, which are
// never changed once handed out (an update is a new object), and the status manager
// replaces a status on every write. So an encoding is current while both pointers are.
type podsJSON struct {
	mu      sync.Mutex
	gen     uint64 // the request that last used an entry; the others are dropped
	entries map[types.UID]*podJSONEntry
}

type podJSONEntry struct {
	pod    *v1.Pod
	status *v1.PodStatus
	data   []byte
	gen    uint64
}

// items returns the encoding of every pod, in their order, each with its status (nil: the
// pod's own). Entries of pods no longer listed are dropped. Requests may come at once: the
// lock is the edge's own, the node's components are not read.
func (c *podsJSON) items(pods []listedPod) [][]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = make(map[types.UID]*podJSONEntry, len(pods))
	}
	c.gen++
	out := make([][]byte, 0, len(pods))
	for _, l := range pods {
		pod, status := l.pod, l.status
		e := c.entries[pod.UID]
		if e == nil || e.pod != pod || e.status != status {
			e = &podJSONEntry{pod: pod, status: status, data: encodePod(pod, status)}
			c.entries[pod.UID] = e
		}
		e.gen = c.gen
		out = append(out, e.data)
	}
	if len(c.entries) > len(out) {
		for uid, e := range c.entries {
			if e.gen != c.gen {
				delete(c.entries, uid)
			}
		}
	}
	return out
}

// forgetRemoved drops the encodings of pods no longer desired. Housekeeping calls it: a
// /pods request also drops them, but without one they would stay, with a copy of each pod.
func (c *podsJSON) forgetRemoved(desired map[types.UID]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for uid := range c.entries {
		if !desired[uid] {
			delete(c.entries, uid)
		}
	}
}

// encodePod is the JSON of the pod with the status (when not nil), as GetPods builds it.
func encodePod(pod *v1.Pod, status *v1.PodStatus) []byte {
	p := *pod // a shallow copy to set the status on: encoding only reads
	asListed(&p, status)
	data, err := json.Marshal(&p)
	if err != nil {
		// A v1.Pod always encodes; keep the list valid JSON if one ever does not.
		data, _ = json.Marshal(map[string]string{"error": err.Error()})
	}
	return data
}

// asListed makes p, a copy of a pod, what /pods lists: with the status manager's status
// (nil: the pod's own) and its kind.
func asListed(p *v1.Pod, status *v1.PodStatus) {
	if status != nil {
		p.Status = *status
	}
	if p.Kind == "" {
		p.APIVersion, p.Kind = "v1", "Pod"
	}
}
