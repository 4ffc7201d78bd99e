// Package promrules evaluates Prometheus alerting and recording rules, with Prometheus' own
// engine, over series sampled on a virtual clock.
package promrules
