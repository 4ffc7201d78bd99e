package programs

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/minikubelet/minikubelet/pkg/programs/internal/getopt"
)

// The node as uname, nproc, free and df describe it. A container sees its node's kernel,
// but the simulated node has none: these are fixed, plausible values.
const (
	// kernelRelease is uname -r: simulated, so it says so.
	kernelRelease = "6.6.0-minikubelet"
	kernelVersion = "#1 SMP PREEMPT_DYNAMIC Mon Jan  1 00:00:00 UTC 2024"
	machineArch   = "x86_64"
	// simulatedCPUs is what nproc prints: the machine knows no CPU count.
	simulatedCPUs = 2
	// Memory that free prints, in bytes.
	memTotal = 8 << 30
	memUsed  = 512 << 20
	memCache = 1 << 30
	memShare = 4 << 20
)

func runUname(c *cmd) int {
	o, args := c.getopt("snrvmpioa", []getopt.Long{
		{Name: "all", Key: 'a'}, {Name: "kernel-name", Key: 's'}, {Name: "nodename", Key: 'n'},
		{Name: "kernel-release", Key: 'r'}, {Name: "release", Key: 'r'},
		{Name: "kernel-version", Key: 'v'}, {Name: "machine", Key: 'm'}, {Name: "processor", Key: 'p'},
		{Name: "hardware-platform", Key: 'i'}, {Name: "operating-system", Key: 'o'},
	})
	if len(args) > 0 {
		c.showUsage(1)
	}
	fields := []struct {
		opt   byte
		value string
	}{
		{'s', "Linux"}, {'n', c.p.Hostname()}, {'r', kernelRelease}, {'v', kernelVersion},
		{'m', machineArch}, {'p', "unknown"}, {'i', "unknown"}, {'o', "GNU/Linux"},
	}
	var out []string
	for _, f := range fields {
		if o.Has('a') && (f.opt == 'p' || f.opt == 'i') {
			continue // -a leaves the unknown ones out
		}
		if o.Has(f.opt) || o.Has('a') || len(o.Seq) == 0 && f.opt == 's' {
			out = append(out, f.value)
		}
	}
	c.write(strings.Join(out, " ") + "\n")
	return 0
}

func runNproc(c *cmd) int {
	o, _ := c.getopt("", []getopt.Long{
		{Name: "all", Key: 'a'}, {Name: "ignore=", Key: 'i'},
	})
	n := simulatedCPUs
	if v := o.Val('i'); v != "" {
		k, err := strconv.Atoi(v)
		if err != nil || k < 0 {
			c.die("invalid number '%s'", v)
		}
		n = max(n-k, 1)
	}
	c.printf("%d\n", n)
	return 0
}

func runFree(c *cmd) int {
	unit := int64(1024)
	human := false
	if len(c.args) > 0 && strings.HasPrefix(c.args[0], "-") && len(c.args[0]) > 1 {
		switch c.args[0][1] {
		case 'b':
			unit = 1
		case 'k':
		case 'm':
			unit = 1 << 20
		case 'g':
			unit = 1 << 30
		case 'h':
			human = true
		default:
			c.showUsage(1)
		}
	}
	scale := func(v int64) string {
		if human {
			return humanSize(uint64(v), 1, 0)
		}
		return strconv.FormatInt(v/unit, 10)
	}
	free := int64(memTotal - memUsed - memCache)
	c.printf("       %12s%12s%12s%12s%12s%12s\n", "total", "used", "free", "shared", "buff/cache", "available")
	c.printf("Mem:   %12s%12s%12s%12s%12s%12s\n", scale(memTotal), scale(memUsed), scale(free), scale(memShare), scale(memCache), scale(free+memCache))
	c.printf("Swap:  %12s%12s%12s\n", scale(0), scale(0), scale(0))
	return 0
}

// humanSize is busybox's make_human_readable_str: val blocks of blockSize bytes, in
// displayUnit units, or (displayUnit 0) scaled with one decimal and K, M, G...
func humanSize(val uint64, blockSize, displayUnit uint64) string {
	if val == 0 {
		return "0"
	}
	if blockSize > 1 {
		val *= blockSize
	}
	if displayUnit != 0 {
		val += displayUnit / 2
		return strconv.FormatUint(val/displayUnit, 10)
	}
	units := "\x00KMGTPEZY"
	u, frac := 0, uint64(0)
	for val >= 1024 {
		u++
		frac = ((val%1024)*10 + 512) / 1024
		val /= 1024
	}
	if frac >= 10 {
		val++
		frac = 0
	}
	if u == 0 {
		return strconv.FormatUint(val, 10)
	}
	if blockSize == 0 {
		if frac >= 5 {
			val++
		}
		return fmt.Sprintf("%d%c", val, units[u])
	}
	return fmt.Sprintf("%d.%d%c", val, frac, units[u])
}
