package kuberuntime

import (
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/pkg/container"
	"github.com/minikubelet/minikubelet/pkg/prober/results"
)

// podActions is what one SyncPod must do (upstream podActions without ephemeral containers
// and in-place resize).
type podActions struct {
	// KillPod stops every container and the sandbox.
	KillPod bool
	// CreateSandbox creates a new sandbox (after killing the pod when one existed).
	CreateSandbox bool
	// SandboxID is the sandbox containers are started in (or the one being replaced).
	SandboxID string
	// Attempt is the sandbox attempt number to create.
	Attempt uint32
	// NextInitContainerToStart is used with the SidecarContainers gate off: init
	// containers run strictly one at a time.
	NextInitContainerToStart *v1.Container
	// InitContainersToStart are indexes into Spec.InitContainers (gate on).
	InitContainersToStart []int
	// ContainersToStart are indexes into Spec.Containers.
	ContainersToStart []int
	// EphemeralContainersToStart are indexes into Spec.EphemeralContainers: those the
	// runtime has never run (an ephemeral container is never restarted).
	EphemeralContainersToStart []int
	// ContainersToKill are running containers to stop before starting others.
	ContainersToKill map[container.ContainerID]containerToKillInfo
	// ContainersToReset are every instance of the pod's init and regular containers, to
	// stop (those not exited) and remove when the pod restarts all its containers
	// (RestartAllContainersOnContainerExits); the instances whose exit triggered it come
	// last. Nothing is started in the same sync.
	ContainersToReset []containerToResetInfo
	// resize is what an in-place resize updates.
	resize resizeActions
}

type containerToKillInfo struct {
	container *v1.Container
	name      string
	message   string
	// grace is the probe's terminationGracePeriodSeconds of a container killed for failing
	// it (it wins over the pod's, as upstream); nil: the pod's.
	grace *int64
}

// containerToResetInfo is one container instance a restart of all containers removes
// (upstream containerToRemoveInfo).
type containerToResetInfo struct {
	id        container.ContainerID
	container *v1.Container
	// kill: the instance has not exited (running, created or unknown) and is stopped first.
	kill bool
	// attempt is the instance's restart count, which its kept log carries on.
	attempt int
}

func (p podActions) String() string {
	next := ""
	if p.NextInitContainerToStart != nil {
		next = p.NextInitContainerToStart.Name
	}
	return fmt.Sprintf("KillPod: %t, CreateSandbox: %t, Attempt: %d, NextInitContainerToStart: %q, InitContainersToStart: %v, ContainersToStart: %v, EphemeralContainersToStart: %v, ContainersToKill: %d, ContainersToReset: %d",
		p.KillPod, p.CreateSandbox, p.Attempt, next, p.InitContainersToStart, p.ContainersToStart, p.EphemeralContainersToStart, len(p.ContainersToKill), len(p.ContainersToReset))
}

// computePodActions compares the pod spec with the runtime status and decides what SyncPod
// does, following upstream's computePodActions. Container spec changes (hash) and probes are
// not tracked: a changed static pod manifest gets a new UID and so is a new pod.
// restartAllContainers says the pod's status has AllContainersRestarting True: every
// container instance is then reset, and nothing else is done.
func (m *Manager) computePodActions(pod *v1.Pod, podStatus *container.PodStatus, restartAllContainers bool) podActions {
	createPodSandbox, attempt, sandboxID := container.PodSandboxChanged(pod, podStatus)
	changes := podActions{
		KillPod:           createPodSandbox,
		CreateSandbox:     createPodSandbox,
		SandboxID:         sandboxID,
		Attempt:           attempt,
		ContainersToStart: []int{},
		ContainersToKill:  map[container.ContainerID]containerToKillInfo{},
	}
	sidecars := m.cfg.SidecarContainers

	// Restarting all containers: stop and remove every instance, victims first (regular,
	// then init containers), then those that triggered it. The sandbox is kept, and the
	// next sync starts the pod again from its first init container.
	if m.cfg.RestartAllContainers && restartAllContainers {
		klog.V(3).InfoS("Pod marked for RestartAllContainers", "pod", klog.KObj(pod))
		initSources, initTargets := containersToReset(pod.Spec.InitContainers, podStatus)
		sources, targets := containersToReset(pod.Spec.Containers, podStatus)
		changes.ContainersToReset = slices.Concat(targets, initTargets, sources, initSources)
		return changes
	}

	// A new sandbox means everything restarts from the first init container.
	if createPodSandbox {
		if !shouldRestartOnFailure(pod) && attempt != 0 && len(podStatus.ContainerStatuses) != 0 {
			// restartPolicy Never and the pod already ran: do not bring it back, just make
			// sure it is stopped.
			changes.CreateSandbox = false
			return changes
		}
		var toStart []int
		for idx := range pod.Spec.Containers {
			c := &pod.Spec.Containers[idx]
			// A container that succeeded and runs once is not started again; with the
			// gate its own restartPolicy decides that (Never too reruns it, as upstream).
			runOnce := pod.Spec.RestartPolicy == v1.RestartPolicyOnFailure
			if m.cfg.ContainerRestartRules && c.RestartPolicy != nil {
				runOnce = *c.RestartPolicy == v1.ContainerRestartPolicyOnFailure
			}
			if runOnce && containerSucceeded(c, podStatus) {
				continue
			}
			toStart = append(toStart, idx)
		}
		if len(toStart) == 0 {
			var initialized bool
			if !sidecars {
				_, _, initialized = findNextInitContainerToRun(pod, podStatus)
			} else {
				initialized = hasAnyRegularContainerCreated(pod, podStatus)
			}
			if initialized {
				changes.CreateSandbox = false
				return changes
			}
		}
		if len(pod.Spec.InitContainers) != 0 {
			if !sidecars {
				changes.NextInitContainerToStart = &pod.Spec.InitContainers[0]
			} else {
				changes.InitContainersToStart = []int{0}
			}
			return changes
		}
		changes.ContainersToStart = toStart
		return changes
	}

	// Ephemeral containers may start before initialization is done, as upstream.
	for i := range pod.Spec.EphemeralContainers {
		if podStatus.FindContainerStatusByName(pod.Spec.EphemeralContainers[i].Name) == nil {
			changes.EphemeralContainersToStart = append(changes.EphemeralContainersToStart, i)
		}
	}

	// Initialization progress.
	if !sidecars {
		last, next, done := findNextInitContainerToRun(pod, podStatus)
		if !done {
			if next != nil {
				failed := last != nil && isInitContainerFailed(last)
				if failed && !shouldRestartOnFailure(pod) {
					changes.KillPod = true
				} else {
					if last != nil && last.State == container.ContainerStateUnknown {
						changes.ContainersToKill[last.ID] = containerToKillInfo{
							name: next.Name, container: next,
							message: fmt.Sprintf("Init container is in %q state, try killing it before restart", last.State),
						}
					}
					changes.NextInitContainerToStart = next
				}
			}
			return changes
		}
	} else {
		initialized := m.computeInitContainerActions(pod, podStatus, &changes)
		if changes.KillPod || !initialized {
			return changes
		}
	}

	keep := 0
	for idx := range pod.Spec.Containers {
		c := &pod.Spec.Containers[idx]
		s := podStatus.FindContainerStatusByName(c.Name)
		if s == nil || s.State != container.ContainerStateRunning {
			if container.ShouldContainerBeRestarted(c, pod, podStatus, m.restartGates()) {
				klog.V(4).InfoS("Container of pod is not in the desired state and shall be started", "containerName", c.Name, "pod", klog.KObj(pod))
				changes.ContainersToStart = append(changes.ContainersToStart, idx)
				if s != nil && s.State == container.ContainerStateUnknown {
					// never run two instances of one container: stop the unknown one first
					changes.ContainersToKill[s.ID] = containerToKillInfo{
						name: s.Name, container: c,
						message: fmt.Sprintf("Container is in %q state, try killing it before restart", s.State),
					}
				}
			}
			continue
		}
		// Running: kill it if its spec changed (an image update: upstream's
		// containerChanged) or its liveness or startup probe failed, restarting it unless
		// the policy is Never.
		message, grace := "", (*int64)(nil)
		if s.Hash != 0 && s.Hash != container.HashContainer(c) {
			message = fmt.Sprintf("Container %s definition changed", c.Name)
			changes.ContainersToStart = append(changes.ContainersToStart, idx)
			changes.ContainersToKill[s.ID] = containerToKillInfo{name: s.Name, container: c, message: message + ", will be restarted"}
			continue
		}
		message, grace = m.probeFailure(c, s.ID)
		if message == "" {
			if !m.computeResize(pod, c, s, &changes) {
				changes.ContainersToStart = append(changes.ContainersToStart, idx)
				continue
			}
			keep++
			continue
		}
		// A killed container has no exit code yet, so only the restartPolicy (the
		// container's under the gate) decides, never its rules.
		restart := shouldRestartOnFailure(pod)
		if m.cfg.ContainerRestartRules && c.RestartPolicy != nil {
			restart = *c.RestartPolicy != v1.ContainerRestartPolicyNever
		}
		if restart {
			message += ", will be restarted"
			changes.ContainersToStart = append(changes.ContainersToStart, idx)
		}
		changes.ContainersToKill[s.ID] = containerToKillInfo{name: s.Name, container: c, message: message, grace: grace}
	}

	changes.resize.podLevel = m.podLevelResizeNeeded(pod)
	if keep == 0 && len(changes.ContainersToStart) == 0 {
		// Every app container is done and none restarts: the pod is over; sidecars must not
		// keep it alive.
		changes.KillPod = true
		changes.InitContainersToStart = nil
	}
	return changes
}

// containersToReset sorts every runtime instance of containers (all of them, not only the
// newest: none may survive the reset) into those whose exit triggered the restart of all
// containers and the others, each list in spec order (upstream getContainersToReset).
func containersToReset(containers []v1.Container, podStatus *container.PodStatus) (sources, targets []containerToResetInfo) {
	for i := range containers {
		c := &containers[i]
		for _, s := range podStatus.ContainerStatuses {
			if s.Name != c.Name {
				continue
			}
			info := containerToResetInfo{id: s.ID, container: c, attempt: s.RestartCount}
			switch {
			case s.State != container.ContainerStateExited:
				info.kill = true
				targets = append(targets, info)
			case container.TriggersRestartAll(c, int32(s.ExitCode)):
				sources = append(sources, info)
			default:
				targets = append(targets, info)
			}
		}
	}
	return sources, targets
}

// restartGates are the manager's restart rule gates.
func (m *Manager) restartGates() container.RestartGates {
	return container.RestartGates{ContainerRestartRules: m.cfg.ContainerRestartRules, RestartAllContainers: m.cfg.RestartAllContainers}
}

// findNextInitContainerToRun (gate off): the last failed init container, the next init
// container to start, and whether initialization is done.
func findNextInitContainerToRun(pod *v1.Pod, podStatus *container.PodStatus) (*container.ContainerStatus, *v1.Container, bool) {
	if len(pod.Spec.InitContainers) == 0 {
		return nil, nil, true
	}
	// A running app container proves initialization happened, even if the init containers
	// were since removed from the runtime.
	for i := range pod.Spec.Containers {
		s := podStatus.FindContainerStatusByName(pod.Spec.Containers[i].Name)
		if s != nil && s.State == container.ContainerStateRunning {
			return nil, nil, true
		}
	}
	for i := len(pod.Spec.InitContainers) - 1; i >= 0; i-- {
		c := &pod.Spec.InitContainers[i]
		if s := podStatus.FindContainerStatusByName(c.Name); s != nil && isInitContainerFailed(s) {
			return s, c, false
		}
	}
	for i := len(pod.Spec.InitContainers) - 1; i >= 0; i-- {
		c := &pod.Spec.InitContainers[i]
		s := podStatus.FindContainerStatusByName(c.Name)
		if s == nil {
			continue
		}
		if s.State == container.ContainerStateRunning {
			return nil, nil, false
		}
		if s.State == container.ContainerStateExited {
			if i == len(pod.Spec.InitContainers)-1 {
				return nil, nil, true
			}
			return nil, &pod.Spec.InitContainers[i+1], false
		}
	}
	return nil, &pod.Spec.InitContainers[0], false
}

// hasAnyRegularContainerCreated: any app container in created, running or exited state means
// the pod was initialized.
func hasAnyRegularContainerCreated(pod *v1.Pod, podStatus *container.PodStatus) bool {
	for i := range pod.Spec.Containers {
		s := podStatus.FindContainerStatusByName(pod.Spec.Containers[i].Name)
		if s == nil {
			continue
		}
		switch s.State {
		case container.ContainerStateCreated, container.ContainerStateRunning, container.ContainerStateExited:
			return true
		}
	}
	return false
}

// computeInitContainerActions (gate on) fills the init container actions and reports whether
// the pod is initialized: start the first init container not yet started, restart sidecars
// that stopped, restart a failed init container (or kill the pod under restartPolicy Never).
// Init containers are walked backwards because completed ones may have been removed from
// the runtime; the last one with a status tells where initialization stands.
func (m *Manager) computeInitContainerActions(pod *v1.Pod, podStatus *container.PodStatus, changes *podActions) bool {
	if len(pod.Spec.InitContainers) == 0 {
		return true
	}
	sidecars := m.cfg.SidecarContainers
	podHasInitialized := false
	for i := range pod.Spec.Containers {
		s := podStatus.FindContainerStatusByName(pod.Spec.Containers[i].Name)
		if s == nil {
			continue
		}
		// An exited app container does not count: after a node reboot every container is
		// exited and the new sandbox must initialize again.
		if s.State == container.ContainerStateCreated || s.State == container.ContainerStateRunning {
			podHasInitialized = true
			break
		}
	}

	previouslyInitialized := podHasInitialized
	restartOnFailure := shouldRestartOnFailure(pod)
	for i := len(pod.Spec.InitContainers) - 1; i >= 0; i-- {
		c := &pod.Spec.InitContainers[i]
		restartable := container.IsRestartableInitContainer(c, sidecars)
		s := podStatus.FindContainerStatusByName(c.Name)
		if s == nil {
			if previouslyInitialized && restartable {
				changes.InitContainersToStart = append(changes.InitContainersToStart, i)
			}
			continue
		}
		if previouslyInitialized && !restartable {
			// after initialization only sidecars are kept running
			continue
		}

		switch s.State {
		case container.ContainerStateCreated:
			// created but never started: the runtime likely failed to start it; retry
			changes.InitContainersToStart = append(changes.InitContainersToStart, i)

		case container.ContainerStateRunning:
			if !restartable {
				// Wait for the init container to finish; meanwhile it follows a resize
				// (InPlacePodVerticalScalingInitContainers, GA in v1.37).
				if m.cfg.InPlacePodVerticalScalingInitContainers && !m.computeResize(pod, c, s, changes) {
					changes.InitContainersToStart = append(changes.InitContainersToStart, i)
				}
				break
			}
			// As upstream: a sidecar with a startup probe is started (and the next
			// container may start) once the probe succeeded; one that failed it restarts.
			if c.StartupProbe != nil && m.cfg.Startup != nil {
				r, found := m.cfg.Startup.Get(s.ID.ID)
				if !found {
					break // not probed yet: wait for it
				}
				if r != results.Success {
					if r == results.Failure {
						changes.ContainersToKill[s.ID] = containerToKillInfo{name: c.Name, container: c,
							message: fmt.Sprintf("Init container %s failed startup probe", c.Name), grace: probeGrace(c.StartupProbe)}
						changes.InitContainersToStart = append(changes.InitContainersToStart, i)
					}
					break
				}
			}
			if i == len(pod.Spec.InitContainers)-1 {
				podHasInitialized = true
			} else if !previouslyInitialized {
				changes.InitContainersToStart = append(changes.InitContainersToStart, i+1)
			}
			// Its liveness probe does not hold the next container back; failed, it restarts.
			if c.LivenessProbe != nil && m.cfg.Liveness != nil {
				if r, found := m.cfg.Liveness.Get(s.ID.ID); found && r == results.Failure {
					changes.ContainersToKill[s.ID] = containerToKillInfo{name: c.Name, container: c,
						message: fmt.Sprintf("Init container %s failed liveness probe", c.Name), grace: probeGrace(c.LivenessProbe)}
					changes.InitContainersToStart = append(changes.InitContainersToStart, i)
				}
			}
			if _, killed := changes.ContainersToKill[s.ID]; !killed && !m.computeResize(pod, c, s, changes) {
				changes.InitContainersToStart = append(changes.InitContainersToStart, i)
			}

		case container.ContainerStateExited:
			if restartable {
				changes.InitContainersToStart = append(changes.InitContainersToStart, i)
				break
			}
			if isInitContainerFailed(s) {
				restart := restartOnFailure
				if m.cfg.ContainerRestartRules {
					restart = container.ShouldContainerBeRestarted(c, pod, podStatus, m.restartGates())
				}
				if !restart {
					changes.KillPod = true
					changes.InitContainersToStart = nil
					return false
				}
				changes.InitContainersToStart = append(changes.InitContainersToStart, i)
				break
			}
			if i == len(pod.Spec.InitContainers)-1 {
				podHasInitialized = true
			} else {
				changes.InitContainersToStart = append(changes.InitContainersToStart, i+1)
			}

		default: // unknown
			// An unknown state has no exit code: only the container's restartPolicy
			// overrides the pod's, not its rules.
			restart := restartOnFailure
			if m.cfg.ContainerRestartRules && c.RestartPolicy != nil {
				restart = *c.RestartPolicy != v1.ContainerRestartPolicyNever
			}
			if !restartable && !restart {
				changes.KillPod = true
				changes.InitContainersToStart = nil
				return false
			}
			changes.ContainersToKill[s.ID] = containerToKillInfo{
				name: c.Name, container: c,
				message: fmt.Sprintf("Init container is in %q state, try killing it before restart", s.State),
			}
			changes.InitContainersToStart = append(changes.InitContainersToStart, i)
		}

		previouslyInitialized = true
	}

	if !previouslyInitialized {
		changes.InitContainersToStart = append(changes.InitContainersToStart, 0)
	}
	// the walk went backwards; start in spec order
	l := changes.InitContainersToStart
	for i, j := 0, len(l)-1; i < j; i, j = i+1, j-1 {
		l[i], l[j] = l[j], l[i]
	}
	return podHasInitialized
}

// probeFailure is the kill message of a running container whose liveness or startup probe
// failed (upstream's "Container %s failed liveness probe"), or "", and the probe's
// terminationGracePeriodSeconds when it sets one.
func (m *Manager) probeFailure(c *v1.Container, id container.ContainerID) (string, *int64) {
	if m.cfg.Liveness != nil {
		if r, ok := m.cfg.Liveness.Get(id.ID); ok && r == results.Failure {
			return fmt.Sprintf("Container %s failed liveness probe", c.Name), probeGrace(c.LivenessProbe)
		}
	}
	if m.cfg.Startup != nil {
		if r, ok := m.cfg.Startup.Get(id.ID); ok && r == results.Failure {
			return fmt.Sprintf("Container %s failed startup probe", c.Name), probeGrace(c.StartupProbe)
		}
	}
	return "", nil
}

func probeGrace(p *v1.Probe) *int64 {
	if p == nil {
		return nil
	}
	return p.TerminationGracePeriodSeconds
}
