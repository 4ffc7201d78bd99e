//go:build tools

// Package metricsserver builds sigs.k8s.io/metrics-server for minikubelet's cluster tests
// (kubectl top against minikubelet nodes). It is a module of its own so the main go.mod
// stays free of metrics-server's dependencies. Build it with
//
//	cd tools/metricsserver && go build -o ../../_output/bin/ sigs.k8s.io/metrics-server/cmd/metrics-server
package metricsserver

import (
	_ "sigs.k8s.io/metrics-server/cmd/metrics-server"
)
