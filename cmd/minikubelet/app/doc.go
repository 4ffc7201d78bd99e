// Package app builds the minikubelet command: flag and config loading, the daemon and its subcommands.
package app
