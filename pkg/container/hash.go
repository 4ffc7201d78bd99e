package container

import (
	"encoding/json"
	"hash/fnv"
	"sync"
	"sync/atomic"
	"weak"

	v1 "k8s.io/api/core/v1"
)

// HashContainer is the hash of a container's spec, as the kubelet's: FNV-32a of the JSON
// of its name and image. A container is restarted when its pod's spec of it no
// longer hashes to what it was created with (an image update), and its crash-loop
// back-off is keyed by it, so a new image starts from a fresh back-off.
//
// c must not change once hashed: a pod from a source never does (an update is a new pod
// object), and the hash is remembered for c, since every sync of a pod asks it again for
// each container (a resync of 10,000 pods a minute encoded 20,000 containers as JSON).
// Safe for concurrent use.
func HashContainer(c *v1.Container) uint64 {
	k := weak.Make(c)
	if h, ok := hashes.m.Load(k); ok {
		return h.(uint64)
	}
	h := hashSpec(c)
	if _, loaded := hashes.m.LoadOrStore(k, h); !loaded && hashes.held.Add(1) >= hashes.sweepAt.Load() {
		hashes.sweep()
	}
	return h
}

func hashSpec(c *v1.Container) uint64 {
	// Only the name and the image, as upstream's pickFieldsToHash since v1.31: every other
	// field the API lets change in place (resources, by the resize subresource) must not
	// restart the container.
	h := fnv.New32a()
	data, _ := json.Marshal(map[string]string{"name": c.Name, "image": c.Image})
	_, _ = h.Write(data)
	return uint64(h.Sum32())
}

// hashes remembers HashContainer by container. The keys are weak, so the table does not
// keep a removed pod's spec alive; the entries of collected containers are dropped when
// the table has doubled since the last sweep. A process's nodes share it.
var hashes = newHashTable()

const minSweep = 1024

type hashTable struct {
	m        sync.Map // weak.Pointer[v1.Container] -> uint64
	held     atomic.Int64
	sweepAt  atomic.Int64
	sweeping atomic.Bool
}

func newHashTable() *hashTable {
	t := &hashTable{}
	t.sweepAt.Store(minSweep)
	return t
}

// sweep drops the entries of collected containers; one caller at a time sweeps, the others
// go on.
func (t *hashTable) sweep() {
	if !t.sweeping.CompareAndSwap(false, true) {
		return
	}
	defer t.sweeping.Store(false)
	t.m.Range(func(k, _ any) bool {
		if k.(weak.Pointer[v1.Container]).Value() == nil {
			if _, deleted := t.m.LoadAndDelete(k); deleted {
				t.held.Add(-1)
			}
		}
		return true
	})
	t.sweepAt.Store(max(minSweep, 2*t.held.Load()))
}

// hashesHeld is how many containers the table remembers (tests).
func hashesHeld() int { return int(hashes.held.Load()) }
