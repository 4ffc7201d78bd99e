package intern

import (
	"sync"
	"sync/atomic"
)

// Values is a table of shared copies of values of a small comparable type: the CRI
// resources of a node's containers, which pods stamped from one template set alike. Its
// zero value is empty; at most Bound values are held (0: MaxResourceLists), past which
// new ones are returned as copies of their own. Safe for concurrent use.
type Values[T comparable] struct {
	Bound int64
	table sync.Map // T -> *T
	held  atomic.Int64
}

// Share returns a pointer to a value equal to v, shared with every caller that asked for
// an equal one. Read only: neither the caller nor anyone it hands it to may change it.
func (t *Values[T]) Share(v T) *T {
	if p, ok := t.table.Load(v); ok {
		return p.(*T)
	}
	bound := t.Bound
	if bound == 0 {
		bound = MaxResourceLists
	}
	if t.held.Load() >= bound {
		return &v
	}
	p, loaded := t.table.LoadOrStore(v, &v)
	if !loaded {
		t.held.Add(1)
	}
	return p.(*T)
}
