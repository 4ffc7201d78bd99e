// Package runner runs the node's loops: each loop is a step plus when it is next due, listed in one table; the daemon runs every entry as a goroutine on the real clock, and simulate mode runs the earliest due entry on a virtual clock.
package runner
