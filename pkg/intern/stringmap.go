package intern

import (
	"encoding/binary"
	"slices"
	"sync"
	"sync/atomic"
)

// MaxStringMaps bounds the table of string maps, as MaxResourceLists does resource lists.
const MaxStringMaps int64 = 4096

// A container's CRI annotations (its hash, restart count, termination message path and
// policy, grace period) say nothing of its pod's name or UID, so a template's containers
// carry equal maps, one per container: about 340 bytes each, since a small map takes a group
// of eight slots.
var (
	stringMaps     sync.Map // canonical key -> map[string]string
	stringMapsHeld atomic.Int64
)

// StringMap returns a map equal to m that is shared with every other caller that asked for
// an equal one. The caller must not change m afterwards, nor the map returned: treat both
// as read-only. An empty map and a map of more than 16 keys are returned as they are. Safe
// for concurrent use.
func StringMap(m map[string]string) map[string]string {
	if len(m) == 0 || len(m) > 16 {
		return m
	}
	return share(&stringMaps, &stringMapsHeld, MaxStringMaps, stringMapKey(m), m)
}

// stringMapKey is m's keys in order, each followed by its value.
func stringMapKey(m map[string]string) string {
	var keys [16]string
	sorted := keys[:0]
	n := 0
	for k, v := range m {
		sorted = append(sorted, k)
		n += len(k) + len(v) + 4
	}
	slices.Sort(sorted)
	b := make([]byte, 0, n)
	for _, k := range sorted {
		b = appendField(appendField(b, k), m[k])
	}
	return string(b)
}

// appendField appends s with its length first, so that no text of a key or a value can
// make two different maps give the same key.
func appendField(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// stringMapsCount is how many maps the table holds (tests).
func stringMapsCount() int { return int(stringMapsHeld.Load()) }
