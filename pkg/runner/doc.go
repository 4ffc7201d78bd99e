// Package runner runs component steps as owned goroutines on an injected clock, the daemon's counterpart of simulate mode's virtual-time scheduler.
package runner
