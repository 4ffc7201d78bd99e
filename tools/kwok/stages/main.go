// Command stages prints the stages kwokctl gives a kwok controller it runs as a binary when
// the user names none (pkg/kwokctl/runtime/cluster.go of KWOK v0.8.0): node-initialize,
// node-heartbeat-with-lease (the lease is on: --node-lease-duration-seconds=40, and the
// 10 s status update frequency is below the stage's own 10 min delay, so the stage stays as
// shipped), pod-ready, pod-complete and pod-delete. The kwok binary has no stages of its own;
// make kwok writes these next to it, for the peers benchmark's --config.
package main

import (
	"fmt"
	"strings"

	nodefast "sigs.k8s.io/kwok/kustomize/stage/node/fast"
	nodeheartbeatwithlease "sigs.k8s.io/kwok/kustomize/stage/node/heartbeat-with-lease"
	podfast "sigs.k8s.io/kwok/kustomize/stage/pod/fast"
)

func main() {
	docs := []string{
		nodefast.DefaultNodeInit,
		nodeheartbeatwithlease.DefaultNodeHeartbeatWithLease,
		podfast.DefaultPodReady,
		podfast.DefaultPodComplete,
		podfast.DefaultPodDelete,
	}
	for i, d := range docs {
		if i > 0 {
			fmt.Println("---")
		}
		fmt.Println(strings.TrimSpace(d))
	}
}
