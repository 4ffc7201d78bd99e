//go:build tools

// Package controlplane builds a real Kubernetes v1.37 control plane (kube-apiserver,
// kube-controller-manager, kube-scheduler) and kubectl for minikubelet's cluster tests, and
// kubemark's hollow node for the peers benchmark (make kubemark, the newest release only). It
// is a module of its own so the main go.mod stays free of k8s.io/kubernetes.
package controlplane

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubemark"
)
