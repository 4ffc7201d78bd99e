// Package container holds the kubelet's runtime-neutral view of pods and containers and the small interfaces the kubelet parts share.
package container
