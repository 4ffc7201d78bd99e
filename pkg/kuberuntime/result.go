package kuberuntime

import (
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
)

// Errors a sync action can fail with. Their text is exactly the waiting reason the kubelet
// shows in a container status (upstream kubecontainer, images and kuberuntime errors).
var (
	ErrCrashLoopBackOff = errors.New("CrashLoopBackOff")
	ErrImagePull        = errors.New("ErrImagePull")
	ErrImagePullBackOff = errors.New("ImagePullBackOff")
	ErrImageNeverPull   = errors.New("ErrImageNeverPull")
	// ErrRegistryUnavailable and ErrSignatureValidationFailed are the CRI's pull errors.
	ErrRegistryUnavailable       = errors.New("RegistryUnavailable")
	ErrSignatureValidationFailed = errors.New("SignatureValidationFailed")
	ErrImageInspect              = errors.New("ImageInspectError")
	ErrInvalidImageName          = errors.New("InvalidImageName")
	ErrCreateContainerConfig     = errors.New("CreateContainerConfigError")
	ErrCreateContainer           = errors.New("CreateContainerError")
	ErrRunContainer              = errors.New("RunContainerError")
	ErrKillContainer             = errors.New("KillContainerError")
	ErrRemoveContainer           = errors.New("RemoveContainerError")
	ErrCreatePodSandbox          = errors.New("CreatePodSandboxError")
	ErrConfigPodSandbox          = errors.New("ConfigPodSandboxError")
	ErrKillPodSandbox            = errors.New("KillPodSandboxError")
)

// SyncAction names one step of a pod sync (kubecontainer.SyncAction).
type SyncAction string

const (
	StartContainer   SyncAction = "StartContainer"
	KillContainer    SyncAction = "KillContainer"
	RemoveContainer  SyncAction = "RemoveContainer"
	CreatePodSandbox SyncAction = "CreatePodSandbox"
	ConfigPodSandbox SyncAction = "ConfigPodSandbox"
	KillPodSandbox   SyncAction = "KillPodSandbox"
)

// SyncResult is the outcome of one action on one target (a container name or a sandbox).
type SyncResult struct {
	Action SyncAction
	Target string
	// Error is one of the Err* sentinels above, or nil on success.
	Error error
	// Message is the human-readable detail (the runtime's error text, a back-off message).
	Message string
	// BackOffUntil is when the back-off that failed the action ends: set only when Error is
	// ErrCrashLoopBackOff or ErrImagePullBackOff, so the pod can be synced again right then.
	BackOffUntil time.Time
}

// CrashLoopBackOffUntil is the earliest end of the crash-loop back-offs that failed actions
// (upstream's MinBackoffExpiration: image pull back-offs do not count), and whether any did.
func (p *PodSyncResult) CrashLoopBackOffUntil() (time.Time, bool) {
	var until time.Time
	found := false
	for _, r := range p.SyncResults {
		if r.Error == ErrCrashLoopBackOff && !r.BackOffUntil.IsZero() && (!found || r.BackOffUntil.Before(until)) {
			until, found = r.BackOffUntil, true
		}
	}
	return until, found
}

// Fail marks the result failed.
func (r *SyncResult) Fail(err error, msg string) {
	r.Error, r.Message = err, msg
}

// PodSyncResult collects the results of one SyncPod or KillPod.
type PodSyncResult struct {
	SyncResults []*SyncResult
	// SyncError is a failure that is not tied to one action (e.g. reading the sandbox status).
	SyncError error
}

func (p *PodSyncResult) add(action SyncAction, target string) *SyncResult {
	r := &SyncResult{Action: action, Target: target}
	p.SyncResults = append(p.SyncResults, r)
	return r
}

func (p *PodSyncResult) merge(o PodSyncResult) {
	p.SyncResults = append(p.SyncResults, o.SyncResults...)
	if o.SyncError != nil {
		p.SyncError = errors.Join(p.SyncError, o.SyncError)
	}
}

// Fail records a failure that is not tied to one action.
func (p *PodSyncResult) Fail(err error) { p.SyncError = errors.Join(p.SyncError, err) }

// Error aggregates every failure as upstream does (utilerrors.NewAggregate: the message
// alone for one failure, "[a, b]" for several), or returns nil when all actions succeeded.
func (p PodSyncResult) Error() error {
	var errs []error
	if p.SyncError != nil {
		errs = append(errs, fmt.Errorf("failed to SyncPod: %w", p.SyncError))
	}
	for _, r := range p.SyncResults {
		if r.Error != nil {
			errs = append(errs, fmt.Errorf("failed to %q for %q with %w: %q", r.Action, r.Target, r.Error, r.Message))
		}
	}
	return utilerrors.NewAggregate(errs)
}

// StartFailed reports whether a container could not be started (whatever the reason): its
// waiting reason changed.
func (p PodSyncResult) StartFailed() bool {
	for _, r := range p.SyncResults {
		if r.Action == StartContainer && r.Error != nil {
			return true
		}
	}
	return false
}

// ReasonRecorder remembers why a container could not be started; the status generator shows
// it as the container's waiting reason. podstatus.ReasonCache implements it.
type ReasonRecorder interface {
	Add(uid types.UID, container, reason, message string)
	Remove(uid types.UID, container string)
}

// RecordReasons stores the start failures of this sync in rec and clears the reasons of the
// containers that started, as the kubelet's reasonCache.Update does.
func (p PodSyncResult) RecordReasons(rec ReasonRecorder, uid types.UID) {
	for _, r := range p.SyncResults {
		if r.Action != StartContainer {
			continue
		}
		if r.Error != nil {
			rec.Add(uid, r.Target, r.Error.Error(), r.Message)
		} else {
			rec.Remove(uid, r.Target)
		}
	}
}
