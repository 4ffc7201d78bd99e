// Package pleg is the pod lifecycle event generator: it turns runtime state changes (found by relisting all pods or one pod, the latter on request or on a CRI container-exit event) into pod events for the sync loop and keeps the pod status cache fresh.
package pleg
