package programs

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/minikubelet/minikubelet/pkg/shell"
)

// signals are the Linux signal names by number, as kill -l lists them.
var signals = []string{1: "HUP", 2: "INT", 3: "QUIT", 4: "ILL", 5: "TRAP", 6: "ABRT", 7: "BUS", 8: "FPE", 9: "KILL",
	10: "USR1", 11: "SEGV", 12: "USR2", 13: "PIPE", 14: "ALRM", 15: "TERM", 16: "STKFLT", 17: "CHLD", 18: "CONT",
	19: "STOP", 20: "TSTP", 21: "TTIN", 22: "TTOU", 23: "URG", 24: "XCPU", 25: "XFSZ", 26: "VTALRM", 27: "PROF",
	28: "WINCH", 29: "POLL", 30: "PWR", 31: "SYS"}

const sigRTMIN, sigRTMAX = 34, 64

// signum is busybox's get_signum: a number below NSIG, or a name with or without SIG,
// in any case; -1 when it is neither.
func signum(s string) int {
	if n, err := strconv.ParseUint(s, 10, 32); err == nil {
		if n < 65 {
			return int(n)
		}
		return -1
	}
	name := s
	if len(name) >= 3 && strings.EqualFold(name[:3], "SIG") {
		name = name[3:]
	}
	for i, sig := range signals {
		if sig != "" && strings.EqualFold(name, sig) {
			return i
		}
	}
	switch strings.ToUpper(name) {
	case "IO":
		return 29
	case "IOT":
		return 6
	case "CLD":
		return 17
	case "RTMIN":
		return sigRTMIN
	case "RTMAX":
		return sigRTMAX
	}
	return -1
}

func signame(n int) string {
	switch {
	case n > 0 && n < len(signals):
		return signals[n]
	case n == sigRTMIN:
		return "RTMIN"
	case n == sigRTMAX:
		return "RTMAX"
	}
	return strconv.Itoa(n)
}

func runKill(c *cmd) int {
	args := c.args
	sig := shell.SIGTERM
	if len(args) > 0 && len(args[0]) > 1 && args[0][0] == '-' {
		a := args[0][1:]
		switch {
		case a == "l":
			return c.listSignals(args[1:])
		case a == "-":
			args = args[1:]
		default:
			if a == "s" && len(args) > 1 {
				args = args[1:]
				a = args[0]
			}
			if sig = signum(a); sig < 0 {
				c.errorf("bad signal name '%s'", a)
				return 1
			}
			args = args[1:]
		}
	}
	if len(args) == 0 {
		c.errorf("you need to specify whom to kill")
		return 1
	}
	errs := 0
	for _, a := range args {
		pid, err := strconv.Atoi(strings.TrimSpace(a))
		if err != nil {
			c.errorf("invalid number '%s'", a)
			errs++
			continue
		}
		if err := c.p.Kill(pid, sig); err != nil {
			c.out.Flush()
			fmt.Fprintf(c.p.Stderr(), "%s: %v\n", c.name, err)
			errs++
		}
	}
	return errs
}
