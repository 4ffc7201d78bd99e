package fake

import (
	"context"
	"fmt"

	"github.com/minikubelet/minikubelet/pkg/cgroupfs"
	"github.com/minikubelet/minikubelet/pkg/cri"
)

// A container's cgroup is <its pod's cgroup>/<its id>, as containerd names it under the
// CgroupParent the kubelet gives with the cgroupfs driver; the node's hierarchy
// (Config.Cgroups) shows it, and the container sees it as its own /sys/fs/cgroup.

// cgroupPath is c's cgroup in the node's hierarchy.
func (c *ctr) cgroupPath() string { return c.sb.cgroup + "/" + c.info.ID }

// cgroupConfig is the cgroup settings runc makes of a container's resources: a zero field
// is left unset (the kernel's default), as in the OCI spec.
func cgroupConfig(res *cri.ContainerResources) cgroupfs.Config {
	var c cgroupfs.Config
	if res == nil {
		return c
	}
	if res.CPUShares > 0 {
		v := uint64(res.CPUShares)
		c.CPUShares = &v
	}
	if res.CPUQuota > 0 {
		v := res.CPUQuota
		c.CPUQuota = &v
	}
	if res.CPUPeriod > 0 {
		v := uint64(res.CPUPeriod)
		c.CPUPeriod = &v
	}
	if res.MemoryLimitInBytes > 0 {
		v := res.MemoryLimitInBytes
		c.MemoryMax = &v
	}
	return c
}

// UpdateContainerResources sets a container's CPU shares, CPU limit and memory limit in
// place, as containerd does for an in-place resize: in its cgroup (what its programs and
// /sys/fs/cgroup see at once) and in its status. A running container's programs get the
// new CPU limit and shares from now on (the CPU they used so far is counted at the old
// ones); a memory limit below what its programs hold OOM-kills it, as the kernel does when
// memory.max is written below memory.current and nothing can be reclaimed. A created
// container starts with the new limits. As containerd, a container that exited is only
// updated in its record (its next start would be a new container). An unknown id wraps
// cri.ErrNotFound.
//
// Not simulated: a scripted memory use (a behaviour's memoryUsage/memoryGrowth) already
// scheduled to reach the old limit keeps that OOM kill; only a use past the new limit now
// kills at once. How many steps a busy program runs per quantum (shell.Config.Slice) is
// fixed when its machine is made: the CPU counted follows the new limit, the program's
// pace does not.
func (r *Runtime) UpdateContainerResources(ctx context.Context, containerID string, res *cri.ContainerResources) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if res == nil {
		return fmt.Errorf("update container resources %q: linux resources are required", containerID)
	}
	if err := r.inject(ctx, methodUpdateContainer, one); err != nil {
		return err
	}
	now := r.lock()
	defer r.unlock(now)
	c, ok := r.containers[containerID]
	if !ok {
		return fmt.Errorf("failed to find container: %w", notFound("container", containerID))
	}
	r.updateResourcesLocked(c, res, now)
	return nil
}

// updateResourcesLocked applies res to c at now (UpdateContainerResources).
func (r *Runtime) updateResourcesLocked(c *ctr, res *cri.ContainerResources, now int64) {
	upd := *res // the caller's may change: the status shares this one
	if upd.MemoryRequestInBytes == 0 && c.res != nil {
		upd.MemoryRequestInBytes = c.res.MemoryRequestInBytes // not in the CRI: kept
	}
	oldShares := c.shares()
	c.foldCPULocked(now) // the CPU so far, at the old limit
	c.res = &upd
	c.memLimit, c.memRequest = upd.MemoryLimitInBytes, upd.MemoryRequestInBytes
	c.cpuPeriod, c.cpuQuota, c.cpuShares = int32(upd.CPUPeriod), int32(upd.CPUQuota), int32(upd.CPUShares)
	if c.cgroup && c.info.State != cri.ContainerExited {
		r.cgroups.Set(c.cgroupPath(), cgroupConfig(&upd)) // an exited one's is gone
	}
	r.logger.V(2).Info("Updated container resources", "containerID", c.info.ID, "container", c.info.Metadata.Name, "podUID", c.sb.info.Metadata.UID,
		"cpuShares", upd.CPUShares, "cpuQuota", upd.CPUQuota, "cpuPeriod", upd.CPUPeriod, "memoryLimit", upd.MemoryLimitInBytes)
	if c.info.State != cri.ContainerRunning {
		return
	}
	if c.proc != nil {
		if c.busy {
			r.busyShares += c.shares() - oldShares
		}
		r.setBusyLocked(c, now, c.busy) // the rate under the new limit and shares
		if c.mem != nil && !c.mem.SetLimit(c.memLimit) {
			r.reapOOMLocked(c, now)
			return
		}
	}
	// A scripted use (not a request standing in for one: startLocked) already past the
	// new limit is killed now.
	if b := c.beh; c.memLimit > 0 && (b.MemoryUsage > 0 || b.MemoryGrowth > 0) && c.memoryAt(now) >= c.memLimit {
		r.logger.V(2).Info("Container OOM-killed", "containerID", c.info.ID, "container", c.info.Metadata.Name, "podUID", c.sb.info.Metadata.UID, "memoryLimit", c.memLimit)
		r.exitLocked(c, now, ExitCodeKilled, ReasonOOMKilled, "")
	}
}

// ensureCgroupLocked makes c's cgroup under its pod's, with its resources, unless it has
// one or has exited (runc removed it then).
func (r *Runtime) ensureCgroupLocked(c *ctr) {
	if c.cgroup || c.info.State == cri.ContainerExited {
		return
	}
	c.cgroup = true
	r.cgroups.Set(c.cgroupPath(), cgroupConfig(c.res))
	r.cgroups.SetUsage(c.cgroupPath(), func() int64 { return c.memoryAt(r.now()) })
}
