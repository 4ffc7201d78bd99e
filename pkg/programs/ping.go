package programs

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/minikubelet/minikubelet/pkg/programs/netclients"
	"github.com/minikubelet/minikubelet/pkg/shell"
)

// Round trips on the simulated network: within the pod's own network namespace, and to
// anything else it reaches (another pod, a Service, the DNS).
const (
	pingRTTLocal  = 45 * time.Microsecond
	pingRTTRemote = 120 * time.Microsecond
	pingTTL       = 64
)

// runPing is busybox's ping (FEATURE_FANCY_PING): it sends an echo request every -i
// seconds (1) until -c COUNT are sent or -w SECS have passed, and prints each reply; no
// packet leaves the machine: an address answers when the simulated network reaches it
// (the pod itself and localhost, other pods, the cluster DNS, Services), after a
// simulated round trip on the machine's clock, and anything else never answers. After the
// last request it waits -W seconds (10) for a reply when none came, then prints the
// statistics; the status is 1 when no reply came (or fewer than COUNT before -w's
// deadline). SIGINT prints the statistics too.
func runPing(c *cmd) int {
	o, args := c.getopt("qvAc:s:t:w:W:I:np:i:46", nil)
	if len(args) != 1 || o.Has('q') && o.Has('v') {
		c.showUsage(1)
	}
	positive := func(b byte) uint64 {
		if !o.Has(b) {
			return 0
		}
		return c.xatouRange(o.Val(b), 0, math.MaxInt32)
	}
	count := positive('c')
	positive('t')
	deadline := positive('w')
	wait := uint64(10)
	if o.Has('W') {
		wait = positive('W')
	}
	datalen := uint64(56)
	if o.Has('s') {
		datalen = c.xatouRange(o.Val('s'), 0, 65535)
	}
	if o.Has('p') {
		v := o.Val('p')
		n, err := strconv.ParseUint(v, 16, 64)
		if err != nil {
			c.die("invalid number '%s'", v)
		}
		if n > 255 {
			c.die("number %s is not in 0..255 range", v)
		}
	}
	interval := 1.0
	if o.Has('i') {
		interval = c.parseDuration(o.Val('i'))
	}
	interval = min(interval, math.MaxInt32/1000000)
	host := args[0]
	ip, ok := netclients.Resolve(c.fs(), c.p.Hostname(), c.p.PodIP(), host)
	if !ok {
		ip, ok = netclients.ResolveDNS(c.p, host)
	}
	if !ok || strings.Contains(ip, ":") && o.Has('4') {
		c.die("bad address '%s'", host)
	}
	network, ns := c.p.NetworkNamespace()
	reachable := network != nil && network.Reachable(ns, ip)
	rtt := pingRTTRemote
	if strings.HasPrefix(ip, "127.") || ip == "::1" || ip == c.p.PodIP() {
		rtt = pingRTTLocal
	}
	c.printf("PING %s (%s): %d data bytes\n", host, ip, datalen)
	c.p.Trap(shell.SIGINT, true)
	var sent, received uint64
	var tmin, tmax, tsum time.Duration
	stats := func() int {
		c.printf("\n--- %s ping statistics ---\n%d packets transmitted, %d packets received, ", host, sent, received)
		loss := uint64(0)
		if sent != 0 {
			loss = (sent - received) * 100 / sent
		}
		c.printf("%d%% packet loss\n", loss)
		if received > 0 {
			avg := tsum / time.Duration(received)
			c.printf("round-trip min/avg/max = %s/%s/%s ms\n", pingMS(tmin), pingMS(avg), pingMS(tmax))
		}
		if received == 0 || deadline > 0 && received < count {
			return 1
		}
		return 0
	}
	interrupted := false
	// sleep waits d; false when SIGINT came (the statistics are printed then).
	sleep := func(d time.Duration) bool {
		if !c.sleep(d) {
			for _, s := range c.p.Pending() {
				if s == shell.SIGINT {
					interrupted = true
				}
			}
		}
		return !interrupted
	}
	start := c.p.Now()
	end := start.Add(time.Duration(deadline) * time.Second)
	for {
		if deadline > 0 && !c.p.Now().Before(end) {
			return stats()
		}
		sent++
		seq := sent - 1
		spent := time.Duration(0)
		if reachable {
			if !sleep(rtt) {
				return stats()
			}
			spent = rtt
			received++
			tsum += rtt
			if received == 1 || rtt < tmin {
				tmin = rtt
			}
			tmax = max(tmax, rtt)
			if !o.Has('q') {
				c.printf("%d bytes from %s: seq=%d ttl=%d time=%s ms\n", datalen+8, ip, seq, pingTTL, pingMS(rtt))
			}
			if count > 0 && received >= count {
				return stats()
			}
		}
		if count == 0 || sent < count {
			next := seconds(interval) - spent
			if o.Has('A') && reachable {
				next = 0
			}
			if !sleep(max(next, 0)) {
				return stats()
			}
			continue
		}
		// Every request sent: wait for the replies still out.
		expire := time.Duration(wait) * time.Second
		if received > 0 {
			expire = max(time.Duration(int64(tmax/time.Microsecond)/(512*1024))*time.Second, time.Second)
		}
		sleep(expire)
		return stats()
	}
}

// pingMS is a duration as ping prints it: milliseconds with three decimals.
func pingMS(d time.Duration) string {
	us := int64(d / time.Microsecond)
	return strconv.FormatInt(us/1000, 10) + "." + leftPad(strconv.FormatInt(us%1000, 10), 3)
}

func leftPad(s string, n int) string {
	return strings.Repeat("0", max(n-len(s), 0)) + s
}
