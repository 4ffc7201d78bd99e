// Package runtimestate tracks whether the container runtime, its network and the kubelet's registered health checks (PLEG) are healthy, as the kubelet's runtimeState does; its errors drive the node's Ready condition and the sync loop back-off.
package runtimestate
