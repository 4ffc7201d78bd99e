// Package allocation keeps what the kubelet allocated to each pod, what it actuated, and the pod's resize conditions: the kubelet's side of an in-place pod resize.
package allocation
