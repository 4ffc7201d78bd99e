package programs

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/minikubelet/minikubelet/pkg/shell"
)

// parseDuration parses sleep's and timeout's N[smhd] (fractions allowed) as busybox's
// parse_duration_str, in seconds. A bad number dies with busybox's message.
func (c *cmd) parseDuration(s string) float64 {
	mult := func(sfx string, orig string) float64 {
		switch sfx {
		case "", "s":
			return 1
		case "m":
			return 60
		case "h":
			return 3600
		case "d":
			return 86400
		}
		c.die("invalid number '%s'", orig)
		return 0
	}
	if strings.Contains(s, ".") {
		n := 0
		for n < len(s) && (s[n] >= '0' && s[n] <= '9' || s[n] == '.') {
			n++
		}
		d, err := strconv.ParseFloat(s[:n], 64)
		if err != nil {
			c.showUsage(1)
		}
		// busybox checks the suffix on "1" followed by it, and complains about that.
		return d * mult(s[n:], "1"+s[n:])
	}
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	if n == 0 {
		c.die("invalid number '%s'", s)
	}
	v, err := strconv.ParseUint(s[:n], 10, 64)
	if err != nil {
		c.die("invalid number '%s'", s)
	}
	return float64(v) * mult(s[n:], s)
}

// seconds is a number of seconds as a Duration, saturating instead of overflowing.
func seconds(s float64) time.Duration {
	if s*1e9 >= math.MaxInt64 {
		return math.MaxInt64
	}
	if s <= 0 {
		return 0
	}
	return time.Duration(s * 1e9)
}

func runSleep(c *cmd) int {
	if len(c.args) == 0 {
		c.showUsage(1)
	}
	c.out.Flush()
	if len(c.args[0]) >= 3 && strings.EqualFold(c.args[0][:3], "inf") {
		// Busybox sleeps INT_MAX seconds again and again; one wait to the end of the
		// clock is the same for ever.
		return c.p.SleepThenExit(shell.Forever, 0)
	}
	total := 0.0
	for _, a := range c.args {
		total += c.parseDuration(a)
	}
	// The sleep is the applet's last act: a shell's loop asleep in it, or a container
	// whose command is sleep, needs no goroutine until it wakes.
	return c.p.SleepThenExit(seconds(total), 0)
}
