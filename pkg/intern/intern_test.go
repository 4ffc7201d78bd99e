package intern

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/minikubelet/minikubelet/pkg/cri"
)

func same[M any](a, b M) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

func TestResourceList(t *testing.T) {
	list := func(kv ...string) v1.ResourceList {
		l := v1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			l[v1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		return l
	}
	first := ResourceList(list("cpu", "10m", "memory", "16Mi"))
	for _, c := range []struct {
		name  string
		l     v1.ResourceList
		share bool
	}{
		{"equal", list("memory", "16Mi", "cpu", "10m"), true},
		{"equal, written differently", list("cpu", "0.01", "memory", "16Mi"), true},
		{"another quantity", list("cpu", "20m", "memory", "16Mi"), false},
		{"another format of the same amount", list("cpu", "10m", "memory", "16777216"), false},
		{"a name fewer", list("cpu", "10m"), false},
		{"a name more", list("cpu", "10m", "memory", "16Mi", "ephemeral-storage", "1Gi"), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := ResourceList(c.l)
			if !same(got, c.l) && !same(got, first) {
				t.Fatalf("ResourceList returned a third list")
			}
			if same(got, first) != c.share {
				t.Errorf("shared with the first: %v, want %v", same(got, first), c.share)
			}
			if !resourceListsEqual(got, c.l) {
				t.Errorf("ResourceList(%v) = %v, not equal", c.l, got)
			}
		})
	}
	if empty := (v1.ResourceList{}); !same(ResourceList(empty), empty) {
		t.Error("an empty list was replaced")
	}
	if ResourceList(nil) != nil {
		t.Error("nil became a list")
	}
}

func resourceListsEqual(a, b v1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for name, q := range a {
		o, ok := b[name]
		if !ok || q.String() != o.String() {
			return false
		}
	}
	return true
}

func TestStringMap(t *testing.T) {
	first := StringMap(map[string]string{"io.kubernetes.container.hash": "1a2b", "io.kubernetes.container.restartCount": "0"})
	for _, c := range []struct {
		name  string
		m     map[string]string
		share bool
	}{
		{"equal", map[string]string{"io.kubernetes.container.restartCount": "0", "io.kubernetes.container.hash": "1a2b"}, true},
		{"another value", map[string]string{"io.kubernetes.container.hash": "1a2b", "io.kubernetes.container.restartCount": "1"}, false},
		{"a key fewer", map[string]string{"io.kubernetes.container.hash": "1a2b"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := StringMap(c.m)
			if same(got, first) != c.share {
				t.Errorf("shared with the first: %v, want %v", same(got, first), c.share)
			}
			if !reflect.DeepEqual(got, c.m) {
				t.Errorf("StringMap(%v) = %v", c.m, got)
			}
		})
	}
	// Keys and values are delimited by their lengths, not by a character they may hold.
	a := StringMap(map[string]string{"a": "b\x00\x01c"})
	b := StringMap(map[string]string{"a\x00\x01b": "c"})
	if same(a, b) {
		t.Error("two different maps were given the same key")
	}
}

// Past the bound, lists are returned as they are and the table stops growing.
func TestTablesAreBounded(t *testing.T) {
	t.Cleanup(emptyTables) // full tables intern nothing new: the other tests' lists
	for i := int64(0); i < MaxResourceLists+10; i++ {
		ResourceList(v1.ResourceList{v1.ResourceCPU: *resource.NewMilliQuantity(1000000+i, resource.DecimalSI)})
	}
	if held := resourceListsCount(); int64(held) > MaxResourceLists {
		t.Errorf("%d resource lists held, bound %d", held, MaxResourceLists)
	}
	for i := int64(0); i < MaxStringMaps+10; i++ {
		StringMap(map[string]string{"k": fmt.Sprint(i)})
	}
	if held := stringMapsCount(); int64(held) > MaxStringMaps {
		t.Errorf("%d string maps held, bound %d", held, MaxStringMaps)
	}
	for i := int64(0); i < MaxContainerUsers+10; i++ {
		ContainerUser(&cri.ContainerUser{UID: i})
	}
	if held := containerUsersCount(); int64(held) > MaxContainerUsers {
		t.Errorf("%d container users held, bound %d", held, MaxContainerUsers)
	}
}

// TestContainerUser: equal users share one API value; any difference in the ids or the
// groups (their order too: it is the kernel's) makes another.
func TestContainerUser(t *testing.T) {
	if ContainerUser(nil) != nil {
		t.Fatal("nil became a user")
	}
	first := ContainerUser(&cri.ContainerUser{UID: 1000, GID: 1000, SupplementalGroups: []int64{1000, 50000, 60000}})
	want := &v1.ContainerUser{Linux: &v1.LinuxContainerUser{UID: 1000, GID: 1000, SupplementalGroups: []int64{1000, 50000, 60000}}}
	if !reflect.DeepEqual(first, want) {
		t.Fatalf("ContainerUser = %+v, want %+v", first.Linux, want.Linux)
	}
	for _, c := range []struct {
		name  string
		u     cri.ContainerUser
		share bool
	}{
		{"equal", cri.ContainerUser{UID: 1000, GID: 1000, SupplementalGroups: []int64{1000, 50000, 60000}}, true},
		{"another uid", cri.ContainerUser{UID: 1001, GID: 1000, SupplementalGroups: []int64{1000, 50000, 60000}}, false},
		{"another gid", cri.ContainerUser{UID: 1000, GID: 0, SupplementalGroups: []int64{1000, 50000, 60000}}, false},
		{"a group fewer", cri.ContainerUser{UID: 1000, GID: 1000, SupplementalGroups: []int64{1000, 60000}}, false},
		{"groups reordered", cri.ContainerUser{UID: 1000, GID: 1000, SupplementalGroups: []int64{1000, 60000, 50000}}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			u := c.u
			got := ContainerUser(&u)
			if (got == first) != c.share {
				t.Errorf("shared with the first: %v, want %v", got == first, c.share)
			}
			if got.Linux.UID != u.UID || got.Linux.GID != u.GID || !slices.Equal(got.Linux.SupplementalGroups, u.SupplementalGroups) {
				t.Errorf("ContainerUser(%+v) = %+v", u, got.Linux)
			}
		})
	}
}

func TestPodResources(t *testing.T) {
	pod := func() *v1.Pod {
		req := func() v1.ResourceList {
			return v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m"), v1.ResourceMemory: resource.MustParse("300Mi")}
		}
		return &v1.Pod{Spec: v1.PodSpec{
			InitContainers: []v1.Container{{Name: "init", Resources: v1.ResourceRequirements{Requests: req()}}},
			Containers:     []v1.Container{{Name: "app", Resources: v1.ResourceRequirements{Requests: req(), Limits: req()}}},
			Overhead:       v1.ResourceList{v1.ResourcePods: resource.MustParse("3")},
		}}
	}
	a, b := pod(), pod()
	PodResources(a)
	PodResources(b)
	for _, c := range []struct {
		name string
		x, y v1.ResourceList
	}{
		{"init requests", a.Spec.InitContainers[0].Resources.Requests, b.Spec.InitContainers[0].Resources.Requests},
		{"app requests", a.Spec.Containers[0].Resources.Requests, b.Spec.Containers[0].Resources.Requests},
		{"app limits", a.Spec.Containers[0].Resources.Limits, b.Spec.Containers[0].Resources.Limits},
		{"app requests and limits", a.Spec.Containers[0].Resources.Requests, a.Spec.Containers[0].Resources.Limits},
		{"overhead", a.Spec.Overhead, b.Spec.Overhead},
	} {
		if !same(c.x, c.y) {
			t.Errorf("%s: two lists where one is shared", c.name)
		}
	}
}

func emptyTables() {
	resourceLists.Clear()
	resourceListsHeld.Store(0)
	stringMaps.Clear()
	stringMapsHeld.Store(0)
	specParts.Clear()
	specPartsHeld.Store(0)
	containerUsers.Clear()
	containerUsersHeld.Store(0)
}

func TestPodSpec(t *testing.T) {
	// pod is a final static pod as the file source makes it from a manifest: image and
	// command are what the variants change.
	pod := func(image string, command ...string) *v1.Pod {
		grace := int64(30)
		return &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "web-" + image, UID: types.UID(image)},
			Spec: v1.PodSpec{
				Containers: []v1.Container{
					{Name: "app", Image: image, Command: command, TerminationMessagePath: "/dev/termination-log",
						Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("10m")}}},
					{Name: "side", Image: "busybox", Command: []string{"sleep", "infinity"}},
				},
				Tolerations:                   []v1.Toleration{{Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}},
				SecurityContext:               &v1.PodSecurityContext{},
				TerminationGracePeriodSeconds: &grace,
			},
		}
	}
	a, b := pod("nginx"), pod("nginx")
	PodSpec(a)
	PodSpec(b)
	for _, c := range []struct {
		name string
		x, y any
	}{
		{"containers", a.Spec.Containers, b.Spec.Containers},
		{"tolerations", a.Spec.Tolerations, b.Spec.Tolerations},
		{"security context", a.Spec.SecurityContext, b.Spec.SecurityContext},
	} {
		if !same(c.x, c.y) {
			t.Errorf("%s: two where one is shared", c.name)
		}
	}
	if a.Spec.InitContainers != nil {
		t.Error("no init containers became a list")
	}
	for _, c := range []struct {
		name string
		pod  *v1.Pod
	}{
		{"another image", pod("httpd")},
		{"another command", pod("nginx", "nginx", "-g", "daemon off;")},
	} {
		t.Run(c.name, func(t *testing.T) {
			want := c.pod.DeepCopy()
			PodSpec(c.pod)
			if same(c.pod.Spec.Containers, a.Spec.Containers) {
				t.Error("shares containers with a pod whose containers differ")
			}
			if !reflect.DeepEqual(c.pod.Spec, want.Spec) {
				t.Errorf("the spec changed: %v, want %v", c.pod.Spec, want.Spec)
			}
			if !same(c.pod.Spec.Tolerations, a.Spec.Tolerations) {
				t.Error("equal tolerations are not shared")
			}
		})
	}
}

func TestSpecPartsAreBounded(t *testing.T) {
	t.Cleanup(emptyTables)
	for i := int64(0); i < MaxSpecParts+10; i++ {
		p := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: fmt.Sprintf("image:%d", i)}}}}
		want := p.Spec.Containers
		PodSpec(p)
		if i >= MaxSpecParts && !same(p.Spec.Containers, want) {
			t.Fatalf("containers %d were replaced past the bound", i)
		}
	}
	if held := specPartsCount(); int64(held) > MaxSpecParts {
		t.Errorf("%d spec parts held, bound %d", held, MaxSpecParts)
	}
}

// TestValues: equal values share one copy, different ones do not, and past the bound a
// value gets a copy of its own.
func TestValues(t *testing.T) {
	type res struct{ cpu, mem int64 }
	tests := []struct {
		name      string
		bound     int64
		first     res
		second    res
		wantShare bool
	}{
		{"equal", 0, res{100, 64}, res{100, 64}, true},
		{"different", 0, res{100, 64}, res{200, 64}, false},
		{"past the bound", 1, res{1, 1}, res{100, 64}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Values[res]{Bound: tt.bound}
			a := v.Share(tt.first)
			b := v.Share(tt.second)
			if (a == b) != tt.wantShare || *a != tt.first || *b != tt.second {
				t.Errorf("Share(%v), Share(%v) = %p %v, %p %v; want shared %t", tt.first, tt.second, a, *a, b, *b, tt.wantShare)
			}
			if tt.bound == 1 {
				if c := v.Share(tt.second); c == b {
					t.Error("a value past the bound was stored")
				}
			}
		})
	}
}
