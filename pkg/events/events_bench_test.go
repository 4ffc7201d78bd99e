package events

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	testingclock "k8s.io/utils/clock/testing"
)

// BenchmarkEventf records into a full store: "distinct" evicts the oldest event on every
// call (a busy node), "repeats" folds into one of 500 stored events.
func BenchmarkEventf(b *testing.B) {
	for _, tc := range []struct {
		name     string
		distinct int
	}{{"distinct", 0}, {"repeats=500", 500}} {
		b.Run(tc.name, func(b *testing.B) {
			s := NewStore(testingclock.NewFakeClock(time.Unix(0, 0)), "node", DefaultCapacity)
			refs := make([]*v1.ObjectReference, 5000)
			for i := range refs {
				refs[i] = &v1.ObjectReference{Kind: "Pod", Namespace: "default", Name: fmt.Sprintf("pod-%d", i), UID: "u"}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				n := i
				if tc.distinct > 0 {
					n = i % tc.distinct
				}
				s.Eventf(refs[n%len(refs)], v1.EventTypeNormal, "Started", "Started container %d", n)
			}
		})
	}
}
