// Package scale measures the real minikubelet daemon with thousands of static pods (build tag "scale": go test -tags scale ./test/scale).
package scale
