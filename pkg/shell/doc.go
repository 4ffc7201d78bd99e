// Package shell is the simulated command table that exec and exec probes run in a container.
package shell
