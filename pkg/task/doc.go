// Package task lets the kubelet's multi-call work (a pod sync, a relist, a kill) wait for slow runtime operations without blocking: an operation that takes time is an Op completed at a clock instant, and the work that awaits it runs as a Task whose step returns the moment it has to wait.
package task
