// Package programs is the busybox 1.36 applets (cat, ls, grep, sed, sleep...) that containers' commands run on a simulated shell.Machine.
package programs
