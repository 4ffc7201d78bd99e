// Package prober runs the containers' liveness, readiness and startup probes as the kubelet's prober manager does: a worker per probe, thresholds, initial delays, startup gating, results for the sync loop and the pod status, and the prober_* metrics.
package prober
