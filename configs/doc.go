// Package configs embeds the shipped configuration the binary needs on its own: the
// Prometheus rules simulate evaluates by default.
package configs
