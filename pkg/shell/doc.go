// Package shell runs a container's processes on a simulated machine: a POSIX shell parsed by mvdan.cc/sh, pipes, signals and sleeps on the node's clock.
package shell
