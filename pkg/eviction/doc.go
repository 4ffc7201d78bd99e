// Package eviction is the kubelet's eviction manager: it evicts pods when the node runs low on memory, disk or PIDs.
package eviction
