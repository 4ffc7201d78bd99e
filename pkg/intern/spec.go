package intern

import (
	"encoding/json"
	"sync"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
)

// MaxSpecParts bounds the table of shared spec parts, as MaxResourceLists does resource
// lists. Its keys are the parts' JSON, so a full table holds a few megabytes.
const MaxSpecParts int64 = 4096

// Pods stamped from one template carry equal containers: a v1.Container is about 400
// bytes before what hangs off it (its name, image, command, mounts), so a node of 10,000
// two-container pods held about 10 MB of equal container lists. The same goes for the
// tolerations and security context defaulting gives every static pod.
var (
	specParts     sync.Map // kind byte + JSON -> the shared part
	specPartsHeld atomic.Int64
)

// The kinds of part, so that equal JSON of different types never meet.
const (
	partContainers  = 'c'
	partTolerations = 't'
	partPodSecurity = 's'
)

// PodSpec shares the containers, init containers, tolerations and pod security context of
// a final pod (defaulted and validated) with every other pod whose are equal, and their
// resource lists through PodResources. Equal means the same JSON: the API's own identity
// of an object, and what a container's hash is taken over, so a shared container hashes
// as the pod's own did. Call it before anyone else sees the pod; from then on these parts
// are read-only, as a pod from a source is. Safe for concurrent use.
func PodSpec(pod *v1.Pod) {
	PodResources(pod) // also for parts past the table's bound
	spec := &pod.Spec
	spec.InitContainers = sharePart(partContainers, spec.InitContainers)
	spec.Containers = sharePart(partContainers, spec.Containers)
	spec.Tolerations = sharePart(partTolerations, spec.Tolerations)
	if spec.SecurityContext != nil {
		spec.SecurityContext = sharePart(partPodSecurity, spec.SecurityContext)
	}
}

// sharePart returns the part the table holds for v's JSON, storing v first when there is
// none. An empty slice, or a part that does not marshal, is returned as it is.
func sharePart[V any](kind byte, v V) V {
	j, err := json.Marshal(v)
	if err != nil || string(j) == "null" || string(j) == "[]" {
		return v
	}
	key := make([]byte, 0, 1+len(j))
	key = append(append(key, kind), j...)
	return share(&specParts, &specPartsHeld, MaxSpecParts, string(key), v)
}

// specPartsCount is how many parts the table holds (tests).
func specPartsCount() int { return int(specPartsHeld.Load()) }
