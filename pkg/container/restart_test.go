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
			if got := ShouldContainerBeRestarted(&c, pod, status, RestartGates{ContainerRestartRules: true}); got != tc.want {
				t.Errorf("gate on: ShouldContainerBeRestarted = %t, want %t", got, tc.want)
			}
			if got := ShouldContainerBeRestarted(&c, pod, status, RestartGates{}); got != tc.wantOff {
				t.Errorf("gate off: ShouldContainerBeRestarted = %t, want %t", got, tc.wantOff)
			}
			if got := ContainerShouldRestart(&c, &pod.Spec, int32(tc.exitCode), false); got != tc.want {
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
			if got := ShouldContainerBeRestarted(&c, pod, status, RestartGates{ContainerRestartRules: true}); got != tc.want {
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
}

// TestContainerShouldRestartRestartAllContainers: a matching RestartAllContainers rule
// restarts its container with RestartAllContainersOnContainerExits on; off, the
// container's restartPolicy decides, as for an unknown action.
func TestContainerShouldRestartRestartAllContainers(t *testing.T) {
	restartAll := func(codes ...int32) v1.ContainerRestartRule {
		r := restartRule(v1.ContainerRestartRuleOnExitCodesOpIn, codes...)
		r.Action = v1.ContainerRestartRuleActionRestartAllContainers
		return r
	}
	tests := []struct {
		name     string
		policy   v1.ContainerRestartPolicy
		rules    []v1.ContainerRestartRule
		exitCode int32
		want     bool // gate on
		wantOff  bool // gate off
	}{
		{"Never, rule matches", v1.ContainerRestartPolicyNever, []v1.ContainerRestartRule{restartAll(42)}, 42, true, false},
		{"Never, rule misses", v1.ContainerRestartPolicyNever, []v1.ContainerRestartRule{restartAll(42)}, 1, false, false},
		{"Always, rule matches", v1.ContainerRestartPolicyAlways, []v1.ContainerRestartRule{restartAll(42)}, 42, true, true},
		{"OnFailure, rule misses on 0", v1.ContainerRestartPolicyOnFailure, []v1.ContainerRestartRule{restartAll(42)}, 0, false, false},
		{"first rule Restart wins", v1.ContainerRestartPolicyNever, []v1.ContainerRestartRule{restartRule(v1.ContainerRestartRuleOnExitCodesOpIn, 42), restartAll(42)}, 42, true, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &v1.Container{RestartPolicy: containerPolicy(tc.policy), RestartPolicyRules: tc.rules}
			spec := &v1.PodSpec{RestartPolicy: v1.RestartPolicyNever}
			if got := ContainerShouldRestart(c, spec, tc.exitCode, true); got != tc.want {
				t.Errorf("gate on: ContainerShouldRestart = %t, want %t", got, tc.want)
			}
			if got := ContainerShouldRestart(c, spec, tc.exitCode, false); got != tc.wantOff {
				t.Errorf("gate off: ContainerShouldRestart = %t, want %t", got, tc.wantOff)
			}
		})
	}
}

func ptrString(p *v1.ContainerRestartPolicy) string {
	if p == nil {
		return "nil"
	}
	return string(*p)
}

// TestShouldAllContainersRestart: a pod restarts all its containers when its last status
// says so, or when an init or regular container exited (newest runtime instance, or
// terminated API status) with a code whose first matching rule is RestartAllContainers.
func TestShouldAllContainersRestart(t *testing.T) {
	restartAll := restartRule(v1.ContainerRestartRuleOnExitCodesOpIn, 42)
	restartAll.Action = v1.ContainerRestartRuleActionRestartAllContainers
	never := containerPolicy(v1.ContainerRestartPolicyNever)
	pod := &v1.Pod{Spec: v1.PodSpec{
		InitContainers: []v1.Container{{Name: "setup", RestartPolicy: never, RestartPolicyRules: []v1.ContainerRestartRule{restartAll}}},
		Containers: []v1.Container{
			{Name: "app", RestartPolicy: never, RestartPolicyRules: []v1.ContainerRestartRule{restartRule(v1.ContainerRestartRuleOnExitCodesOpIn, 42), restartAll}},
			{Name: "web", RestartPolicy: never, RestartPolicyRules: []v1.ContainerRestartRule{restartAll}},
		},
	}}
	exited := func(name string, code int) *ContainerStatus {
		return &ContainerStatus{Name: name, State: ContainerStateExited, ExitCode: code}
	}
	apiTerminated := func(name string, code int32) *v1.PodStatus {
		return &v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{Name: name, State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: code}}}}}
	}
	tests := []struct {
		name    string
		runtime []*ContainerStatus // newest first
		api     *v1.PodStatus
		want    bool
	}{
		{"nothing exited", []*ContainerStatus{{Name: "web", State: ContainerStateRunning}}, nil, false},
		{"regular container exited 42", []*ContainerStatus{exited("web", 42)}, nil, true},
		{"init container exited 42", []*ContainerStatus{exited("setup", 42)}, nil, true},
		{"exited with another code", []*ContainerStatus{exited("web", 1)}, nil, false},
		{"a Restart rule matches first", []*ContainerStatus{exited("app", 42)}, nil, false},
		{"an older instance exited 42", []*ContainerStatus{{Name: "web", State: ContainerStateRunning}, exited("web", 42)}, nil, false},
		{"terminated 42 in the API status", nil, apiTerminated("web", 42), true},
		{"terminated 1 in the API status", nil, apiTerminated("web", 1), false},
		{"condition True", nil, &v1.PodStatus{Conditions: []v1.PodCondition{{Type: v1.AllContainersRestarting, Status: v1.ConditionTrue}}}, true},
		{"condition False", nil, &v1.PodStatus{Conditions: []v1.PodCondition{{Type: v1.AllContainersRestarting, Status: v1.ConditionFalse}}}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var status *PodStatus
			if tc.runtime != nil {
				status = &PodStatus{ContainerStatuses: tc.runtime}
			}
			if got := ShouldAllContainersRestart(pod, status, tc.api); got != tc.want {
				t.Errorf("ShouldAllContainersRestart = %t, want %t", got, tc.want)
			}
		})
	}

	// Cleaned up once no instance of an init or regular container is left.
	if AllContainersRestartCleanedUp(pod, &PodStatus{ContainerStatuses: []*ContainerStatus{exited("setup", 0)}}) {
		t.Errorf("AllContainersRestartCleanedUp with an init container left = true")
	}
	if !AllContainersRestartCleanedUp(pod, &PodStatus{}) {
		t.Errorf("AllContainersRestartCleanedUp with none left = false")
	}
	// Only a pod with a RestartAllContainers rule could restart all its containers.
	if !AllContainersCouldRestart(&pod.Spec) || AllContainersCouldRestart(&v1.PodSpec{Containers: []v1.Container{{Name: "c"}}}) || AllContainersCouldRestart(nil) {
		t.Errorf("AllContainersCouldRestart does not follow the RestartAllContainers rules")
	}
}
