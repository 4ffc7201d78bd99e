// Package podstatus generates a pod's API status from the runtime's view the way the kubelet does (phase, conditions, container statuses and waiting reasons) and keeps the latest status per pod (the status manager).
package podstatus
