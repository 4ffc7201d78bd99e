// Package cluster tests minikubelet against a real Kubernetes v1.37 control plane (etcd, kube-apiserver, kube-controller-manager) started on loopback: make e2e-cluster.
package cluster
