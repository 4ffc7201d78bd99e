// Package cgroupfs is a simulated node's cgroup v2 hierarchy, as files that render each cgroup's limits when read.
package cgroupfs
