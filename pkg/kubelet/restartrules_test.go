package kubelet

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
)

// TestContainerRestartRules runs the e2e "Container Restart Rules" pods (sig-node
// container_restart_policy.go) on a node with the default gates: in a restartPolicy Never
// pod, a container whose own restartPolicy is Always, or whose rule restarts it on exit code
// 42, is restarted and keeps the pod Running; one whose rule does not match its exit code
// stays down, with the pod Failed and no restart.
func TestContainerRestartRules(t *testing.T) {
	always, never := v1.ContainerRestartPolicyAlways, v1.ContainerRestartPolicyNever
	on42 := []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestart,
		ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}}
	tests := []struct {
		name        string
		policy      *v1.ContainerRestartPolicy
		rules       []v1.ContainerRestartRule
		exit        string
		wantRestart bool
	}{
		{"container Always", &always, nil, "exit 1", true},
		{"rule match", &never, on42, "exit 42", true},
		{"rule mismatch", &never, on42, "exit 1", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newClusterHarness(t, fake.NewSimpleClientset())
			pod := &v1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "restart-rules", Namespace: "default", UID: types.UID("uid-restart-rules"), CreationTimestamp: metav1.NewTime(epoch)},
				Spec: v1.PodSpec{
					NodeName: testNode, RestartPolicy: v1.RestartPolicyNever, DNSPolicy: v1.DNSClusterFirst,
					Containers: []v1.Container{{
						Name: "main-container", Image: "busybox", Command: []string{"/bin/sh", "-c", tc.exit},
						TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: v1.TerminationMessageReadFile,
						RestartPolicy: tc.policy, RestartPolicyRules: tc.rules,
					}},
				},
				Status: v1.PodStatus{Phase: v1.PodPending},
			}
			h.k.UpdateAPIPods(context.Background(), []*v1.Pod{pod})
			restarts := func() int32 {
				if p := h.pod("restart-rules"); p != nil && len(p.Status.ContainerStatuses) == 1 {
					return p.Status.ContainerStatuses[0].RestartCount
				}
				return -1
			}
			if tc.wantRestart {
				// Two restarts: the second comes after the crash-loop back-off.
				h.until(60, "two restarts", func() bool { return restarts() >= 2 }, h.describe)
				if phase := h.phase("restart-rules"); phase != v1.PodRunning {
					t.Errorf("phase = %s while the container restarts, want Running", phase)
				}
				return
			}
			h.until(30, "pod Failed", func() bool { return h.phase("restart-rules") == v1.PodFailed }, h.describe)
			h.round(30e9) // well past any back-off: still no restart
			if n := restarts(); n != 0 {
				t.Errorf("restartCount = %d, want 0: the rule does not match", n)
			}
			if phase := h.phase("restart-rules"); phase != v1.PodFailed {
				t.Errorf("phase = %s, want Failed", phase)
			}
		})
	}
}

// TestContainerRestartPolicyOnFailureJobPod runs the pod of the e2e Job "containers
// restarted by container restart policy should not trigger PodFailurePolicy": restartPolicy
// Never, its container OnFailure, failing its first run and succeeding its second. The pod
// must never be Failed (the Job controller would apply its FailJob rule on exit code 1): it
// stays Running through the restart and ends Succeeded.
func TestContainerRestartPolicyOnFailureJobPod(t *testing.T) {
	h := newClusterHarness(t, fake.NewSimpleClientset())
	onFailure := v1.ContainerRestartPolicyOnFailure
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "fail-once", Namespace: "default", UID: types.UID("uid-fail-once"), CreationTimestamp: metav1.NewTime(epoch)},
		Spec: v1.PodSpec{
			NodeName: testNode, RestartPolicy: v1.RestartPolicyNever, DNSPolicy: v1.DNSClusterFirst,
			Volumes: []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}},
			Containers: []v1.Container{{
				Name: "c", Image: "busybox", Command: []string{"/bin/sh", "-c"},
				Args: []string{`
			if [[ -r /data/foo ]]
			then
				exit 0
			else
				touch /data/foo
				exit 1
			fi
		`},
				VolumeMounts:           []v1.VolumeMount{{Name: "data", MountPath: "/data"}},
				TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: v1.TerminationMessageReadFile,
				RestartPolicy: &onFailure,
			}},
		},
		Status: v1.PodStatus{Phase: v1.PodPending},
	}
	h.k.UpdateAPIPods(context.Background(), []*v1.Pod{pod})
	sawFailed := false
	h.until(60, "pod Succeeded", func() bool {
		phase := h.phase("fail-once")
		sawFailed = sawFailed || phase == v1.PodFailed
		return phase == v1.PodSucceeded || phase == v1.PodFailed
	}, h.describe)
	p := h.pod("fail-once")
	if sawFailed || p.Status.Phase != v1.PodSucceeded {
		t.Fatalf("phase = %s (failed on the way: %t), want Succeeded; %s", p.Status.Phase, sawFailed, h.describe())
	}
	if n := p.Status.ContainerStatuses[0].RestartCount; n != 1 {
		t.Errorf("restartCount = %d, want 1", n)
	}
}
