package scratch

// Map returns m emptied, ready for about n entries, or a new map when there is none or m
// held far more than n last time (so a node that went from 10,000 pods to 10 does not keep
// the big table). Housekeeping builds maps of every pod's UID every 2s; at 10,000 pods
// allocating them anew was a steady 500 KB/s of garbage.
func Map[K comparable, V any](m map[K]V, n int) map[K]V {
	if m == nil || len(m) > 4*n+64 {
		return make(map[K]V, n)
	}
	clear(m)
	return m
}
