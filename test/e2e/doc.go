// Package e2e runs the real minikubelet binary and checks it over its HTTP API and CLI.
package e2e
