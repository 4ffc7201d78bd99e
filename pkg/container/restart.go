package container

import (
	v1 "k8s.io/api/core/v1"
)

// The container restart rules of the ContainerRestartRules gate (upstream
// pkg/api/v1/pod/util.go): a regular or init container's restartPolicy and
// restartPolicyRules override the pod's restartPolicy for that container. A rule's action
// is Restart (this container) or, with RestartAllContainersOnContainerExits,
// RestartAllContainers: the pod's containers are all removed and the pod starts again from
// its first init container, in the same sandbox (ShouldAllContainersRestart below; the
// runtime manager does the reset). With that gate off a RestartAllContainers rule falls
// through to the container's restartPolicy, as upstream.

// RestartGates are the feature gates a restart decision follows.
type RestartGates struct {
	// ContainerRestartRules: a container's own restartPolicy and rules decide before the
	// pod's restartPolicy.
	ContainerRestartRules bool
	// RestartAllContainers is RestartAllContainersOnContainerExits (it needs
	// ContainerRestartRules): a matching RestartAllContainers rule restarts the container.
	RestartAllContainers bool
}

// ContainerShouldRestart reports whether a container that exited with exitCode is
// restarted: the first matching rule decides, then the container's restartPolicy, then the
// pod's (upstream podutil.ContainerShouldRestart). Rules are only read when the container
// has a restartPolicy, which the API server requires of a container with rules. restartAll
// is the RestartAllContainersOnContainerExits gate: on, a RestartAllContainers rule
// restarts the container (with the others); off, the container's restartPolicy decides.
func ContainerShouldRestart(c *v1.Container, spec *v1.PodSpec, exitCode int32, restartAll bool) bool {
	if c.RestartPolicy != nil {
		if rule, ok := FindMatchingContainerRestartRule(c, exitCode); ok {
			switch rule.Action {
			case v1.ContainerRestartRuleActionRestart:
				return true
			case v1.ContainerRestartRuleActionRestartAllContainers:
				if restartAll {
					return true
				}
			}
		}
		switch *c.RestartPolicy {
		case v1.ContainerRestartPolicyAlways:
			return true
		case v1.ContainerRestartPolicyOnFailure:
			return exitCode != 0
		case v1.ContainerRestartPolicyNever:
			return false
		}
	}
	switch spec.RestartPolicy {
	case v1.RestartPolicyOnFailure:
		return exitCode != 0
	case v1.RestartPolicyNever:
		return false
	default: // Always, and the API default
		return true
	}
}

// FindMatchingContainerRestartRule returns the first of the container's rules whose exit
// codes match exitCode (upstream podutil.FindMatchingContainerRestartRule). A rule with
// an unknown operator or no exit codes never matches.
func FindMatchingContainerRestartRule(c *v1.Container, exitCode int32) (v1.ContainerRestartRule, bool) {
	for _, rule := range c.RestartPolicyRules {
		if rule.ExitCodes == nil {
			continue
		}
		matched := false
		for _, code := range rule.ExitCodes.Values {
			if code == exitCode {
				matched = true
			}
		}
		switch rule.ExitCodes.Operator {
		case v1.ContainerRestartRuleOnExitCodesOpIn:
			if matched {
				return rule, true
			}
		case v1.ContainerRestartRuleOnExitCodesOpNotIn:
			if !matched {
				return rule, true
			}
		}
	}
	return v1.ContainerRestartRule{}, false
}

// TriggersRestartAll reports whether a container that exited with exitCode asks, by its
// first matching rule, for all of the pod's containers to restart.
func TriggersRestartAll(c *v1.Container, exitCode int32) bool {
	rule, ok := FindMatchingContainerRestartRule(c, exitCode)
	return ok && rule.Action == v1.ContainerRestartRuleActionRestartAllContainers
}

// AllContainersCouldRestart reports whether any init or regular container of spec has a
// RestartAllContainers rule (upstream podutil.AllContainersCouldRestart): only such a pod
// gets the AllContainersRestarting condition, and its terminated containers may come back
// whatever their restart policies.
func AllContainersCouldRestart(spec *v1.PodSpec) bool {
	if spec == nil {
		return false
	}
	for _, list := range [][]v1.Container{spec.InitContainers, spec.Containers} {
		for i := range list {
			for _, rule := range list[i].RestartPolicyRules {
				if rule.Action == v1.ContainerRestartRuleActionRestartAllContainers {
					return true
				}
			}
		}
	}
	return false
}

// ShouldAllContainersRestart reports whether the pod is restarting all its containers
// (upstream kubecontainer.ShouldAllContainersRestart): apiStatus (the last generated
// status) already has AllContainersRestarting True, or an init or regular container's
// newest runtime instance (podStatus), or its terminated API status, exited with a code
// whose first matching rule is RestartAllContainers. Either status may be nil.
func ShouldAllContainersRestart(pod *v1.Pod, podStatus *PodStatus, apiStatus *v1.PodStatus) bool {
	if apiStatus != nil {
		for _, c := range apiStatus.Conditions {
			if c.Type == v1.AllContainersRestarting && c.Status == v1.ConditionTrue {
				return true
			}
		}
	}
	terminated := func(name string) *v1.ContainerStateTerminated {
		if apiStatus == nil {
			return nil
		}
		// As upstream's name map: a regular container's status wins over an init
		// container's of the same name (the API server forbids that anyway).
		for _, list := range [][]v1.ContainerStatus{apiStatus.ContainerStatuses, apiStatus.InitContainerStatuses} {
			for i := range list {
				if list[i].Name == name {
					return list[i].State.Terminated
				}
			}
		}
		return nil
	}
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			c := &list[i]
			if s := podStatus.FindContainerStatusByName(c.Name); s != nil && s.State == ContainerStateExited && TriggersRestartAll(c, int32(s.ExitCode)) {
				return true
			}
			if t := terminated(c.Name); t != nil && TriggersRestartAll(c, t.ExitCode) {
				return true
			}
		}
	}
	return false
}

// AllContainersRestartCleanedUp reports whether the runtime holds no instance of any init
// or regular container of the pod (upstream kubecontainer.AllContainersRestartCleanedUp):
// the reset is done and the containers can start again.
func AllContainersRestartCleanedUp(pod *v1.Pod, podStatus *PodStatus) bool {
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if podStatus.FindContainerStatusByName(list[i].Name) != nil {
				return false
			}
		}
	}
	return true
}
