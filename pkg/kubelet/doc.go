// Package kubelet wires the simulator's kubelet together: pod sources, sync loop, pod workers, runtime manager, PLEG, status, node status and the HTTP providers, as steps and as a daemon runner.
package kubelet
