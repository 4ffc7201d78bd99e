package pleg

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// PodLifecycleEventType is the kind of a PodLifecycleEvent.
type PodLifecycleEventType string

const (
	// ContainerStarted: the container's new state is running.
	ContainerStarted PodLifecycleEventType = "ContainerStarted"
	// ContainerDied: the container's new state is exited.
	ContainerDied PodLifecycleEventType = "ContainerDied"
	// ContainerRemoved: the container no longer exists.
	ContainerRemoved PodLifecycleEventType = "ContainerRemoved"
	// PodSync asks for a pod sync when no single event above captures the change.
	PodSync PodLifecycleEventType = "PodSync"
	// ContainerChanged: the container's new state is unknown. Generated but never sent, as
	// upstream: nothing consumes it and it is not reliable.
	ContainerChanged PodLifecycleEventType = "ContainerChanged"
)

// PodLifecycleEvent is one change of a pod's state.
type PodLifecycleEvent struct {
	// ID is the pod's UID.
	ID types.UID
	// Type is what happened.
	Type PodLifecycleEventType
	// Data is the container (or sandbox) ID as a string for the container events.
	Data interface{}
}

// RelistDuration is the relist cadence and the staleness that makes the PLEG unhealthy.
type RelistDuration struct {
	// RelistPeriod is the wait between the end of one relist and the start of the next.
	RelistPeriod time.Duration
	// RelistThreshold must exceed the period plus a relist's run time, which varies a lot;
	// a conservative value avoids flapping between healthy and unhealthy.
	RelistThreshold time.Duration
}

// Defaults, as the kubelet's.
const (
	DefaultChannelCapacity = 1000
	// DefaultRelistRequestCapacity is upstream's bound on queued pod relists.
	DefaultRelistRequestCapacity = 200
	DefaultRelistPeriod          = time.Second
	DefaultRelistThreshold       = 3 * time.Minute
	// DefaultMaxStreamRetries is upstream's eventedPlegMaxStreamRetries.
	DefaultMaxStreamRetries = 5
	// Beside v1.30's evented PLEG (LegacyEventedPLEG) the generic PLEG only relists as a
	// safety net.
	DefaultEventedRelistPeriod    = 300 * time.Second
	DefaultEventedRelistThreshold = 10 * time.Minute
	// v1.30's evented PLEG bumps the cache every 5s, later ones every 1s; either unsticks
	// waiters in seconds.
	DefaultGlobalCacheUpdatePeriod = 5 * time.Second
)

// Interface is what the kubelet uses of a source of pod lifecycle events: GenericPLEG, or
// v1.30's LegacyEventedPLEG. (v1.37's EventedPLEG is not one: it only asks the generic PLEG
// to relist.) Their loops (Due/Step/Wake) are entries of the node's loop table.
type Interface interface {
	// Watch is the channel events are sent to (one subscriber).
	Watch() chan *PodLifecycleEvent
	// Healthy reports an error when the PLEG has stalled.
	Healthy() (bool, error)
	// Update changes the relist cadence.
	Update(d RelistDuration)
}

// HealthChecker is a named health check as the kubelet's runtime state registers it
// (addHealthCheck(name, fn)); an unhealthy check reads "<Name()> is not healthy: <err>".
type HealthChecker interface {
	Name() string
	Healthy() (bool, error)
}

var (
	_ Interface     = (*GenericPLEG)(nil)
	_ Interface     = (*LegacyEventedPLEG)(nil)
	_ HealthChecker = (*GenericPLEG)(nil)
	_ HealthChecker = (*LegacyEventedPLEG)(nil)
)
