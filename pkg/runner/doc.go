// Package runner runs the node's loops: each loop is a step plus when it is next due, listed in one table; the daemon steps a node's whole table on one goroutine on the real clock (Owner), and simulate mode steps the earliest due entry on a virtual clock (Sim).
package runner
