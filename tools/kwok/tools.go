//go:build tools

// Package kwok builds KWOK v0.8.0's kwok controller for the peers benchmark (make kwok,
// make bench-peers). It is a module of its own, at KWOK's own dependency versions, so the
// main go.mod stays free of sigs.k8s.io/kwok.
package kwok

import (
	_ "sigs.k8s.io/kwok/cmd/kwok"
)
