// Package release lists the kubelet releases a node can emulate (--emulated-version) and what differs between them that no feature gate says.
package release
