// Package cri holds the CRI-shaped types and service interfaces that the kubelet parts use to talk to a container runtime.
package cri
