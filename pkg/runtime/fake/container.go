package fake

import (
	"context"
	"fmt"
	"slices"

	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/runtime/behavior"
	"github.com/minikubelet/minikubelet/pkg/task"
)

// behaviourFor returns the script of a container: its pod's annotation, else the configured
// default behaviour. The second result is the annotation key when the pod had one.
func (r *Runtime) behaviourFor(annotations map[string]string, name string) (behavior.Behavior, string, error) {
	key := behavior.AnnotationKey(name)
	if _, ok := annotations[key]; !ok {
		return r.defaultBeh, "", nil
	}
	b, err := behavior.Parse(annotations, name)
	return b, key, err
}

func containerRole(config *cri.ContainerConfig) (string, error) {
	role, ok := config.Labels[ContainerTypeAnnotation]
	if !ok {
		role = config.Annotations[ContainerTypeAnnotation]
	}
	switch role {
	case "":
		return ContainerTypeApp, nil
	case ContainerTypeInit, ContainerTypeSidecar, ContainerTypeApp:
		return role, nil
	default:
		return "", fmt.Errorf("label %q: unknown container type %q (want %s, %s or %s)", ContainerTypeAnnotation, role, ContainerTypeInit, ContainerTypeSidecar, ContainerTypeApp)
	}
}

// CreateContainer creates a container in a ready sandbox from a pulled image. Its script comes
// from the pod annotation minikubelet.io/behavior.<name> in sandboxConfig (or the sandbox's
// own annotations when sandboxConfig is nil); a bad annotation fails the call with an error
// naming the annotation, key and value, and creates nothing. Like containerd, a second
// container with the same name and attempt in the sandbox is refused. Emits CONTAINER_CREATED.
func (r *Runtime) CreateContainer(ctx context.Context, podSandboxID string, config *cri.ContainerConfig, sandboxConfig *cri.PodSandboxConfig) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if config == nil || config.Metadata.Name == "" {
		return "", fmt.Errorf("create container: config with metadata name is required")
	}
	name := config.Metadata.Name
	role, err := containerRole(config)
	if err != nil {
		return "", fmt.Errorf("create container %q: %w", name, err)
	}
	if err := r.inject(ctx, methodCreateContainer, one); err != nil {
		return "", err
	}
	now := r.lock()
	defer r.unlock(now)
	sb, ok := r.sandboxes[podSandboxID]
	if !ok {
		return "", fmt.Errorf("create container %q: %w", name, notFound("pod sandbox", podSandboxID))
	}
	if sb.info.State != cri.SandboxReady {
		return "", fmt.Errorf("create container %q: pod sandbox %q is not ready", name, podSandboxID)
	}
	annotations := sb.info.Annotations
	if sandboxConfig != nil {
		annotations = sandboxConfig.Annotations
	}
	beh, annotation, err := r.behaviourFor(annotations, name)
	if err != nil {
		return "", fmt.Errorf("create container %q: invalid behaviour: %w", name, err)
	}
	img := r.findImageLocked(config.Image.Image)
	if img == nil {
		return "", fmt.Errorf("create container %q: image %q: %w (pull it first)", name, config.Image.Image, cri.ErrNotFound)
	}
	reserved := ctrName{sb: sb, name: name, attempt: config.Metadata.Attempt}
	if owner, ok := r.ctrNames[reserved]; ok {
		return "", fmt.Errorf("create container %q: failed to reserve container name %q: name is reserved for %q", name, reserved, owner)
	}
	var volumes []imageVolumeMount
	if len(config.ImageMounts) > 0 {
		// As containerd, before the container's spec is made: its message is the
		// container's CreateContainerError, as is.
		if volumes, err = r.mountImageVolumesLocked(sb, config.ImageMounts); err != nil {
			return "", err
		}
	}
	labels := withDefaults(config.Labels, cri.ContainerNameLabel, name, cri.PodUIDLabel, sb.info.Metadata.UID,
		cri.PodNameLabel, sb.info.Metadata.Name, cri.PodNamespaceLabel, sb.info.Metadata.Namespace)
	id := r.newIDLocked()
	c := &ctr{
		info: cri.Container{
			ID:           id,
			PodSandboxID: podSandboxID,
			Metadata:     config.Metadata,
			Image:        cri.ImageSpec{Image: config.Image.Image},
			ImageRef:     img.ID,
			State:        cri.ContainerCreated,
			CreatedAt:    now,
			Labels:       labels,
			Annotations:  config.Annotations, // the runtime's now (cri.RuntimeService)
		},
		sb:         sb,
		role:       role,
		beh:        &noBehavior,
		annotation: annotation,
		envs:       config.Envs,
	}
	if beh != noBehavior {
		c.beh = &beh
	}
	if err := r.setupMachineLocked(c, config, r.imageInfoLocked(img), volumes); err != nil {
		return "", fmt.Errorf("create container %q: %w", name, err)
	}
	if len(volumes) > 0 {
		r.keepImageMountsLocked(c, volumes)
	}
	if res := config.Resources; res != nil {
		c.res = res // the runtime's now (cri.RuntimeService)
		c.memLimit, c.memRequest = res.MemoryLimitInBytes, res.MemoryRequestInBytes
		c.cpuPeriod, c.cpuQuota, c.cpuShares = int32(res.CPUPeriod), int32(res.CPUQuota), int32(res.CPUShares)
		if c.spec != nil {
			c.spec.oomAdj = res.OomScoreAdj
		}
	}
	r.containers[id] = c
	r.ctrNames[reserved] = id
	r.nContainers++
	sb.containers = append(sb.containers, c)
	if l := r.logger.V(4); l.Enabled() {
		l.Info("Created container", "containerID", id, "container", name, "podUID", sb.info.Metadata.UID, "role", role, "behavior", beh.String())
	}
	r.changedLocked(cri.ContainerCreatedEvent, id, sb, now)
	return id, nil
}

// StartContainer starts a created container. It returns at once: with startDelay the
// container stays CREATED for that long before it is RUNNING (the kubelet sees it as unknown
// meanwhile). Emits CONTAINER_STARTED when it runs.
func (r *Runtime) StartContainer(ctx context.Context, containerID string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := r.inject(ctx, methodStartContainer, one); err != nil {
		return err
	}
	now := r.lock()
	defer r.unlock(now)
	c, ok := r.containers[containerID]
	if !ok {
		return fmt.Errorf("start container: %w", notFound("container", containerID))
	}
	if c.info.State != cri.ContainerCreated || c.startPending {
		return fmt.Errorf("start container %q: container is in %s state", containerID, c.info.State)
	}
	if c.sb.info.State != cri.SandboxReady {
		return fmt.Errorf("start container %q: pod sandbox %q is not ready", containerID, c.sb.info.ID)
	}
	if d := c.beh.StartDelay; d > 0 {
		c.startPending = true
		r.scheduleLocked(c, after(now, d), transitionStart, 0, "")
		return nil
	}
	return r.startLocked(c, now)
}

// addLog writes one of the simulator's own lines to the container's log. Usage sums the
// logs of every container each 10s (eviction and node status): keeping the size as lines
// are written spares reading 20,000 containers' lines each time.
func (c *ctr) addLog(r *Runtime, l LogLine) { c.logs.add(l, &r.lines) }

// startLocked makes c RUNNING at time at and starts its program, or schedules its
// scripted exit. An error is a program that could not start (the container exited).
func (r *Runtime) startLocked(c *ctr, at int64) error {
	c.startPending = false
	c.info.State = cri.ContainerRunning
	c.startedAt = at
	program := c.annotation == ""
	if !program {
		c.addLog(r, LogLine{Time: at, Stream: StreamStderr, Text: fmt.Sprintf("minikubelet: container %s started (attempt %d)", c.info.Metadata.Name, c.info.Metadata.Attempt)})
		c.markOpaque()
	}
	r.logger.V(4).Info("Started container", "containerID", c.info.ID, "container", c.info.Metadata.Name, "podUID", c.sb.info.Metadata.UID)
	r.changedLocked(cri.ContainerStartedEvent, c.info.ID, c.sb, at)
	if program {
		if err := r.startProgramLocked(c, at); err != nil {
			return err
		}
		if c.info.State != cri.ContainerRunning {
			return nil
		}
	}

	b := c.beh
	exitAt, code, exits := int64(0), b.ExitCode, false
	switch {
	case c.runsProgram():
		// The program decides when it exits; only the memory model below can end it first.
	case b.HasRunFor:
		exitAt, exits = after(at, b.RunFor), true
	case c.role == ContainerTypeInit:
		exitAt, exits = after(at, r.initDuration), true
	case b.HasExitCode:
		// An app container told only how to exit exits right away (a crashing binary).
		exitAt, exits = at, true
	}
	reason := ReasonCompleted
	if code != 0 {
		reason = ReasonError
	}
	if b.HasOOMAfter && (!exits || after(at, b.OOMAfter) <= exitAt) {
		exitAt, code, reason, exits = after(at, b.OOMAfter), ExitCodeKilled, ReasonOOMKilled, true
	}
	// The memory model: use that reaches the limit is an OOM kill, as the kernel's. Only a
	// scripted use counts here: the request standing in for an unscripted container's use
	// is the limit itself when only a limit is set (a Guaranteed pod's), and a container
	// is not killed for its request. A program's own use is charged as it runs (memcg).
	if c.memLimit > 0 && (b.MemoryUsage > 0 || b.MemoryGrowth > 0) {
		if d, ok := c.memoryModel().TimeToReach(c.memLimit); ok && (!exits || after(at, d) <= exitAt) {
			exitAt, code, reason, exits = after(at, d), ExitCodeKilled, ReasonOOMKilled, true
		}
	}
	if exits {
		r.scheduleLocked(c, exitAt, transitionExit, code, reason)
	}
	return nil
}

// exitLocked makes c EXITED at time at, unless it already is.
func (r *Runtime) exitLocked(c *ctr, at int64, code int32, reason, message string) {
	if c.info.State == cri.ContainerExited {
		return
	}
	r.settleCPULocked(c, at)
	r.cancelPendingLocked(c)
	c.startPending = false
	c.info.State = cri.ContainerExited
	c.finishedAt = at
	if c.m != nil {
		c.flushLogs(r, at)
		c.killMachineLocked()
	}
	if c.annotation != "" {
		c.addLog(r, LogLine{Time: at, Stream: StreamStderr, Text: fmt.Sprintf("minikubelet: exited with code %d (%s)", code, reason)})
	}
	c.exitCode = code
	c.reason = reason
	c.message = message
	// runc deletes a container's cgroup when it exits: the pod's can then go with the pod.
	_ = r.cgroups.Remove(c.cgroupPath())
	r.releaseStopWaitersLocked(c)
	r.logger.V(4).Info("Container exited", "containerID", c.info.ID, "container", c.info.Metadata.Name, "podUID", c.sb.info.Metadata.UID, "exitCode", code, "reason", reason)
	r.changedLocked(cri.ContainerStoppedEvent, c.info.ID, c.sb, at)
}

// killLocked SIGKILLs a running or starting container now.
func (r *Runtime) killLocked(c *ctr, now int64) {
	if c.info.State == cri.ContainerRunning || c.startPending {
		r.exitLocked(c, now, ExitCodeKilled, ReasonError, "")
	}
}

// StopContainer stops a running container with a grace period of timeout seconds and
// returns once it has exited on the clock (a pending operation: see task.Await), or ctx
// ends. The container honours SIGTERM after its
// stopDelay (default 0) and exits 0 (reason Completed); if stopDelay is longer than the grace
// period (or timeout <= 0) it is killed when the grace period ends: exit 137, reason Error.
// If it would exit on its own sooner, that exit wins. A container still starting is killed
// at once. Stopping a container that is not running succeeds; an unknown id wraps
// cri.ErrNotFound. A second stop can only shorten the wait.
func (r *Runtime) StopContainer(ctx context.Context, containerID string, timeout int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := r.inject(ctx, methodStopContainer, one); err != nil {
		return err
	}
	now := r.lock()
	c, ok := r.containers[containerID]
	if !ok {
		r.unlock(now)
		return fmt.Errorf("stop container: %w", notFound("container", containerID))
	}
	if c.startPending {
		r.killLocked(c, now)
	}
	if c.info.State != cri.ContainerRunning {
		r.unlock(now)
		return nil
	}
	grace := cri.Seconds(timeout)
	if c.runsProgram() {
		if timeout > 0 && !c.sigterm {
			c.sigterm = true
			c.m.Signal(c.mainPID, c.stopSignal())
			r.stepMachineLocked(c, now)
		}
		if c.info.State == cri.ContainerRunning {
			exitAt := now
			if timeout > 0 {
				exitAt = after(now, grace)
			}
			if c.due == 0 || exitAt < c.due {
				r.scheduleLocked(c, exitAt, transitionExit, ExitCodeKilled, ReasonError)
			}
		}
		if c.info.State != cri.ContainerRunning {
			r.unlock(now)
			return nil
		}
		op := task.NewOp()
		c.stopWaiters = append(c.stopWaiters, op)
		r.unlock(now)
		return r.await(ctx, op)
	}
	if timeout > 0 && !c.sigterm {
		c.sigterm = true
		c.addLog(r, LogLine{Time: now, Stream: StreamStderr, Text: fmt.Sprintf("minikubelet: SIGTERM received, grace period %ds", timeout)})
	}
	exitAt, code, reason := after(now, c.beh.StopDelay), int32(0), ReasonCompleted
	if timeout <= 0 || c.beh.StopDelay > grace {
		exitAt, code, reason = after(now, grace), ExitCodeKilled, ReasonError
		if timeout <= 0 {
			exitAt = now
		}
	}
	if c.due == 0 || exitAt < c.due {
		r.scheduleLocked(c, exitAt, transitionExit, code, reason)
	}
	op := task.NewOp()
	c.stopWaiters = append(c.stopWaiters, op)
	r.unlock(now)
	// A pending operation: the event queue completes it when the container exits (or is
	// removed), so a task waiting here gives control back instead of blocking.
	return r.await(ctx, op)
}

// releaseStopWaitersLocked completes the StopContainer calls waiting for c.
func (r *Runtime) releaseStopWaitersLocked(c *ctr) {
	for _, op := range c.stopWaiters {
		r.completeLocked(op, nil)
	}
	c.stopWaiters = nil
}

// RemoveContainer removes a container, killing it first if it runs (the CRI requires a
// forced removal). Emits CONTAINER_STOPPED if it was killed, then CONTAINER_DELETED.
// Removing an unknown container succeeds.
func (r *Runtime) RemoveContainer(ctx context.Context, containerID string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := r.inject(ctx, methodRemoveContainer, one); err != nil {
		return err
	}
	now := r.lock()
	defer r.unlock(now)
	c, ok := r.containers[containerID]
	if !ok {
		return nil
	}
	r.removeContainerLocked(c, now)
	return nil
}

func (r *Runtime) removeContainerLocked(c *ctr, now int64) {
	r.killLocked(c, now)
	c.killMachineLocked()
	r.cancelPendingLocked(c)
	c.removed = true
	c.sb.cpuGone += c.cpuCoreNanos(now)
	if q := c.cpuPressure(now); q != nil {
		c.sb.stallGone += q.Some.Total
	}
	r.releaseStopWaitersLocked(c)
	delete(r.containers, c.info.ID)
	delete(r.ctrNames, c.reservedName())
	delete(r.imageMounts, c)
	_ = r.cgroups.Remove(c.cgroupPath()) // a container's cgroup has no children
	r.nContainers--
	sb := c.sb
	sb.containers = slices.DeleteFunc(sb.containers, func(x *ctr) bool { return x == c })
	r.logger.V(4).Info("Removed container", "containerID", c.info.ID, "container", c.info.Metadata.Name, "podUID", sb.info.Metadata.UID)
	r.changedLocked(cri.ContainerDeletedEvent, c.info.ID, sb, now)
}

// ListContainers lists containers grouped by pod and sandbox, in the same order as
// ListPodSandbox. The result is one allocation; its Labels and Annotations maps are shared
// with the runtime and must not be modified.
func (r *Runtime) ListContainers(ctx context.Context, filter *cri.ContainerFilter) ([]cri.Container, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := r.inject(ctx, methodListContainers, func() int { return r.count(nil, filter) }); err != nil {
		return nil, err
	}
	now := r.lock()
	defer r.unlock(now)
	var out []cri.Container
	r.eachContainerLocked(filter, func(n int) { out = make([]cri.Container, 0, n) }, func(c *ctr) {
		out = append(out, c.info)
	})
	return out, nil
}

// eachContainerLocked calls size with an upper bound of the matches, then fn for each match.
func (r *Runtime) eachContainerLocked(f *cri.ContainerFilter, size func(int), fn func(*ctr)) {
	if f != nil && f.ID != "" {
		c, ok := r.containers[f.ID]
		size(1)
		if ok && containerMatches(c, f) {
			fn(c)
		}
		return
	}
	var sandboxes []*sandbox
	pods := r.pods
	switch {
	case f != nil && f.PodSandboxID != "":
		pods = nil
		if sb, ok := r.sandboxes[f.PodSandboxID]; ok {
			sandboxes = []*sandbox{sb}
		}
	case f != nil && f.LabelSelector[cri.PodUIDLabel] != "":
		pods = nil
		if pe := r.podByUID[f.LabelSelector[cri.PodUIDLabel]]; pe != nil {
			sandboxes = pe.sandboxes
		}
	}
	if pods == nil {
		n := 0
		for _, sb := range sandboxes {
			n += len(sb.containers)
		}
		size(n)
		for _, sb := range sandboxes {
			for _, c := range sb.containers {
				if containerMatches(c, f) {
					fn(c)
				}
			}
		}
		return
	}
	size(r.nContainers)
	for _, pe := range pods {
		for _, sb := range pe.sandboxes {
			for _, c := range sb.containers {
				if containerMatches(c, f) {
					fn(c)
				}
			}
		}
	}
}

func containerMatches(c *ctr, f *cri.ContainerFilter) bool {
	if f == nil {
		return true
	}
	if f.ID != "" && c.info.ID != f.ID {
		return false
	}
	if f.PodSandboxID != "" && c.info.PodSandboxID != f.PodSandboxID {
		return false
	}
	if f.State != nil && c.info.State != *f.State {
		return false
	}
	return labelsMatch(c.info.Labels, f.LabelSelector)
}

// ContainerStatus returns a container's status; an unknown id wraps cri.ErrNotFound.
func (r *Runtime) ContainerStatus(ctx context.Context, containerID string) (*cri.ContainerStatus, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := r.inject(ctx, methodContainerStatus, one); err != nil {
		return nil, err
	}
	now := r.lock()
	defer r.unlock(now)
	c, ok := r.containers[containerID]
	if !ok {
		return nil, notFound("container", containerID)
	}
	return r.statusLocked(c), nil
}

// containerStatusLocked is c's status now.
func (r *Runtime) containerStatusLocked(c *ctr) *cri.ContainerStatus {
	return &cri.ContainerStatus{
		ID:           c.info.ID,
		PodSandboxID: c.info.PodSandboxID,
		Metadata:     c.info.Metadata,
		State:        c.info.State,
		CreatedAt:    c.info.CreatedAt,
		StartedAt:    c.startedAt,
		FinishedAt:   c.finishedAt,
		ExitCode:     c.exitCode,
		Image:        c.info.Image,
		ImageRef:     c.info.ImageRef,
		Reason:       c.reason,
		Message:      c.message,
		Labels:       c.info.Labels,
		Annotations:  c.info.Annotations,
		Mounts:       c.mounts,
		Resources:    c.res,
		User:         r.containerUserLocked(c),
	}
}

// statusLocked is c's status with its image volumes (status, plus what only the runtime's
// lock may read).
func (r *Runtime) statusLocked(c *ctr) *cri.ContainerStatus {
	st := r.containerStatusLocked(c)
	st.ImageMounts = r.imageMounts[c]
	return st
}

// noBehavior is the behaviour of every container whose pod scripts none: shared, never
// changed (a Behavior is 200 bytes, and most containers have none).
var noBehavior behavior.Behavior
