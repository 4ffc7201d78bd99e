// Package cli holds the kubectl-like client commands (get, describe, fault) that read a running minikubelet daemon over its HTTP API.
package cli
