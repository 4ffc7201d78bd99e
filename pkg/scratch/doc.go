// Package scratch reuses the per-pass maps that loops over every pod build each time.
package scratch
