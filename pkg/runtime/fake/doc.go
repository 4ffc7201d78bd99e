// Package fake is the simulator's container runtime: an in-memory, CRI-shaped runtime whose containers follow scripted behaviours on an injected clock and whose calls can be broken on purpose with faults.
package fake
