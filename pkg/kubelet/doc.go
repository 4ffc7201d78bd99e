// Package kubelet wires the simulator's kubelet together (pod sources, sync loop, pod workers, runtime manager, PLEG, status, node status, HTTP providers), lists its loop table (Loops) and runs it as a daemon (Run); it also holds the sync functions the pod workers call (Syncer).
package kubelet
