// Package netclients is the network clients containers run in their commands and probes (busybox wget and nc, curl, OpenBSD nc), talking to the simulated pod network.
package netclients
