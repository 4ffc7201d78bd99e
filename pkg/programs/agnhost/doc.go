// Package agnhost is the simulated agnhost binary of Kubernetes' e2e test image: the subcommands conformance specs run (pause, mounttest, entrypoint-tester, logs-generator, and the servers and clients of the simulated pod network: netexec, liveness, serve-hostname, porter, test-webserver, grpc-health-checking, connect), with upstream's flags and output.
package agnhost
