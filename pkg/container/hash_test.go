package container

import (
	"runtime"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestHashContainer(t *testing.T) {
	spec := func(image string) *v1.Container {
		return &v1.Container{Name: "app", Image: image, Command: []string{"sh", "-c", "sleep 1"}}
	}
	a := spec("busybox:1.36")
	first := HashContainer(a)
	for _, c := range []struct {
		name string
		c    *v1.Container
		same bool
	}{
		{"the same container again", a, true},
		{"an equal container of another pod", spec("busybox:1.36"), true},
		{"another image", spec("busybox:1.37"), false},
		{"other resources (an in-place resize)", func() *v1.Container {
			c := spec("busybox:1.36")
			c.Resources.Limits = v1.ResourceList{v1.ResourceCPU: resource.MustParse("200m")}
			return c
		}(), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := HashContainer(c.c)
			if got != hashSpec(c.c) {
				t.Errorf("HashContainer = %x, the spec's hash is %x", got, hashSpec(c.c))
			}
			if (got == first) != c.same {
				t.Errorf("hash %x against the first's %x: equal %v, want %v", got, first, got == first, c.same)
			}
		})
	}
}

// The table of hashes does not grow with every container ever hashed: those of removed
// pods (collected) are dropped.
func TestHashContainerForgetsCollectedContainers(t *testing.T) {
	hashMany := func(n int) {
		for i := 0; i < n; i++ {
			HashContainer(&v1.Container{Name: "app", Image: "busybox"})
		}
	}
	hashMany(10 * minSweep)
	runtime.GC()
	hashMany(4 * minSweep)
	if held := hashesHeld(); held > 8*minSweep {
		t.Errorf("%d containers remembered after hashing 14 x %d that were all dropped", held, minSweep)
	}
}
