package cgroupfs

import (
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/minikubelet/minikubelet/pkg/vfs"
)

func u64(v uint64) *uint64 { return &v }
func i64(v int64) *int64   { return &v }

// mounted is a tree bound at /sys/fs/cgroup of a node's filesystem.
func mounted(t *testing.T) (*Tree, *vfs.View) {
	t.Helper()
	tr := New()
	fs := vfs.New(func() time.Time { return time.Unix(0, 0) })
	if err := tr.Mount(fs, "/sys/fs/cgroup"); err != nil {
		t.Fatal(err)
	}
	return tr, fs
}

func read(t *testing.T, fs *vfs.View, p string) string {
	t.Helper()
	b, err := fs.ReadFile(p)
	if err != nil {
		t.Fatalf("ReadFile(%q): %v", p, err)
	}
	return string(b)
}

func TestRender(t *testing.T) {
	tests := []struct {
		name string
		c    Config
		want map[string]string
	}{
		{"unset", Config{}, map[string]string{"cpu.max": "max 100000\n", "cpu.weight": "100\n", "memory.max": "max\n"}},
		{"limits", Config{CPUShares: u64(512), CPUQuota: i64(50000), CPUPeriod: u64(100000), MemoryMax: i64(256 << 20)},
			map[string]string{"cpu.max": "50000 100000\n", "cpu.weight": "59\n", "memory.max": "268435456\n"}},
		{"no quota, a period", Config{CPUQuota: i64(0), CPUPeriod: u64(50000)}, map[string]string{"cpu.max": "max 50000\n"}},
		{"quota -1", Config{CPUQuota: i64(-1)}, map[string]string{"cpu.max": "max 100000\n"}},
		{"minimum shares", Config{CPUShares: u64(2)}, map[string]string{"cpu.weight": "1\n"}},
		{"zero shares are unset", Config{CPUShares: u64(0)}, map[string]string{"cpu.weight": "100\n"}},
		{"default shares", Config{CPUShares: u64(1024)}, map[string]string{"cpu.weight": "100\n"}},
		{"memory in whole pages", Config{MemoryMax: i64(100_000_000)}, map[string]string{"memory.max": "99999744\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, fs := mounted(t)
			tr.Set("/kubepods/burstable/podabc/ctr", tt.c)
			got := map[string]string{}
			for f := range tt.want {
				got[f] = read(t, fs, "/sys/fs/cgroup/kubepods/burstable/podabc/ctr/"+f)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("files (-want +got):\n%s", d)
			}
		})
	}
}

func TestSharesToWeight(t *testing.T) {
	for shares, want := range map[uint64]uint64{0: 0, 1: 1, 2: 1, 102: 17, 512: 59, 1024: 100, 2048: 174, 262144: 10000, 1 << 20: 10000} {
		if got := SharesToWeight(shares); got != want {
			t.Errorf("SharesToWeight(%d) = %d, want %d", shares, got, want)
		}
	}
}

func TestSetGetRemove(t *testing.T) {
	tr, fs := mounted(t)
	tr.Set("/kubepods/burstable/pod1/c1", Config{MemoryMax: i64(1 << 20)})
	// Updates show at the next read, without rewriting anything.
	tr.Set("kubepods/burstable/pod1/c1/", Config{MemoryMax: i64(2 << 20)})
	if got := read(t, fs, "/sys/fs/cgroup/kubepods/burstable/pod1/c1/memory.max"); got != "2097152\n" {
		t.Errorf("memory.max after update = %q", got)
	}
	tests := []struct {
		path   string
		want   Config
		wantOK bool
	}{
		{"/kubepods/burstable/pod1/c1", Config{MemoryMax: i64(2 << 20)}, true},
		{"/kubepods/burstable/pod1", Config{}, true}, // made as a parent
		{"/kubepods", Config{}, true},
		{"/kubepods/besteffort", Config{}, false},
	}
	for _, tt := range tests {
		got, ok := tr.Get(tt.path)
		if ok != tt.wantOK || !cmp.Equal(got, tt.want) {
			t.Errorf("Get(%q) = %+v, %v; want %+v, %v", tt.path, got, ok, tt.want, tt.wantOK)
		}
	}
	if err := tr.Remove("/kubepods/burstable/pod1"); !errors.Is(err, ErrBusy) {
		t.Errorf("Remove(a parent) = %v, want ErrBusy", err)
	}
	if err := tr.Remove("/kubepods/burstable/pod1/c1"); err != nil {
		t.Fatal(err)
	}
	if err := tr.Remove("/kubepods/burstable/pod1/c1"); err != nil {
		t.Errorf("Remove(missing) = %v, want nil", err)
	}
	if _, err := fs.Stat("/sys/fs/cgroup/kubepods/burstable/pod1/c1"); !errors.Is(err, vfs.ENOENT) {
		t.Errorf("Stat(removed) = %v, want ENOENT", err)
	}
	if err := tr.Remove("/kubepods/burstable/pod1"); err != nil {
		t.Errorf("Remove(a leaf now) = %v", err)
	}
	names, err := fs.ReadDirNames("/sys/fs/cgroup/kubepods/burstable")
	if err != nil || len(names) != 4 {
		t.Errorf("ReadDirNames(burstable) = %v, %v; want its 4 files", names, err)
	}
	if info, err := fs.Stat("/sys/fs/cgroup"); err != nil || info.FSType != "cgroup2" {
		t.Errorf("Stat(/sys/fs/cgroup) = %+v, %v; want fstype cgroup2", info, err)
	}
	if tr.Node("/kubepods") == nil || tr.Node("/nope") != nil {
		t.Error("Node: want /kubepods's directory and nil for a missing cgroup")
	}
}

// TestNodeIsTheContainersRoot: a container's view binds its cgroup's directory at its
// own /sys/fs/cgroup (a cgroup namespace).
func TestNodeIsTheContainersRoot(t *testing.T) {
	tr, node := mounted(t)
	tr.Set("/kubepods/pod1/c1", Config{CPUQuota: i64(20000)})
	ctr := vfs.NewView(node, nil, false)
	ctr.BindNode("/sys/fs/cgroup", tr.Node("/kubepods/pod1/c1"), true)
	if got := read(t, ctr, "/sys/fs/cgroup/cpu.max"); got != "20000 100000\n" {
		t.Errorf("cpu.max = %q", got)
	}
	tr.Set("/kubepods/pod1/c1", Config{CPUQuota: i64(40000)})
	if got := read(t, ctr, "/sys/fs/cgroup/cpu.max"); got != "40000 100000\n" {
		t.Errorf("cpu.max after update = %q", got)
	}
}

func TestMemoryCurrent(t *testing.T) {
	tr, fs := mounted(t)
	tr.Set("/kubepods/pod1/a", Config{})
	tr.Set("/kubepods/pod1/b", Config{})
	tr.Set("/kubepods/pod2/c", Config{})
	tr.SetUsage("/kubepods/pod1/a", func() int64 { return 100 })
	tr.SetUsage("/kubepods/pod1/b", func() int64 { return 20 })
	tr.SetUsage("/kubepods/pod2/c", func() int64 { return 3 })
	for p, want := range map[string]string{"kubepods/pod1/a": "100\n", "kubepods/pod1": "120\n", "kubepods": "123\n", "kubepods/pod2": "3\n"} {
		if got := read(t, fs, "/sys/fs/cgroup/"+p+"/memory.current"); got != want {
			t.Errorf("%s/memory.current = %q, want %q", p, got, want)
		}
	}
}

// BenchmarkSet is the cost of a new cgroup: a pod's or a container's.
func BenchmarkSet(b *testing.B) {
	tr := New()
	fs := vfs.New(nil)
	if err := tr.Mount(fs, "/sys/fs/cgroup"); err != nil {
		b.Fatal(err)
	}
	paths := make([]string, b.N)
	for i := range paths {
		paths[i] = fmt.Sprintf("/kubepods/burstable/pod%08d", i)
	}
	c := Config{CPUShares: u64(102), CPUQuota: i64(50000), CPUPeriod: u64(100000), MemoryMax: i64(1 << 28)}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tr.Set(paths[i], c)
	}
	b.StopTimer()
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(tr)
	// What a cgroup keeps: its record, directory and files, and its entries in the tree.
	b.ReportMetric(float64(int64(after.HeapInuse)-int64(before.HeapInuse))/float64(b.N), "heap-B/cgroup")
}

// TestConcurrentUse: the kubelet and the runtime change the tree while programs walk and
// read it (run with -race).
func TestConcurrentUse(t *testing.T) {
	tr, fs := mounted(t)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 200; i++ {
			p := fmt.Sprintf("/kubepods/pod%d/c", i%5)
			tr.Set(p, Config{MemoryMax: i64(int64(i+1) << 20)})
			tr.SetUsage(p, func() int64 { return 1 })
			if i%3 == 0 {
				_ = tr.Remove(p)
			}
		}
	}()
	for i := 0; i < 200; i++ {
		names, _ := fs.ReadDirNames("/sys/fs/cgroup/kubepods")
		for _, n := range names {
			_, _ = fs.ReadFile("/sys/fs/cgroup/kubepods/" + n + "/c/memory.max")
			_, _ = fs.ReadFile("/sys/fs/cgroup/kubepods/" + n + "/memory.current")
		}
		_, _ = tr.Get("/kubepods/pod1/c")
	}
	<-done
}

// TestSharedLeaves: cgroups set alike with nothing below them share one frozen directory,
// yet each reads its own settings as they change, and one that gets a child, a usage
// function or a view of its own stops sharing without the others noticing.
func TestSharedLeaves(t *testing.T) {
	tests := []struct {
		name   string
		change func(tr *Tree)
		a, b   map[string]string // what pod a's and pod b's files read after change
	}{
		{"alike", func(*Tree) {}, map[string]string{"memory.max": "1048576\n", "memory.current": "0\n"}, map[string]string{"memory.max": "1048576\n"}},
		{"one updated", func(tr *Tree) { tr.Set("/kubepods/poda", Config{MemoryMax: i64(2 << 20)}) },
			map[string]string{"memory.max": "2097152\n"}, map[string]string{"memory.max": "1048576\n"}},
		{"one with a child", func(tr *Tree) {
			tr.Set("/kubepods/poda/c", Config{})
			tr.SetUsage("/kubepods/poda/c", func() int64 { return 7 })
		}, map[string]string{"memory.current": "7\n", "memory.max": "1048576\n"}, map[string]string{"memory.current": "0\n"}},
		{"one with usage", func(tr *Tree) { tr.SetUsage("/kubepods/poda", func() int64 { return 9 }) },
			map[string]string{"memory.current": "9\n"}, map[string]string{"memory.current": "0\n"}},
		{"one handed out, then updated", func(tr *Tree) {
			tr.Node("/kubepods/poda")
			tr.Set("/kubepods/poda", Config{MemoryMax: i64(4 << 20)})
		}, map[string]string{"memory.max": "4194304\n"}, map[string]string{"memory.max": "1048576\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, fs := mounted(t)
			tr.Set("/kubepods/poda", Config{MemoryMax: i64(1 << 20)})
			tr.Set("/kubepods/podb", Config{MemoryMax: i64(1 << 20)})
			if tr.groups["/kubepods/poda"].dir != tr.groups["/kubepods/podb"].dir {
				t.Fatal("two cgroups set alike do not share their directory")
			}
			tt.change(tr)
			for pod, want := range map[string]map[string]string{"poda": tt.a, "podb": tt.b} {
				for file, w := range want {
					if got := read(t, fs, "/sys/fs/cgroup/kubepods/"+pod+"/"+file); got != w {
						t.Errorf("%s/%s = %q, want %q", pod, file, got, w)
					}
				}
			}
		})
	}
}

// TestNamedCgroups: containers' cgroups (a usage function each, a view bound to each) are
// directories of their own listing one template's entries; each reads its own usage and
// settings, through the node's view and through its own, as they change; one that gets a
// child takes a table of its own and stays the directory its view is bound to; a write
// through the node's filesystem into one changes no other.
func TestNamedCgroups(t *testing.T) {
	const a, b = "/kubepods/pod1/a", "/kubepods/pod1/b"
	tests := []struct {
		name   string
		change func(t *testing.T, tr *Tree, node *vfs.View)
		// what a's and b's files read after change, through the node's view (and a's view
		// when the file is a's)
		a, b map[string]string
	}{
		{"alike", func(*testing.T, *Tree, *vfs.View) {},
			map[string]string{"memory.current": "100\n", "memory.max": "1048576\n", "cpu.max": "max 100000\n"},
			map[string]string{"memory.current": "20\n", "memory.max": "1048576\n"}},
		{"one resized", func(_ *testing.T, tr *Tree, _ *vfs.View) { tr.Set(a, Config{MemoryMax: i64(2 << 20)}) },
			map[string]string{"memory.max": "2097152\n", "memory.current": "100\n"},
			map[string]string{"memory.max": "1048576\n", "memory.current": "20\n"}},
		{"one with a child", func(_ *testing.T, tr *Tree, _ *vfs.View) {
			tr.Set(a+"/sub", Config{})
			tr.SetUsage(a+"/sub", func() int64 { return 5 })
			tr.Set(a, Config{MemoryMax: i64(3 << 20)})
		}, map[string]string{"memory.current": "100\n", "memory.max": "3145728\n", "sub/memory.current": "5\n"},
			map[string]string{"memory.current": "20\n", "memory.max": "1048576\n"}},
		{"a file written through the node", func(t *testing.T, _ *Tree, node *vfs.View) {
			if err := node.WriteFile("/sys/fs/cgroup"+a+"/memory.max", []byte("max\n"), 0o644, false, 0, 0); err != nil {
				t.Fatal(err)
			}
		}, map[string]string{"memory.max": "max\n"}, map[string]string{"memory.max": "1048576\n", "memory.current": "20\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, node := mounted(t)
			for p, use := range map[string]int64{a: 100, b: 20} {
				tr.Set(p, Config{MemoryMax: i64(1 << 20)})
				tr.SetUsage(p, func() int64 { return use })
			}
			view := vfs.NewView(node, nil, false)
			view.BindNode("/sys/fs/cgroup", tr.Node(a), true)
			ga, gb := tr.groups[a], tr.groups[b]
			if ga.dir == gb.dir || len(tr.named) != 1 {
				t.Fatalf("containers' cgroups: %d templates, directories shared %v; want one template, a directory each", len(tr.named), ga.dir == gb.dir)
			}
			tt.change(t, tr, node)
			for p, want := range map[string]map[string]string{a: tt.a, b: tt.b} {
				for file, w := range want {
					if got := read(t, node, "/sys/fs/cgroup"+p+"/"+file); got != w {
						t.Errorf("the node reads %s/%s = %q, want %q", p, file, got, w)
					}
				}
			}
			for file, w := range tt.a {
				if got := read(t, view, "/sys/fs/cgroup/"+file); got != w {
					t.Errorf("a's view reads %s = %q, want %q", file, got, w)
				}
			}
			if err := tr.Remove(b); err != nil {
				t.Fatal(err)
			}
			if _, ok := tr.byDir[gb.dir]; ok {
				t.Error("a removed cgroup is still known by its directory")
			}
		})
	}
}
