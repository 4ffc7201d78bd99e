// Package pleg is the pod lifecycle event generator: it turns runtime state changes (by relisting, or from the CRI event stream) into pod events for the sync loop and keeps the pod status cache fresh.
package pleg
