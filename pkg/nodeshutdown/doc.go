// Package nodeshutdown is the kubelet's graceful node shutdown manager: on a shutdown it rejects new pods, reports the node not ready, and terminates running pods by priority group (ordinary pods first, system-critical pods last) within shutdownGracePeriod.
package nodeshutdown
