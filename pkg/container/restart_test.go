package container

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func restartRule(op v1.ContainerRestartRuleOnExitCodesOperator, codes ...int32) v1.ContainerRestartRule {
	return v1.ContainerRestartRule{
		Action:    v1.ContainerRestartRuleActionRestart,
		ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: op, Values: codes},
	}
}

func containerPolicy(p v1.ContainerRestartPolicy) *v1.ContainerRestartPolicy { return &p }

// TestShouldContainerBeRestartedWithRules crosses the pod's restartPolicy, the container's
// restartPolicy and rules, and the exit code, with the ContainerRestartRules gate on and off.
func TestShouldContainerBeRestartedWithRules(t *testing.T) {
	never, onFailure, always := v1.RestartPolicyNever, v1.RestartPolicyOnFailure, v1.RestartPolicyAlways
	cNever, cOnFailure, cAlways := containerPolicy(v1.ContainerRestartPolicyNever), containerPolicy(v1.ContainerRestartPolicyOnFailure), containerPolicy(v1.ContainerRestartPolicyAlways)
	in42 := []v1.ContainerRestartRule{restartRule(v1.ContainerRestartRuleOnExitCodesOpIn, 42)}
	notIn0 := []v1.ContainerRestartRule{restartRule(v1.ContainerRestartRuleOnExitCodesOpNotIn, 0)}
	tests := []struct {
		pod       v1.RestartPolicy
		container *v1.ContainerRestartPolicy
		rules     []v1.ContainerRestartRule
		exitCode  int
		want      bool // gate on
		wantOff   bool // gate off: the pod's restartPolicy alone
	}{
		// no container policy: the pod's decides, gate or not
		{always, nil, nil, 0, true, true},
		{onFailure, nil, nil, 0, false, false},
		{onFailure, nil, nil, 1, true, true},
		{never, nil, nil, 1, false, false},
		// rules without a container policy are not read
		{never, nil, in42, 42, false, false},
		// container policy overrides the pod's
		{never, cAlways, nil, 0, true, false},
		{never, cAlways, nil, 1, true, false},
		{never, cOnFailure, nil, 0, false, false},
		{never, cOnFailure, nil, 1, true, false},
		{always, cNever, nil, 1, false, true},
		{always, cOnFailure, nil, 0, false, true},
		// a matching Restart rule wins over the container policy
		{never, cNever, in42, 42, true, false},
		{never, cNever, in42, 1, false, false},
		{always, cNever, in42, 1, false, true},
		{never, cNever, notIn0, 3, true, false},
		{never, cNever, notIn0, 0, false, false},
		{never, cOnFailure, in42, 0, false, false},
	}
	for _, tc := range tests {
		name := fmt.Sprintf("pod=%s/container=%v/rules=%d/exit=%d", tc.pod, ptrString(tc.container), len(tc.rules), tc.exitCode)
		t.Run(name, func(t *testing.T) {
			c := v1.Container{Name: "app", RestartPolicy: tc.container, RestartPolicyRules: tc.rules}
			pod := &v1.Pod{Spec: v1.PodSpec{RestartPolicy: tc.pod, Containers: []v1.Container{c}}}
			status := &PodStatus{ContainerStatuses: []*ContainerStatus{{Name: "app", State: ContainerStateExited, ExitCode: tc.exitCode}}}
			if got := ShouldContainerBeRestarted(&c, pod, status, true); got != tc.want {
				t.Errorf("gate on: ShouldContainerBeRestarted = %t, want %t", got, tc.want)
			}
			if got := ShouldContainerBeRestarted(&c, pod, status, false); got != tc.wantOff {
				t.Errorf("gate off: ShouldContainerBeRestarted = %t, want %t", got, tc.wantOff)
			}
			if got := ContainerShouldRestart(&c, &pod.Spec, int32(tc.exitCode)); got != tc.want {
				t.Errorf("ContainerShouldRestart = %t, want %t", got, tc.want)
			}
		})
	}
}

// TestShouldContainerBeRestartedBeforeThePolicy covers what decides before any policy: a
// deleted pod, a container never run, running, created or unknown.
func TestShouldContainerBeRestartedBeforeThePolicy(t *testing.T) {
	c := v1.Container{Name: "app", RestartPolicy: containerPolicy(v1.ContainerRestartPolicyAlways)}
	now := metav1.Now()
	tests := []struct {
		name    string
		deleted bool
		status  *ContainerStatus
		want    bool
	}{
		{"never run", false, nil, true},
		{"running", false, &ContainerStatus{Name: "app", State: ContainerStateRunning}, false},
		{"created", false, &ContainerStatus{Name: "app", State: ContainerStateCreated}, true},
		{"unknown", false, &ContainerStatus{Name: "app", State: ContainerStateUnknown}, true},
		{"deleted pod", true, &ContainerStatus{Name: "app", State: ContainerStateExited, ExitCode: 1}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: v1.PodSpec{RestartPolicy: v1.RestartPolicyNever, Containers: []v1.Container{c}}}
			if tc.deleted {
				pod.DeletionTimestamp = &now
			}
			status := &PodStatus{}
			if tc.status != nil {
				status.ContainerStatuses = []*ContainerStatus{tc.status}
			}
			if got := ShouldContainerBeRestarted(&c, pod, status, true); got != tc.want {
				t.Errorf("ShouldContainerBeRestarted = %t, want %t", got, tc.want)
			}
		})
	}
}

func TestFindMatchingContainerRestartRule(t *testing.T) {
	restartAll := v1.ContainerRestartRule{Action: v1.ContainerRestartRuleActionRestartAllContainers,
		ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{7}}}
	tests := []struct {
		name      string
		rules     []v1.ContainerRestartRule
		exitCode  int32
		wantFound bool
		wantIndex int
	}{
		{"none", nil, 1, false, 0},
		{"in matches", []v1.ContainerRestartRule{restartRule(v1.ContainerRestartRuleOnExitCodesOpIn, 1, 2)}, 2, true, 0},
		{"in misses", []v1.ContainerRestartRule{restartRule(v1.ContainerRestartRuleOnExitCodesOpIn, 1, 2)}, 3, false, 0},
		{"notIn matches", []v1.ContainerRestartRule{restartRule(v1.ContainerRestartRuleOnExitCodesOpNotIn, 0)}, 3, true, 0},
		{"notIn misses", []v1.ContainerRestartRule{restartRule(v1.ContainerRestartRuleOnExitCodesOpNotIn, 0)}, 0, false, 0},
		{"first match wins", []v1.ContainerRestartRule{restartAll, restartRule(v1.ContainerRestartRuleOnExitCodesOpIn, 7)}, 7, true, 0},
		{"later rule", []v1.ContainerRestartRule{restartAll, restartRule(v1.ContainerRestartRuleOnExitCodesOpIn, 8)}, 8, true, 1},
		{"no exit codes", []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestart}}, 1, false, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &v1.Container{RestartPolicy: containerPolicy(v1.ContainerRestartPolicyNever), RestartPolicyRules: tc.rules}
			rule, found := FindMatchingContainerRestartRule(c, tc.exitCode)
			if found != tc.wantFound {
				t.Fatalf("found = %t, want %t", found, tc.wantFound)
			}
			if found && rule.Action != tc.rules[tc.wantIndex].Action {
				t.Errorf("rule = %+v, want rules[%d]", rule, tc.wantIndex)
			}
		})
	}
	// A RestartAllContainers rule falls back to the container's policy while its gate is
	// not modelled.
	c := &v1.Container{RestartPolicy: containerPolicy(v1.ContainerRestartPolicyNever), RestartPolicyRules: []v1.ContainerRestartRule{restartAll}}
	if ContainerShouldRestart(c, &v1.PodSpec{RestartPolicy: v1.RestartPolicyNever}, 7) {
		t.Errorf("RestartAllContainers rule restarted the container, want the Never policy")
	}
}

func ptrString(p *v1.ContainerRestartPolicy) string {
	if p == nil {
		return "nil"
	}
	return string(*p)
}
