// Package podworkers drives every pod through sync -> terminating -> terminated, one sync at a time per pod, as the kubelet's pod workers do; it also holds the kubelet-level sync functions (Syncer) that turn each step into runtime calls and a pod status.
package podworkers
