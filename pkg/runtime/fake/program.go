package fake

import (
	"bytes"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/programs"
	"github.com/minikubelet/minikubelet/pkg/programs/agnhost"
	"github.com/minikubelet/minikubelet/pkg/programs/netclients"
	"github.com/minikubelet/minikubelet/pkg/programs/servers"
	"github.com/minikubelet/minikubelet/pkg/shell"
	"github.com/minikubelet/minikubelet/pkg/vfs"
)

// A container's processes run on a shell.Machine of its own, over a filesystem (a
// vfs.View: its image's tree, copied on write, with the kubelet's mounts bound from the
// node's filesystem). The runtime steps the machine at the instants it is due (a
// transitionWake in the event queue), so a program's sleeps are entries of the same queue
// as every other delay, and a program that sleeps costs nothing until it wakes.

// ReasonStartError is a container whose process could not be started (containerd's).
const ReasonStartError = "StartError"

// ExitCodeStartError is the exit code containerd reports for a process that never started.
const ExitCodeStartError int32 = 128

// setupMachineLocked prepares c's filesystem and machine, from its image and mounts: the
// mounts are checked (and the kubelet's missing host directories made) and their nodes
// taken now, as runc binds them at create; the view and machine are made when a process
// first runs in the container (machineLocked). A container whose program the simulator
// does not know, or whose behaviour is scripted, may never run one: at 10,000 pods the
// machines of such containers were an eighth of the node's heap.
// Image volumes (mountImageVolumesLocked) join the mounts, all ordered by depth as
// containerd orders them, and bind the image trees they resolved.
func (r *Runtime) setupMachineLocked(c *ctr, config *cri.ContainerConfig, img *imageInfo, volumes []imageVolumeMount) error {
	mounts := config.Mounts
	var nodes []*vfs.Node
	if len(volumes) > 0 {
		mounts, nodes = withImageVolumes(config.Mounts, volumes)
	}
	spec := &machineSpec{sec: r.internSecurityLocked(config.Security), seed: r.rng.Uint64(), nodes: make([]*vfs.Node, len(mounts))}
	for i, m := range mounts {
		if nodes != nil && nodes[i] != nil {
			spec.nodes[i] = nodes[i]
			continue
		}
		if m.HostPath == "" || m.ContainerPath == "" {
			return fmt.Errorf("mount %+v: host and container paths are required", m)
		}
		if _, err := r.nodeFS.Stat(m.HostPath); err != nil {
			// The kubelet's host directories are created when missing, as containerd does.
			if err := r.nodeFS.MkdirAll(m.HostPath, 0o755, 0, 0); err != nil {
				return fmt.Errorf("mount %q: create host path %q: %w", m.ContainerPath, m.HostPath, err)
			}
		}
		n, err := r.nodeFS.Resolve(m.HostPath)
		if err != nil {
			return fmt.Errorf("mount %q from %q: %w", m.ContainerPath, m.HostPath, err)
		}
		spec.nodes[i] = n
	}
	if img.tree != nil {
		img.tree.Freeze() // as NewView would now: the image's tree is the container's from here
	}
	c.spec = spec
	c.mounts = mounts
	c.img = img
	c.workDir = config.WorkingDir
	if c.workDir == "" {
		c.workDir = img.workingDir
	}
	if c.workDir == "" {
		c.workDir = "/"
	}
	c.argv = containerArgv(config.Command, config.Args, img)
	c.stdin = config.Stdin
	return nil
}

// withImageVolumes is a container's mounts with its image volumes among them, ordered by
// depth (stable: the kubelet's order otherwise), and beside each mount the node it binds
// (nil: a path of the node's filesystem, resolved as any mount).
func withImageVolumes(mounts []cri.Mount, volumes []imageVolumeMount) ([]cri.Mount, []*vfs.Node) {
	type bound struct {
		m    cri.Mount
		node *vfs.Node
	}
	all := make([]bound, 0, len(mounts)+len(volumes))
	for _, m := range mounts {
		all = append(all, bound{m: m})
	}
	for _, v := range volumes {
		all = append(all, bound{m: v.mount, node: v.node})
	}
	slices.SortStableFunc(all, func(a, b bound) int { return mountDepth(a.m.ContainerPath) - mountDepth(b.m.ContainerPath) })
	outMounts, outNodes := make([]cri.Mount, len(all)), make([]*vfs.Node, len(all))
	for i, b := range all {
		outMounts[i], outNodes[i] = b.m, b.node
	}
	return outMounts, outNodes
}

// keepImageMountsLocked records c's image volumes for its ContainerStatus.
func (r *Runtime) keepImageMountsLocked(c *ctr, volumes []imageVolumeMount) {
	out := make([]cri.ImageMount, len(volumes))
	for i, v := range volumes {
		out[i] = v.status
	}
	if r.imageMounts == nil {
		r.imageMounts = map[*ctr][]cri.ImageMount{}
	}
	r.imageMounts[c] = out
}

// machineSpec is what a container's machine is made from, kept from its create.
type machineSpec struct {
	oomAdj int64 // the container's oom_score_adj, for its memory cgroup
	sec    *cri.SecurityContext
	nodes  []*vfs.Node // by mount, what each binds
	seed   uint64      // drawn at create, so the runtime's draws do not depend on when it is made
}

// machineLocked returns c's machine, made the first time it is asked for (see
// setupMachineLocked).
func (r *Runtime) machineLocked(c *ctr) *shell.Machine {
	if c.m != nil || c.spec == nil {
		return c.m
	}
	s := c.spec
	c.spec = nil
	ro := s.sec != nil && s.sec.ReadonlyRootfs
	view := vfs.NewView(r.nodeFS, c.img.tree, ro)
	// Its own cgroup is its /sys/fs/cgroup, read-only, as runc mounts it in the container's
	// cgroup namespace; the kubelet's mounts come after and may bind over it. It is made
	// with the machine, when a process first runs: a container that never runs one (its
	// behaviour scripted, its program unknown) has no processes to hold one, and 10,000 of
	// them would keep 15 MB of directories nobody reads (their resources are in their
	// status all the same).
	// Its mounts: its cgroup, the kubelet's, /proc and /proc/sys (procLocked).
	view.GrowMounts(len(c.mounts) + 3)
	r.ensureCgroupLocked(c)
	cgroup := r.cgroups.Node(c.cgroupPath())
	if cgroup != nil {
		view.BindNode(CgroupRoot, cgroup, true)
	}
	for i, m := range c.mounts {
		view.BindNode(m.ContainerPath, s.nodes[i], m.Readonly)
	}
	id := r.identityLocked(s.sec, c.img)
	r.procLocked(c, view, s.sec)
	c.proc = &proc{id: id}
	c.mem = r.mem.NewGroup(c.memLimit, s.oomAdj, func() { r.oomKilledLocked(c) })
	c.env = mergeEnv(c.img.env, c.sb.hostname, c.envs, homeOf(view, c.id.UID))
	c.m = shell.NewMachine(shell.Config{
		FS:         view,
		Programs:   lookupProgram,
		Hostname:   c.sb.hostname,
		Seed:       s.seed,
		Net:        c.sb.ns,
		Network:    r.network,
		Workers:    r.workers,
		Slice:      cpuSlice(c.cpuLimitMilli()),
		Memory:     c.mem,
		Pids:       c.sb.pids,
		OnDetached: r.onDetached(c),
	})
	return c.m
}

// cpuSlice is how many steps a process of a container limited to limit millicores runs
// in a quantum: a busy loop under a limit of 100m gets a tenth of an unlimited one's, as
// its CFS quota gives it a tenth of every period.
func cpuSlice(limit int64) int {
	if limit <= 0 || limit >= 1000 {
		return shell.DefaultSlice
	}
	return max(int(int64(shell.DefaultSlice)*limit/1000), 100)
}

// DefaultNodeCPUs is how many CPUs a node has when Config.CPUCapacityMilli says none.
const DefaultNodeCPUs = 2

// nodeCPUs is how many CPUs the node has: its capacity in whole CPUs, rounded up.
func (r *Runtime) nodeCPUs() int {
	if r.cpuCap <= 0 {
		return DefaultNodeCPUs
	}
	return int((r.cpuCap + 999) / 1000)
}

// comm is the name a process of argv has in /proc (its executable's base name, at most 15
// bytes, as the kernel's comm).
func comm(argv []string) string {
	if len(argv) == 0 {
		return "sh"
	}
	name := argv[0]
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	return name[:min(len(name), 15)]
}

// procStatus is /proc/<pid>/status of a container's main process, as the kernel words it
// (a TAB after each name): who it runs as, and the CPUs it may run on, all the node's
// (no cpuset: the static CPU manager policy is not simulated).
func procStatus(name string, id shell.Identity, cpus int) []byte {
	var b strings.Builder
	ids := func(n int64) string { v := strconv.FormatInt(n, 10); return v + "\t" + v + "\t" + v + "\t" + v }
	groups := make([]string, 0, len(id.Groups))
	for _, g := range id.Groups {
		groups = append(groups, strconv.FormatInt(g, 10))
	}
	fmt.Fprintf(&b, "Name:\t%s\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t1\nNgid:\t0\nPid:\t1\nPPid:\t0\nTracerPid:\t0\n", name)
	fmt.Fprintf(&b, "Uid:\t%s\nGid:\t%s\nFDSize:\t64\nGroups:\t%s\n", ids(id.UID), ids(id.GID), strings.Join(groups, " "))
	b.WriteString("NStgid:\t1\nNSpid:\t1\nNSpgid:\t1\nNSsid:\t1\nThreads:\t1\n")
	noNewPrivs := 0
	if id.NoNewPrivs {
		noNewPrivs = 1
	}
	fmt.Fprintf(&b, "NoNewPrivs:\t%d\nSeccomp:\t2\nSeccomp_filters:\t1\n", noNewPrivs)
	fmt.Fprintf(&b, "Cpus_allowed:\t%s\nCpus_allowed_list:\t%s\n", cpuMask(cpus), cpuList(cpus))
	b.WriteString("Mems_allowed:\t1\nMems_allowed_list:\t0\nvoluntary_ctxt_switches:\t0\nnonvoluntary_ctxt_switches:\t0\n")
	return []byte(b.String())
}

// cpuMask is the kernel's mask of CPUs 0 to n-1: hex, in comma-separated words of 32 bits,
// the first without leading zeros ("3", "ff,ffffffff").
func cpuMask(n int) string {
	var words []string
	for ; n > 0; n -= 32 {
		bits := min(n, 32)
		words = append(words, fmt.Sprintf("%08x", uint64(1)<<bits-1))
	}
	slices.Reverse(words)
	words[0] = strings.TrimLeft(words[0], "0")
	return strings.Join(words, ",")
}

// cpuList is the kernel's list of CPUs 0 to n-1: "0", "0-1".
func cpuList(n int) string {
	if n <= 1 {
		return "0"
	}
	return "0-" + strconv.Itoa(n-1)
}

// fsTypeAt is the type of the filesystem that holds node path p: the one mounted at p or
// at the nearest directory above it ("" for the node's disk). A bind of a directory inside
// a tmpfs volume (a subPath) is on that tmpfs, as the kernel's /proc/mounts says.
func (r *Runtime) fsTypeAt(p string) string {
	for p = path.Clean(p); ; p = path.Dir(p) {
		if info, err := r.nodeFS.Stat(p); err == nil && info.FSType != "" {
			return info.FSType
		}
		if p == "/" || p == "." {
			return ""
		}
	}
}

// mountEscaper escapes a path in /proc/mounts as the kernel does.
var mountEscaper = strings.NewReplacer(" ", `\040`, "\t", `\011`)

// lookupProgram is every simulated program by name: busybox's applets, the servers of
// well-known images, agnhost.
func lookupProgram(name string) shell.Program {
	if name == "agnhost" {
		return agnhost.Program
	}
	if p := servers.Lookup(name); p != nil {
		return p
	}
	if p := netclients.Lookup(name); p != nil {
		return p
	}
	return programs.Lookup(name)
}

// containerArgv is what the container runs, as containerd combines the CRI's command and
// args with the image's: command (else entrypoint), then args (else, when command is
// empty too, cmd).
func containerArgv(command, args []string, img *imageInfo) []string {
	argv := command
	if len(argv) == 0 {
		argv = img.entrypoint
		if len(args) == 0 {
			args = img.cmd
		}
	}
	return append(append([]string(nil), argv...), args...)
}

// mergeEnv is the process environment as containerd and runc make it: the image's (with
// a default PATH when it sets none), HOSTNAME, the container's (each overriding what came
// before), then HOME, the user's home from the image's /etc/passwd, unless set.
func mergeEnv(image []string, hostname string, container []cri.KeyValue, home string) []string {
	env := make([]string, 0, len(image)+len(container)+3)
	seen := map[string]int{}
	put := func(k, kv string) {
		if i, ok := seen[k]; ok {
			env[i] = kv
			return
		}
		seen[k] = len(env)
		env = append(env, kv)
	}
	add := func(k, v string) { put(k, k+"="+v) }
	for _, kv := range image {
		// The image's own "K=V" as it is: its containers share the strings.
		if k, _, ok := strings.Cut(kv, "="); ok {
			put(k, kv)
		}
	}
	if _, ok := seen["PATH"]; !ok {
		add("PATH", shell.DefaultPath)
	}
	if hostname != "" {
		add("HOSTNAME", hostname)
	}
	for _, kv := range container {
		add(kv.Key, kv.Value)
	}
	if _, ok := seen["HOME"]; !ok {
		add("HOME", home)
	}
	return env
}

// homeOf is uid's home directory in the image's /etc/passwd, "/" without one (runc's
// default), "/root" for root.
func homeOf(fs *vfs.View, uid int64) string {
	data, err := fs.ReadFile("/etc/passwd")
	if err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			f := strings.Split(line, ":")
			if len(f) >= 6 && f[2] == strconv.FormatInt(uid, 10) {
				return f[5]
			}
		}
	}
	if uid == 0 {
		return "/root"
	}
	return "/"
}

// runsProgram reports whether c's process is a simulated program (rather than a
// behaviour script, which decides its exits itself, or a program the simulator does not
// know, which runs until stopped).
func (c *ctr) runsProgram() bool { return c.annotation == "" && c.m != nil && !c.notSimulated }

// startProgramLocked starts c's main process at at. A program that cannot start (not in
// the image) fails the start as containerd does: StartContainer errs, and the container
// is EXITED with 128, reason StartError. A program the simulator does not know (an image
// it has not catalogued) runs until stopped, as before, and says so once in the log.
func (r *Runtime) startProgramLocked(c *ctr, at int64) error {
	if len(c.argv) == 0 {
		if !c.img.known {
			// An image nobody catalogued, run with its own entrypoint: unknown.
			c.setNotSimulated()
			c.addLog(r, LogLine{Time: at, Stream: StreamStderr, Text: fmt.Sprintf("minikubelet: the entrypoint of image %s is not simulated; the container runs until it is stopped", c.info.Image.Image)})
			return nil
		}
		return r.startFailedLocked(c, at, errors.New("no command specified"))
	}
	m := r.machineLocked(c) // before the fields below are read: it sets them
	pid, err := m.Start(shell.Spec{
		Argv:     c.argv,
		Env:      c.env,
		Dir:      c.workDir,
		Identity: c.id,
		Stdin:    c.stdinInput(),
		Stdout:   &logOutput{r: r, c: c, stream: StreamStdout},
		Stderr:   &logOutput{r: r, c: c, stream: StreamStderr},
		OnExit: func(status int) {
			c.mainExited, c.mainStatus = true, status
		},
	})
	if err != nil {
		var ee *shell.ExecError
		if errors.As(err, &ee) && !c.img.known && ee.NotFound {
			c.setNotSimulated()
			c.addLog(r, LogLine{Time: at, Stream: StreamStderr, Text: fmt.Sprintf("minikubelet: %q of image %s is not simulated; the container runs until it is stopped", strings.Join(c.argv, " "), c.info.Image.Image)})
			return nil
		}
		return r.startFailedLocked(c, at, err)
	}
	c.mainPID = pid
	r.stepMachineLocked(c, at)
	return nil
}

// startFailedLocked records a start that failed with containerd's wording.
func (r *Runtime) startFailedLocked(c *ctr, at int64, err error) error {
	msg := fmt.Sprintf("failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: %v: unknown", err)
	c.info.State = cri.ContainerRunning // exitLocked records the exit from a started state
	c.startedAt = 0
	r.exitLocked(c, at, ExitCodeStartError, ReasonStartError, msg)
	return errors.New(msg)
}

func (c *ctr) stdinInput() *shell.Input {
	if !c.stdin {
		return nil
	}
	if c.in == nil {
		c.in = shell.NewInput()
	}
	return c.in
}

// stepMachineLocked runs c's processes due at at, ends the container if its main
// process exited, and schedules the next wake-up.
func (r *Runtime) stepMachineLocked(c *ctr, at int64) {
	if c.m == nil || c.removed {
		return
	}
	next := c.m.Step(at)
	r.setBusyLocked(c, at, c.m.Busy())
	if r.reapOOMLocked(c, at) {
		return
	}
	if c.mainExited && c.info.State == cri.ContainerRunning {
		c.flushLogs(r, at)
		code := int32(c.mainStatus)
		reason := ReasonCompleted
		if code != 0 {
			reason = ReasonError
		}
		r.exitLocked(c, at, code, reason, "")
		return
	}
	c.wakeGen++
	if next != 0 {
		r.pushLocked(transition{at: max(next, at), c: c, gen: c.wakeGen, kind: transitionWake})
	}
}

// logOutput writes a process's output to its container's log, a line at a time, stamped
// with the machine's clock; a line without its newline waits for the rest (or the exit).
type logOutput struct {
	r      *Runtime
	c      *ctr
	stream string
}

func (o *logOutput) Write(b []byte) (int, error) {
	o.WriteStamped(b, o.c.m.Now().UnixNano())
	return len(b), nil
}

// WriteStamped writes b as printed at instant at (a server's handler's line, stamped with
// its request's time).
func (o *logOutput) WriteStamped(b []byte, at int64) {
	c := o.c
	i := 0
	if o.stream == StreamStderr {
		i = 1
	}
	data := b
	for len(data) > 0 {
		nl := bytes.IndexByte(data, '\n')
		if nl < 0 {
			if c.partial == nil {
				c.partial = new([2][]byte)
			}
			part := &c.partial[i]
			*part = append(*part, data...)
			if len(*part) > maxLineBytes { // a line this long is split, as the CRI's partial lines
				c.addProgramLog(o.r, LogLine{Time: at, Stream: o.stream, Text: string(*part)})
				*part = nil
			}
			break
		}
		var line string
		if c.partial == nil || len(c.partial[i]) == 0 {
			line = string(data[:nl])
		} else {
			line = string(append(c.partial[i], data[:nl]...))
			c.partial[i] = nil
		}
		c.addProgramLog(o.r, LogLine{Time: at, Stream: o.stream, Text: line})
		data = data[nl+1:]
	}
	if c.partial != nil && len(c.partial[0]) == 0 && len(c.partial[1]) == 0 {
		c.partial = nil // a container keeps no buffer between whole lines
	}
}

// detachedLocked drains the lines servers' handlers wrote since the last call into their
// containers' logs.
func (r *Runtime) detachedLocked() {
	if r.detachedN.Load() == 0 {
		return
	}
	r.detachedMu.Lock()
	cs := r.detachedQ
	r.detachedQ = nil
	r.detachedN.Store(0)
	r.detachedMu.Unlock()
	for _, c := range cs {
		if c.m != nil && !c.removed {
			c.m.DrainDetached()
		}
	}
}

// onDetached queues c for detachedLocked; called from handlers' goroutines, so it takes
// only its own lock.
func (r *Runtime) onDetached(c *ctr) func() {
	return func() {
		r.detachedMu.Lock()
		r.detachedQ = append(r.detachedQ, c)
		r.detachedN.Add(1)
		r.detachedMu.Unlock()
		r.wake.Notify()
	}
}

// maxLineBytes is where a line without a newline is cut (containerd's 16 KiB buffer).
const maxLineBytes = 16 << 10

// flushLogs writes the unterminated last lines of a process that exited.
func (c *ctr) flushLogs(r *Runtime, at int64) {
	if c.partial == nil {
		return
	}
	for i, stream := range []string{StreamStdout, StreamStderr} {
		if len(c.partial[i]) > 0 {
			c.addLog(r, LogLine{Time: at, Stream: stream, Text: string(c.partial[i]), Partial: true})
		}
	}
	c.partial = nil
}

// addProgramLog appends a line the program printed, keeping at most what the log's
// files hold (containerLogMaxSize x containerLogMaxFiles): rotation drops the oldest.
func (c *ctr) addProgramLog(r *Runtime, l LogLine) {
	c.logs.add(l, &r.lines)
	c.logs.rotate(r.logCap())
}

// logCap is what a container's log files hold at most.
func (r *Runtime) logCap() int64 {
	size, files := r.logMaxBytes, r.logMaxFiles
	if size <= 0 {
		size = DefaultLogMaxBytes
	}
	if files <= 0 {
		files = DefaultLogMaxFiles
	}
	return size * files
}

// setNotSimulated marks c as running a program the simulator does not know: its pod
// answers whatever is asked of its network, as before programs were simulated.
func (c *ctr) setNotSimulated() {
	c.notSimulated = true
	c.markOpaque()
}

// markOpaque counts c in its pod's namespace as serving whatever is asked (a behaviour
// script or an unknown program: nothing says what it listens on).
func (c *ctr) markOpaque() {
	if !c.opaque {
		c.opaque = true
		c.sb.ns.SetOpaque(true)
	}
}

// killMachineLocked ends every process of c (the container exited or is gone): what
// they held is freed.
func (c *ctr) killMachineLocked() {
	if c.opaque {
		c.opaque = false
		c.sb.ns.SetOpaque(false)
	}
	if c.m != nil {
		c.m.KillAll()
		c.wakeGen++
		c.mem.Release()
	}
}

// oomKilledLocked is the OOM killer's kill of c, called by its memory cgroup from inside
// a charge (c's own program's, or another container's when the node's pods are out of
// memory): c exits once the charging step is over (reapOOMLocked).
func (r *Runtime) oomKilledLocked(c *ctr) {
	c.oom = true
	r.oomQ = append(r.oomQ, c)
}

// reapOOMLocked ends the containers the OOM killer killed while c's machine stepped at
// at: each exits 137, OOMKilled, as containerd reports a container whose cgroup had an OOM
// kill. It reports whether c itself was one.
func (r *Runtime) reapOOMLocked(c *ctr, at int64) bool {
	self := false
	for len(r.oomQ) > 0 {
		v := r.oomQ[0]
		r.oomQ = r.oomQ[1:]
		if v == c {
			self = true
			c.flushLogs(r, at)
		}
		if v.info.State == cri.ContainerRunning {
			r.logger.V(2).Info("Container OOM-killed", "containerID", v.info.ID, "container", v.info.Metadata.Name, "podUID", v.sb.info.Metadata.UID, "memoryLimit", v.memLimit)
			r.exitLocked(v, at, ExitCodeKilled, ReasonOOMKilled, "")
		}
	}
	r.oomQ = nil
	return self
}

// imageInfo is what the runtime needs of an image to run its containers.
type imageInfo struct {
	known      bool // catalogued: a program missing from it fails the start
	entrypoint []string
	cmd        []string
	env        []string
	workingDir string
	user       string
	stopSignal string // what a stop sends first ("SIGQUIT"); "" is SIGTERM
	tree       *vfs.Node
	accounts   *accounts // its /etc/passwd and /etc/group, read when first needed (accountsLocked)
}

// stopSignal is the signal a stop sends c's main process first: its image's STOPSIGNAL,
// as containerd sends it, else SIGTERM.
func (c *ctr) stopSignal() int {
	if n, ok := shell.SignalNames[strings.TrimPrefix(c.img.stopSignal, "SIG")]; ok {
		return n
	}
	return shell.SIGTERM
}
