// Package podworkers drives every pod through sync -> terminating -> terminated, one sync at a time per pod and pods side by side, as the kubelet's pod workers do; each sync runs as a task that waits for the runtime without blocking the loop.
package podworkers
