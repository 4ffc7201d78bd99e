// Package simnet is the simulated pod network: pods reach each other's simulated servers by IP, in memory, never over a socket.
package simnet
