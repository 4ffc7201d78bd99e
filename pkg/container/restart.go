package container

import (
	v1 "k8s.io/api/core/v1"
)

// The container restart rules of the ContainerRestartRules gate (upstream
// pkg/api/v1/pod/util.go): a regular or init container's restartPolicy and
// restartPolicyRules override the pod's restartPolicy for that container. The
// RestartAllContainers action belongs to RestartAllContainersOnContainerExits, which the
// simulator does not model yet: a rule with it falls through to the container's
// restartPolicy, as upstream does with that gate off.

// ContainerShouldRestart reports whether a container that exited with exitCode is
// restarted: the first matching rule decides, then the container's restartPolicy, then the
// pod's (upstream podutil.ContainerShouldRestart). Rules are only read when the container
// has a restartPolicy, which the API server requires of a container with rules.
func ContainerShouldRestart(c *v1.Container, spec *v1.PodSpec, exitCode int32) bool {
	if c.RestartPolicy != nil {
		if rule, ok := FindMatchingContainerRestartRule(c, exitCode); ok && rule.Action == v1.ContainerRestartRuleActionRestart {
			return true
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
