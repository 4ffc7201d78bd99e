// Package metrics lists every metric name the daemon exposes and owns the private registry they are registered in.
package metrics
