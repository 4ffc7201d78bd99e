// Package client is the kubelet's CRI client: it bounds every runtime call with runtimeRequestTimeout on the injected clock, as the kubelet's remote runtime service does with gRPC deadlines, and logs failed calls as it does.
package client
