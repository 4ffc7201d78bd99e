package fake

import "github.com/minikubelet/minikubelet/pkg/cri"

// The CPU of a container that runs programs is what its programs did: a step in which a
// process used its whole slice (a busy loop) makes the container busy until a step in
// which none did. A busy container uses a core's worth of CPU, at most its limit (the CFS
// quota throttles it for the rest of every period: container_cpu_cfs_throttled_*), and,
// when the busy containers together ask for more than the node has, its share of the
// node's CPU by its CPU shares (the CFS weight of its request). An idle one uses
// DefaultCPUMilli. The use is integrated over time, so the counters are monotonic and
// the rate reported is the one in force.

// processes is how many processes c's programs run now.
func (c *ctr) processes() int {
	if c.m == nil || c.info.State != cri.ContainerRunning {
		return 0
	}
	return c.m.Running()
}

// cpuEnd is the end of the interval c's CPU counts to at now: now, or its exit.
func (c *ctr) cpuEnd(now int64) int64 {
	if c.info.State == cri.ContainerExited {
		return min(now, c.finishedAt)
	}
	return now
}

// throttles reports whether a busy c asks for more than its CPU limit.
func (c *ctr) throttles() bool {
	l := c.cpuLimitMilli()
	return l > 0 && l < 1000
}

// foldCPULocked brings c's CPU counters to at, at the rate in force since the last fold.
func (c *ctr) foldCPULocked(at int64) {
	if c.proc == nil {
		return
	}
	if c.cpuAt == 0 {
		c.cpuAt, c.cpuRate = max(at, c.startedAt), DefaultCPUMilli
		return
	}
	end := c.cpuEnd(at)
	if d := end - c.cpuAt; d > 0 {
		c.foldStallLocked(end)
		c.cpuAcc += uint64(c.cpuRate) * uint64(d/1000)
		if c.busy && c.throttles() {
			c.throttled += d
		}
		c.cpuAt = end
	}
}

// shares is c's CPU weight: its request's shares, 2 (the kubelet's minimum) without one.
func (c *ctr) shares() int64 { return max(int64(c.cpuShares), 2) }

// setBusyLocked records at at whether c's last step was busy, and sets its rate: a busy
// container's is recomputed at each of its steps (every quantum), so it follows the other
// containers becoming busy or idle.
func (r *Runtime) setBusyLocked(c *ctr, at int64, busy bool) {
	c.foldCPULocked(at)
	if busy != c.busy {
		c.busy = busy
		if busy {
			r.busyShares += c.shares()
		} else {
			r.busyShares -= c.shares()
		}
	}
	if !busy {
		c.cpuRate = DefaultCPUMilli
		if c.beh.CPUMilli > 0 {
			c.cpuRate = c.beh.CPUMilli
		}
		if l := c.cpuLimitMilli(); l > 0 {
			c.cpuRate = min(c.cpuRate, l)
		}
		return
	}
	rate := int64(1000)
	if l := c.cpuLimitMilli(); l > 0 {
		rate = min(rate, l)
	}
	if r.cpuCap > 0 && r.busyShares > 0 {
		rate = min(rate, r.cpuCap*c.shares()/r.busyShares)
	}
	c.cpuRate = max(rate, 1)
}

// settleCPULocked ends c's CPU at its exit at at: counted to then, no longer busy.
func (r *Runtime) settleCPULocked(c *ctr, at int64) {
	if c.proc == nil {
		return
	}
	r.setBusyLocked(c, at, false)
}
