// Package cluster is the kubelet's side of a real API server: the node registered and its status patched, the node lease renewed, each call run off the loops' goroutines as a pending operation.
package cluster
