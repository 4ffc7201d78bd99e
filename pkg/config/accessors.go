package config

import (
	"time"

	"github.com/minikubelet/minikubelet/pkg/release"
)

// MaxContainerRestartPeriod is the cap of a container's restart back-off that the
// configuration asks for, and whether it asks: true exactly when the
// KubeletCrashLoopBackOffMax gate is on (Load defaults it to 300s then, and refuses it
// with the gate off). Upstream also lowers the initial back-off (10s) to this cap when it
// is smaller; with ok false the kubelet's own cap, DefaultMaxContainerRestartPeriod, holds.
func (kc *KubeletConfiguration) MaxContainerRestartPeriod() (period time.Duration, ok bool) {
	if p := kc.CrashLoopBackOff.MaxContainerRestartPeriod; p != nil {
		return p.Duration, true
	}
	return DefaultMaxContainerRestartPeriod, false
}

// SingleProcessOOMKillEnabled reports whether an OOM kill takes only the process over the
// limit rather than the whole container (memory.oom.group not set). The simulated node is
// cgroup v2, where an unset singleProcessOOMKill means false, as upstream decides it.
func (kc *KubeletConfiguration) SingleProcessOOMKillEnabled() bool {
	return kc.SingleProcessOOMKill != nil && *kc.SingleProcessOOMKill
}

// UserNamespacesIDsPerPod is the length of the UID and GID ranges of a pod in a user
// namespace: userNamespaces.idsPerPod, or 65536 when it is unset or 0 (upstream's
// GetUserNamespacesIDsPerPod). Load has checked that it fits in 32 bits.
func (kc *KubeletConfiguration) UserNamespacesIDsPerPod() uint32 {
	if kc.UserNamespaces == nil || kc.UserNamespaces.IDsPerPod == nil || *kc.UserNamespaces.IDsPerPod == 0 {
		return DefaultUserNamespacesIDsPerPod
	}
	return uint32(*kc.UserNamespaces.IDsPerPod)
}

// Release is the kubelet release the node emulates (emulatedVersion), the newest when it
// is unset. Load has refused a value that is not a release; a configuration built in code
// is checked with CheckedRelease.
func (sc *SimulatorConfiguration) Release() release.Release {
	r, _ := sc.CheckedRelease()
	return r
}

// CheckedRelease is Release with the error of a value that is not a release (the newest
// is returned with it).
func (sc *SimulatorConfiguration) CheckedRelease() (release.Release, error) {
	if sc.EmulatedVersion == "" {
		return release.Newest(), nil
	}
	r, err := release.Parse(sc.EmulatedVersion)
	if err != nil {
		return release.Newest(), err
	}
	return r, nil
}
