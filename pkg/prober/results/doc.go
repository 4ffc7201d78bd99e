// Package results holds the latest liveness, readiness or startup probe result of each container and queues the changes for the sync loop, as the kubelet's prober results managers do.
package results
