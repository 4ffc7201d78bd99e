// Package fault describes runtime faults (latency, errors, hangs, not-ready, broken event streams) as data, shared by config, HTTP and scenarios.
package fault
