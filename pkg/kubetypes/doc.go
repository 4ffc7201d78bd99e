// Package kubetypes holds the pod update messages that flow from pod sources to the sync loop, and the kubelet's well-known annotation keys.
package kubetypes
