// Package statuscache is the kubelet's pod status cache: the PLEG writes what it read from the runtime and pod workers wait in it for data newer than their last sync.
package statuscache
