package config

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minikubelet/minikubelet/pkg/runtime/fault"
)

// API versions and kinds of the documents a config file may hold.
const (
	KubeletAPIVersion   = "kubelet.config.k8s.io/v1beta1"
	KubeletKind         = "KubeletConfiguration"
	SimulatorAPIVersion = "minikubelet.io/v1alpha1"
	SimulatorKind       = "SimulatorConfiguration"
)

// SimulatorConfiguration (minikubelet.io/v1alpha1) holds what a KubeletConfiguration cannot:
// the simulated machine, the PLEG tuning the kubelet hard-codes, the fake runtime and the
// metrics naming. Fields left out of the document keep their defaults; a field written
// with a zero or invalid value is an error.
type SimulatorConfiguration struct {
	metav1.TypeMeta `json:",inline"`

	// EmulatedVersion is the kubelet release the node is, as "1.MINOR": 1.34, 1.35, 1.36 or
	// 1.37 (the default, the simulator's reference). It selects that release's feature gate
	// stages and defaults, its KubeletConfiguration fields, the version the node reports and
	// what that release did differently where no gate says (docs/versions.md).
	// --emulated-version wins over it.
	EmulatedVersion string `json:"emulatedVersion,omitempty"`
	// NodeName is the node's name. --hostname-override wins over it; when both are empty
	// the host name is used, lower-cased, as upstream.
	NodeName string `json:"nodeName,omitempty"`
	// Machine is the node's capacity.
	Machine MachineConfiguration `json:"machine"`
	// PLEG tunes the generic (relisting) PLEG.
	PLEG PLEGConfiguration `json:"pleg"`
	// EventedPLEG tunes the evented PLEG, used when the EventedPLEG gate is on.
	EventedPLEG EventedPLEGConfiguration `json:"eventedPLEG"`
	// Runtime configures the in-memory container runtime.
	Runtime RuntimeConfiguration `json:"runtime"`
	// MetricsPrefix is put before every metric name except kubernetes_feature_enabled.
	// The default "kubelet_" gives the real kubelet's names, so its dashboards and alerts
	// work as is; an explicit "" drops it.
	MetricsPrefix string `json:"metricsPrefix"`
	// AllowRemoteDebugging lets the fault-injection handlers (enableDebuggingHandlers:
	// true) and the profiling handler (enableProfilingHandler: true) be served on an
	// address other than loopback. Without it the daemon refuses to start with such a
	// configuration: those handlers change the node or show its memory, to anyone who
	// can reach the port. Default false.
	AllowRemoteDebugging bool `json:"allowRemoteDebugging,omitempty"`
}

// MachineConfiguration is the simulated machine's capacity.
type MachineConfiguration struct {
	// CPU is the number of cores (node capacity "cpu"). Default 4.
	CPU resource.Quantity `json:"cpu"`
	// Memory is the node's memory (capacity "memory"). Default 8Gi.
	Memory resource.Quantity `json:"memory"`
	// EphemeralStorage is the node file system size (capacity "ephemeral-storage").
	// Default 100Gi.
	EphemeralStorage resource.Quantity `json:"ephemeralStorage"`
	// PIDs is the number of process IDs (the pid.available eviction signal and the "pid"
	// reservation work against it). Default 4194304, the 64-bit Linux pid_max.
	PIDs resource.Quantity `json:"pids"`
}

// PLEGConfiguration tunes the generic PLEG (upstream constants in pkg/kubelet/kubelet.go).
type PLEGConfiguration struct {
	// RelistPeriod is the period between relists. Default 1s.
	RelistPeriod metav1.Duration `json:"relistPeriod"`
	// RelistThreshold is how long without a successful relist before the PLEG health check
	// fails ("pleg was last seen active ... ago"). Default 3m.
	RelistThreshold metav1.Duration `json:"relistThreshold"`
	// ChannelCapacity is the size of the event channel; events that do not fit are
	// discarded. Default 1000.
	ChannelCapacity int `json:"channelCapacity"`
}

// EventedPLEGConfiguration tunes the evented PLEG. v1.37's uses MaxRetries only; the other
// fields tune the v1.30-v1.36 design (the kubelet's LegacyEventedPLEG option), kept for an
// emulated older kubelet.
type EventedPLEGConfiguration struct {
	// RelistPeriod is the period of the generic PLEG while v1.30's evented one is in charge.
	// Default 300s.
	RelistPeriod metav1.Duration `json:"relistPeriod"`
	// RelistThreshold is the health threshold of that generic PLEG. Default 10m.
	RelistThreshold metav1.Duration `json:"relistThreshold"`
	// MaxRetries is how many event stream failures are tolerated: v1.37's evented PLEG then
	// disables its container-exit fast path; v1.30's fell back to the generic PLEG at
	// pleg.relistPeriod / pleg.relistThreshold. Default 5.
	MaxRetries int `json:"maxRetries"`
	// GlobalCacheUpdatePeriod is how often v1.30's evented PLEG bumps the pod status cache's
	// global timestamp so that pod workers waiting for newer data are not stuck. Default 5s.
	GlobalCacheUpdatePeriod metav1.Duration `json:"globalCacheUpdatePeriod"`
}

// RuntimeConfiguration configures the in-memory CRI runtime.
type RuntimeConfiguration struct {
	// Seed seeds every random choice of the runtime (fault rates, jitter), so runs repeat.
	// Default 1.
	Seed int64 `json:"seed"`
	// InitContainerDuration is how long an init container without a behaviour annotation
	// runs before it exits 0. Default 1s.
	InitContainerDuration metav1.Duration `json:"initContainerDuration"`
	// DefaultBehavior is the behaviour of containers without a
	// minikubelet.io/behavior.<container> annotation, in the annotation's syntax (for
	// example "runFor=30s,exitCode=1"). Empty: app containers run until stopped. Checked
	// with behavior.ParseValue.
	DefaultBehavior string `json:"defaultBehavior,omitempty"`
	// StatusPollPeriod is how often the kubelet polls the runtime's Status() for
	// RuntimeReady and NetworkReady (upstream hard-codes 5s).
	StatusPollPeriod metav1.Duration `json:"statusPollPeriod"`
	// Faults are injected from the start; each is checked with fault.Spec.Validate.
	Faults []fault.Spec `json:"faults,omitempty"`
	// ProgramCPU is the real CPU the daemon spends running containers' programs, for all
	// its nodes together (--node-count): past it, programs wait and the kubelet's loops go
	// on. What a container reports as its CPU use is the model's (its limit, or its share
	// of machine.cpu), whatever the real machine gives it. Not used by simulate, whose
	// clock is virtual. Default 500m.
	ProgramCPU resource.Quantity `json:"programCPU"`
	// Features are what the runtime supports beyond the basics, which its Status reports
	// (CRI RuntimeFeatures) and the node's status.features shows: containerd 2.1's by
	// default. Turn one off to run the node as on an older runtime.
	Features RuntimeFeatures `json:"features"`
	// Handlers are the runtime's handlers besides its default one (""), which a
	// RuntimeClass's handler names: a pod whose RuntimeClass names another gets no sandbox
	// (containerd's `no runtime for "x" is configured`). The node's status.runtimeHandlers
	// lists them. Default [runc], as containerd's; each a DNS label, as a RuntimeClass's
	// handler.
	Handlers []string `json:"handlers"`
}

// RuntimeFeatures are the optional features of the in-memory runtime.
type RuntimeFeatures struct {
	// SupplementalGroupsPolicy: the runtime honours supplementalGroupsPolicy Strict and
	// reports each container's user in its status (containerd 2.0 and later). Off, as
	// containerd 1.7: Strict is ignored (the kubelet refuses such pods) and no user is
	// reported. Default true.
	SupplementalGroupsPolicy bool `json:"supplementalGroupsPolicy"`
	// UserNamespaces: the runtime's handlers run pods in user namespaces of their own
	// (hostUsers: false; containerd 2.0 and later on Linux 6.3 and later), as each node's
	// status.runtimeHandlers says. Off: such pods' sandboxes are not created. Default true.
	UserNamespaces bool `json:"userNamespaces"`
}
