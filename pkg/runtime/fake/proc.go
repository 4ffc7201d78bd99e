package fake

import (
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"

	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/vfs"
)

// A container's /proc is one tree shared by every container with the same masked and
// read-only paths (the CRI's MaskedPaths and ReadonlyPaths, runc's maskedPaths and
// readonlyPaths): the process's own files (/proc/self/status, /proc/mounts, ...) are
// generated from the container whose view reads them (vfs.View.SetContext), as one procfs
// shows each process its own /proc/self. A container costs its /proc nothing: 10,000 pods'
// containers each held a /proc of their own, about a kilobyte.

// containerdMaskedPaths and containerdReadonlyPaths are what containerd masks and makes
// read-only when the CRI request gives no list (its default OCI spec).
var (
	containerdMaskedPaths = []string{"/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
		"/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi", "/sys/firmware", "/sys/devices/virtual/powercap"}
	containerdReadonlyPaths = []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}
)

// kernelProc are the simulated kernel's /proc entries that are the same for every process:
// those masked or read-only by default, with what an unmasked container reads in them. A
// directory is a name ending in '/', with its files.
var kernelProc = []struct {
	name    string
	content string
	perm    fs.FileMode
	files   map[string]string
}{
	{name: "acpi/", perm: 0o555, files: map[string]string{"wakeup": "Device\tS-state\t  Status   Sysfs node\n"}},
	{name: "bus/", perm: 0o555, files: map[string]string{"input/devices": ""}},
	{name: "fs/", perm: 0o555, files: map[string]string{"nfsd/": ""}},
	{name: "interrupts", perm: 0o444, content: "           CPU0       CPU1       \n  0:         42          0   IO-APIC   2-edge      timer\nNMI:          0          0   Non-maskable interrupts\n"},
	{name: "irq/", perm: 0o555, files: map[string]string{"default_smp_affinity": "3\n"}},
	{name: "kcore", perm: 0o400, content: "\x7fELF\x02\x01\x01\x00"},
	{name: "keys", perm: 0o444, content: "0b1d2c3e I--Q---     1 perm 1f3f0000     0 65534 keyring   _uid_ses.0: 1\n"},
	{name: "scsi/", perm: 0o555, files: map[string]string{"scsi": "Attached devices:\n"}},
	{name: "sysrq-trigger", perm: 0o200, content: ""},
	{name: "timer_list", perm: 0o444, content: "Timer List Version: v0.9\nHRTIMER_MAX_CLOCK_BASES: 8\nnow at 0 nsecs\n"},
}

// procTree is a shared /proc: its tree, and the masked and read-only paths that were
// applied to it (those of the lists that exist in the simulated kernel, in the lists'
// order), which /proc/mounts lists as runc mounted them.
type procTree struct {
	root             *vfs.Node
	readonly, masked []string
	// sysWritable: /proc/sys is not read-only (privileged, or not in the read-only list).
	sysWritable bool
}

// procLocked gives c its /proc, read-only, and the sandbox's /proc/sys under it,
// read-only unless privileged or left out of the read-only paths, as runc mounts them.
func (r *Runtime) procLocked(c *ctr, view *vfs.View, sec *cri.SecurityContext) {
	t := r.procTreeLocked(sec)
	if ns := r.userns[c.sb]; ns != nil {
		view.SetContext(&usernsContainer{ctr: c, ns: ns})
	} else {
		view.SetContext(c)
	}
	view.BindNode("/proc", t.root, true)
	view.BindNode("/proc/sys", c.sb.sysctlRoot(), !t.sysWritable)
}

// procTreeLocked returns the /proc of a container with sec (nil: containerd's defaults),
// made the first time it is asked for. A privileged container has no masked or read-only
// paths (containerd drops them); a list the kubelet did not give is containerd's default;
// an empty one (procMount: Unmasked) masks nothing.
func (r *Runtime) procTreeLocked(sec *cri.SecurityContext) *procTree {
	masked, readonly := containerdMaskedPaths, containerdReadonlyPaths
	if sec != nil {
		if sec.MaskedPaths != nil {
			masked = sec.MaskedPaths
		}
		if sec.ReadonlyPaths != nil {
			readonly = sec.ReadonlyPaths
		}
		if sec.Privileged {
			masked, readonly = nil, nil
		}
	}
	key := strings.Join(masked, "\x00") + "\x01" + strings.Join(readonly, "\x00")
	if t := r.procTrees[key]; t != nil {
		return t
	}
	t := r.newProcTree(masked, readonly)
	if r.procTrees == nil {
		r.procTrees = map[string]*procTree{}
	}
	r.procTrees[key] = t
	return t
}

// newProcTree builds a /proc with masked and readonly applied: a masked file reads as
// /dev/null bound over it does (empty), a masked directory is an empty read-only tmpfs.
func (r *Runtime) newProcTree(masked, readonly []string) *procTree {
	t := &procTree{sysWritable: !slices.Contains(readonly, "/proc/sys")}
	root := vfs.NewDir(0o555)
	root.Add("mounts", vfs.NewGenerated(func(ctx any) []byte {
		c, _ := procContainer(ctx)
		if c == nil {
			return nil
		}
		return r.procMounts(c, t)
	}, 0o444))
	// The node's uptime and load: it booted when the runtime started; the simulated
	// kernel keeps no run queue, so its load is none.
	root.Add("uptime", vfs.NewGenerated(func(any) []byte {
		up := float64(r.now()-r.bootedAt) / 1e9
		return fmt.Appendf(nil, "%.2f %.2f\n", up, up*float64(r.nodeCPUs()))
	}, 0o444))
	root.Add("loadavg", vfs.NewGenerated(func(any) []byte {
		return []byte("0.00 0.00 0.00 1/1 1\n")
	}, 0o444))
	pid1 := vfs.NewDir(0o555)
	pid1.Add("status", vfs.NewGenerated(func(ctx any) []byte {
		c, _ := procContainer(ctx)
		if c == nil || c.proc == nil {
			return nil
		}
		return procStatus(comm(c.argv), c.proc.id, r.nodeCPUs())
	}, 0o444))
	pid1.Add("oom_score_adj", vfs.NewGenerated(func(ctx any) []byte {
		c, _ := procContainer(ctx)
		if c == nil || c.mem == nil {
			return nil
		}
		return []byte(strconv.FormatInt(c.mem.OOMScoreAdj(), 10) + "\n")
	}, 0o644))
	// The pod's user namespace, as the process's ID maps show it (the e2e specs read
	// /proc/self/uid_map): the node's identity map, or the pod's range.
	pid1.Add("uid_map", vfs.NewGenerated(func(ctx any) []byte {
		if _, ns := procContainer(ctx); ns != nil {
			return idMap(ns.UIDs)
		}
		return idMap(nil)
	}, 0o644))
	pid1.Add("gid_map", vfs.NewGenerated(func(ctx any) []byte {
		if _, ns := procContainer(ctx); ns != nil {
			return idMap(ns.GIDs)
		}
		return idMap(nil)
	}, 0o644))
	root.Add("1", pid1)
	root.Add("self", pid1)
	root.Add("sys", vfs.NewDir(0o555)) // where the sandbox's /proc/sys is bound
	for _, p := range readonly {
		if name, ok := strings.CutPrefix(p, "/proc/"); ok && kernelProcEntry(name) != "" {
			t.readonly = append(t.readonly, p)
		} else if p == "/proc/sys" {
			t.readonly = append(t.readonly, p)
		}
	}
	for _, e := range kernelProc {
		name := strings.TrimSuffix(e.name, "/")
		dir := name != e.name
		if slices.Contains(masked, "/proc/"+name) {
			t.masked = append(t.masked, "/proc/"+name)
			if dir {
				root.Add(name, vfs.NewDir(0o1777)) // an empty tmpfs, mounted read-only
			} else {
				root.Add(name, vfs.NewFile(nil, 0o666)) // /dev/null
			}
			continue
		}
		if !dir {
			root.Add(name, vfs.NewFile([]byte(e.content), e.perm))
			continue
		}
		d := vfs.NewDir(e.perm)
		for file, content := range e.files {
			if sub, ok := strings.CutSuffix(file, "/"); ok {
				d.Dir(sub)
				continue
			}
			parent := d
			if i := strings.LastIndexByte(file, '/'); i >= 0 {
				parent, file = d.Dir(file[:i]), file[i+1:]
			}
			parent.Add(file, vfs.NewFile([]byte(content), 0o444))
		}
		root.Add(name, d)
	}
	// The masked paths in the order runc masks them: the list's.
	slices.SortStableFunc(t.masked, func(a, b string) int { return slices.Index(masked, a) - slices.Index(masked, b) })
	root.Freeze()
	t.root = root
	return t
}

// procMounts is /proc/mounts of container c with /proc t: its root, procfs, its cgroup at
// /sys/fs/cgroup when it has one, the kubelet's mounts, then the read-only and masked paths
// of /proc as runc mounts them after the rest (read-only: procfs again, ro; masked: a file
// has /dev/null of the container's /dev tmpfs bound over it, a directory a read-only
// tmpfs), as `mount` lists them.
func (r *Runtime) procMounts(c *ctr, t *procTree) []byte {
	var b strings.Builder
	b.WriteString("overlay / overlay rw,relatime 0 0\n")
	b.WriteString("proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0\n")
	if c.cgroup {
		// runc mounts it from source "cgroup", read-only unless privileged.
		b.WriteString("cgroup " + CgroupRoot + " cgroup2 ro,nosuid,nodev,noexec,relatime 0 0\n")
	}
	for _, m := range c.mounts {
		typ, dev := "ext4", "/dev/vda1"
		if strings.HasPrefix(m.HostPath, imageVolumeDir+"/") {
			typ, dev = "overlay", "overlay" // an image volume: its snapshot, as containerd mounts it
		} else if t := r.fsTypeAt(m.HostPath); t != "" {
			typ, dev = t, t
		}
		if typ == "cgroup2" {
			dev = "cgroup" // the node's hierarchy, bound by a hostPath volume
		}
		opts := "rw,relatime"
		if m.Readonly {
			opts = "ro,relatime"
		}
		fmt.Fprintf(&b, "%s %s %s %s 0 0\n", dev, mountEscaper.Replace(m.ContainerPath), typ, opts)
	}
	for _, p := range t.readonly {
		b.WriteString("proc " + p + " proc ro,nosuid,nodev,noexec,relatime 0 0\n")
	}
	for _, p := range t.masked {
		if strings.HasSuffix(kernelProcEntry(strings.TrimPrefix(p, "/proc/")), "/") {
			b.WriteString("tmpfs " + p + " tmpfs ro,relatime 0 0\n")
		} else {
			b.WriteString("tmpfs " + p + " tmpfs rw,nosuid,size=65536k,mode=755 0 0\n")
		}
	}
	return []byte(b.String())
}

// kernelProcEntry is name's entry of kernelProc as written there ("acpi/" for a
// directory), "" when there is none.
func kernelProcEntry(name string) string {
	for _, e := range kernelProc {
		if strings.TrimSuffix(e.name, "/") == name {
			return e.name
		}
	}
	return ""
}

// handler returns the runtime's handler of that name ("" is the default), and whether it
// has one.
func (r *Runtime) handler(name string) (cri.RuntimeHandler, bool) {
	for _, h := range r.handlers {
		if h.Name == name {
			return h, true
		}
	}
	return cri.RuntimeHandler{}, false
}

// usernsContainer is the context of the view of a container whose pod has a user
// namespace of its own: its /proc/self/uid_map and gid_map are the namespace's. Made only
// for such containers; the others' context is the container itself.
type usernsContainer struct {
	*ctr
	ns *cri.UserNamespace
}

// procContainer is the container a view's context stands for, and its pod's user
// namespace (nil: the node's).
func procContainer(ctx any) (*ctr, *cri.UserNamespace) {
	switch c := ctx.(type) {
	case *ctr:
		return c, nil
	case *usernsContainer:
		return c.ctr, c.ns
	}
	return nil, nil
}

// idMap is /proc/<pid>/uid_map or gid_map: one "ID-inside ID-outside length" line per
// mapping, each number right-aligned in 10 columns as the kernel prints them; in the
// node's namespace the identity of every 32-bit ID.
func idMap(ms []cri.IDMapping) []byte {
	if ms == nil {
		return []byte(fmt.Sprintf("%10d %10d %10d\n", 0, 0, uint64(1)<<32-1))
	}
	var b strings.Builder
	for _, m := range ms {
		fmt.Fprintf(&b, "%10d %10d %10d\n", m.ContainerID, m.HostID, m.Length)
	}
	return []byte(b.String())
}
