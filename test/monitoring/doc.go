// Package monitoring tests the shipped Prometheus rules, Grafana dashboard and simulated incidents with the real promtool and Prometheus (Debian package prometheus).
package monitoring
