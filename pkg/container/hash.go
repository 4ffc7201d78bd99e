package container

import (
	"encoding/json"
	"hash/fnv"
	"sync"
	"weak"

	v1 "k8s.io/api/core/v1"
)

// HashContainer is the hash of a container's spec, as the kubelet's: FNV-32a of its JSON,
// which leaves out empty fields. A container is restarted when its pod's spec of it no
// longer hashes to what it was created with (an image update), and its crash-loop
// back-off is keyed by it, so a new image starts from a fresh back-off.
//
// c must not change once hashed: a pod from a source never does (an update is a new pod
// object), and the hash is remembered for c, since every sync of a pod asks it again for
// each container (a resync of 10,000 pods a minute encoded 20,000 containers as JSON).
// Safe for concurrent use.
func HashContainer(c *v1.Container) uint64 {
	k := weak.Make(c)
	hashes.Lock()
	h, ok := hashes.m[k]
	hashes.Unlock()
	if ok {
		return h
	}
	h = hashSpec(c)
	hashes.Lock()
	defer hashes.Unlock()
	if len(hashes.m) >= hashes.sweepAt {
		hashes.sweep()
	}
	hashes.m[k] = h
	return h
}

func hashSpec(c *v1.Container) uint64 {
	h := fnv.New32a()
	data, _ := json.Marshal(c)
	_, _ = h.Write(data)
	return uint64(h.Sum32())
}

// hashes remembers HashContainer by container. The keys are weak, so the table does not
// keep a removed pod's spec alive; the entries of collected containers are dropped when
// the table has doubled since the last sweep.
var hashes = hashTable{m: map[weak.Pointer[v1.Container]]uint64{}, sweepAt: minSweep}

const minSweep = 1024

type hashTable struct {
	sync.Mutex
	m       map[weak.Pointer[v1.Container]]uint64
	sweepAt int
}

func (t *hashTable) sweep() {
	for k := range t.m {
		if k.Value() == nil {
			delete(t.m, k)
		}
	}
	t.sweepAt = max(minSweep, 2*len(t.m))
}

// hashesHeld is how many containers the table remembers (tests).
func hashesHeld() int {
	hashes.Lock()
	defer hashes.Unlock()
	return len(hashes.m)
}
