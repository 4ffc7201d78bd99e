package fake

import (
	"math"

	"github.com/minikubelet/minikubelet/pkg/cri"
)

// Pressure stall information (KubeletPSI): a container's CPU pressure is the time its
// processes wanted CPU they did not get. A busy container asks for a core; it gets less
// when its CFS quota throttles it or when the node's busy containers ask for more than the
// node has (cpu.go), and waits the rest of the time. A container the simulator has no
// program for asks for its behaviour's CPU, capped by its limit the same way. Its
// processes are taken as one task, so some and full are the same; a pod's and the node's
// are its containers' summed (capped at all of the time, as if their stalls never
// overlapped), and the node's full is zero, as the kernel's system-wide CPU full line is.
// Memory and I/O never stall: the usage model has no reclaim and no disk queue.
//
// The averages are the kernel's: every 2 seconds (PSI_FREQ) of the container's life each
// decays by its fixed-point factor (EXP_10s, EXP_60s, EXP_300s over 2048) towards the
// share of that period it stalled. They are brought forward whenever the container's CPU
// rate changes (foldCPULocked) and when read, never on a timer.

// psiPeriod is how often the kernel updates the averages, in nanoseconds.
const psiPeriod = int64(2e9)

// psiDecay are the averages' decay per period: the kernel's EXP_10s, EXP_60s and EXP_300s.
var psiDecay = [3]float64{1677.0 / 2048, 1981.0 / 2048, 2034.0 / 2048}

// stallMilli is the share of the time c's processes wait for CPU at the rate in force,
// in thousandths, whatever c's state (the caller knows it runs).
func (c *ctr) stallMilli() int64 {
	if c.proc != nil {
		if !c.busy {
			return 0
		}
		return 1000 - min(c.cpuRate, 1000)
	}
	d := c.cpuDemand()
	if r := c.cpuMilli(); d > r && d > 0 {
		return (d - r) * 1000 / d
	}
	return 0
}

// psiPeriods is how many averaging periods of a life started at start end in (from, to].
func psiPeriods(start, from, to int64) int64 {
	if to <= from {
		return 0
	}
	return (to-start)/psiPeriod - (from-start)/psiPeriod
}

// decayAvgs brings averages n periods forward, each period stalled stall thousandths.
func decayAvgs(avg [3]float64, n, stall int64) [3]float64 {
	if n == 0 {
		return avg
	}
	pct := float64(stall) / 10
	for i := range avg {
		e := math.Pow(psiDecay[i], float64(n))
		avg[i] = avg[i]*e + pct*(1-e)
	}
	return avg
}

// foldStallLocked counts c's stall from its last fold to end at the stall in force (before
// its rate changes).
func (c *ctr) foldStallLocked(end int64) {
	f := c.stallMilli()
	c.stall += f * (end - c.cpuAt) / 1000
	c.stallAvg = decayAvgs(c.stallAvg, psiPeriods(c.startedAt, c.cpuAt, end), f)
}

// cpuPressure is c's cpu.pressure at now: nil while it never stalled.
func (c *ctr) cpuPressure(now int64) *cri.PSI {
	var stall int64
	var avg [3]float64
	end := c.cpuEnd(now)
	f := int64(0)
	if c.info.State == cri.ContainerRunning {
		f = c.stallMilli()
	}
	if c.proc != nil {
		if c.cpuAt == 0 {
			return nil
		}
		stall = c.stall + f*max(end-c.cpuAt, 0)/1000
		avg = decayAvgs(c.stallAvg, psiPeriods(c.startedAt, c.cpuAt, end), f)
	} else {
		stall = f * c.ranFor(now) / 1000
		avg = decayAvgs(avg, psiPeriods(c.startedAt, c.startedAt, end), f)
	}
	if stall == 0 && avg == [3]float64{} {
		return nil
	}
	d := cri.PSIData{Total: uint64(stall / 1000), Avg10: avg[0], Avg60: avg[1], Avg300: avg[2]}
	return &cri.PSI{Some: d, Full: d}
}

// addPressure adds q's some to *p (made when nil), the averages capped at 100%; full stays
// zero (a pod's and the node's are made from their containers' elsewhere).
func addPressure(p **cri.PSI, q *cri.PSI) {
	if q == nil {
		return
	}
	if *p == nil {
		*p = &cri.PSI{}
	}
	s := &(*p).Some
	s.Total += q.Some.Total
	s.Avg10 = min(s.Avg10+q.Some.Avg10, 100)
	s.Avg60 = min(s.Avg60+q.Some.Avg60, 100)
	s.Avg300 = min(s.Avg300+q.Some.Avg300, 100)
}

// cpuPressure is the pod cgroup's cpu.pressure at now: its containers' some summed, its
// removed ones' included; full is its only running container's (with several, the time
// all of them stall at once is not known: zero).
func (sb *sandbox) cpuPressure(now int64) *cri.PSI {
	var p *cri.PSI
	if sb.stallGone > 0 {
		p = &cri.PSI{Some: cri.PSIData{Total: sb.stallGone}}
	}
	running := 0
	var full cri.PSIData
	for _, c := range sb.containers {
		q := c.cpuPressure(now)
		addPressure(&p, q)
		if c.info.State == cri.ContainerRunning {
			running++
			if q != nil {
				full = q.Full
			}
		}
	}
	if p != nil && running == 1 {
		p.Full = full
	}
	return p
}
