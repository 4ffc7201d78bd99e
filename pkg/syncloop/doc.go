// Package syncloop is the kubelet's main loop: it dispatches config updates, PLEG events, sync ticks and housekeeping ticks to a Handler, backs off while the runtime is unhealthy, and keeps the timestamp the syncloop health check reads.
package syncloop
