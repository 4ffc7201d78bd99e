package container

import (
	"encoding/json"
	"hash/fnv"

	v1 "k8s.io/api/core/v1"
)

// HashContainer is the hash of a container's spec, as the kubelet's: FNV-32a of its JSON,
// which leaves out empty fields. A container is restarted when its pod's spec of it no
// longer hashes to what it was created with (an image update), and its crash-loop
// back-off is keyed by it, so a new image starts from a fresh back-off.
func HashContainer(c *v1.Container) uint64 {
	h := fnv.New32a()
	data, _ := json.Marshal(c)
	_, _ = h.Write(data)
	return uint64(h.Sum32())
}
