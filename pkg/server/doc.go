// Package server is the daemon's HTTP API: health checks, metrics, the kubelet-style read-only /pods and the node, lease, events and configz views, plus the fault-injection debug handlers when enabled.
package server
