// Package evictionapi is what the eviction manager and the node status share (upstream pkg/kubelet/eviction/api): the eviction signals, their thresholds as evictionHard writes them, and the observations compared with them.
package evictionapi
