package programs

import "slices"

// awkArray is an awk array: its elements, and the chains of busybox's hash table they
// would be in, so that for-in walks them in busybox's order.
type awkArray struct {
	m      map[string]awkValue
	chains [][]string // per bucket, oldest first: busybox walks each newest first
	nprime int
}

// The sizes busybox's hash table takes: it grows past 8 items a bucket.
const awkFirstPrime = 61

var awkPrimes = []int{251, 1021, 4093, 16381, 65521}

func newAwkArray() *awkArray {
	return &awkArray{m: map[string]awkValue{}, chains: make([][]string, awkFirstPrime)}
}

// awkHash is busybox's hashidx (its chars are signed).
func awkHash(name string) uint32 {
	var idx uint32
	for i := 0; i < len(name); i++ {
		idx = uint32(int32(int8(name[i]))) + idx<<6 - idx
	}
	return idx
}

func (arr *awkArray) len() int { return len(arr.m) }

// set sets key's value; a new key goes at the head of its bucket's chain.
func (arr *awkArray) set(key string, v awkValue) {
	if _, ok := arr.m[key]; !ok {
		if len(arr.m)+1 > len(arr.chains)*8 && arr.nprime < len(awkPrimes) {
			arr.rebuild()
		}
		b := awkHash(key) % uint32(len(arr.chains))
		arr.chains[b] = append(arr.chains[b], key)
	}
	arr.m[key] = v
}

// rebuild moves the items to a larger table as busybox's hash_rebuild: each old chain
// walked from its head, each item put at the head of its new chain.
func (arr *awkArray) rebuild() {
	size := awkPrimes[arr.nprime]
	arr.nprime++
	chains := make([][]string, size)
	for _, chain := range arr.chains {
		for i := len(chain) - 1; i >= 0; i-- {
			b := awkHash(chain[i]) % uint32(size)
			chains[b] = append(chains[b], chain[i])
		}
	}
	arr.chains = chains
}

func (arr *awkArray) del(key string) {
	if _, ok := arr.m[key]; !ok {
		return
	}
	delete(arr.m, key)
	b := awkHash(key) % uint32(len(arr.chains))
	if i := slices.Index(arr.chains[b], key); i >= 0 {
		arr.chains[b] = slices.Delete(arr.chains[b], i, i+1)
	}
}

// clear deletes every element; the table keeps its size, as busybox's.
func (arr *awkArray) clear() {
	clear(arr.m)
	for i := range arr.chains {
		arr.chains[i] = nil
	}
}

// keys are the keys in the order busybox's for-in walks them.
func (arr *awkArray) keys() []string {
	keys := make([]string, 0, len(arr.m))
	for _, chain := range arr.chains {
		for i := len(chain) - 1; i >= 0; i-- {
			keys = append(keys, chain[i])
		}
	}
	return keys
}
