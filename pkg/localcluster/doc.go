// Package localcluster starts, lists and stops a Kubernetes v1.37 cluster on loopback whose nodes are minikubelet nodes (minikubelet cluster create).
package localcluster
