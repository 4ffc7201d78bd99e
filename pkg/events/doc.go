// Package events records Kubernetes events (v1.Event) about pods and the node in a bounded, deduplicating in-memory store.
package events
