package kubelet

import (
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/pkg/features"
)

// TestDeclaredFeatures: a v1.37 node declares the features it models whose gates are on
// and no other, and refuses a pod that needs one it does not declare (a
// RestartAllContainers rule with RestartAllContainersOnContainerExits off), as the
// kubelet's declared-features admit handler does.
func TestDeclaredFeatures(t *testing.T) {
	restartAll := v1.ContainerRestartRule{Action: v1.ContainerRestartRuleActionRestartAllContainers,
		ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}
	ordinary := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}}}}
	withRule := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", RestartPolicyRules: []v1.ContainerRestartRule{restartAll}}}}}
	tests := []struct {
		name         string
		gates        map[string]bool
		wantDeclared []string
		pod          *v1.Pod
		wantAdmit    bool
		wantMsg      string
	}{
		{"default gates, an ordinary pod", nil,
			[]string{"InPlacePodLevelResourcesVerticalScaling", "InPlacePodVerticalScalingInitContainers", "RestartAllContainersOnContainerExits"},
			ordinary, true, ""},
		{"default gates, a RestartAllContainers rule", nil,
			[]string{"InPlacePodLevelResourcesVerticalScaling", "InPlacePodVerticalScalingInitContainers", "RestartAllContainersOnContainerExits"},
			withRule, true, ""},
		{"RestartAllContainersOnContainerExits off, a RestartAllContainers rule", map[string]bool{"RestartAllContainersOnContainerExits": false},
			[]string{"InPlacePodLevelResourcesVerticalScaling", "InPlacePodVerticalScalingInitContainers"},
			withRule, false, "Pod requires node features that are not available: RestartAllContainersOnContainerExits"},
		// No declared feature stands for image volumes in v1.37 (GA and locked on): a
		// pod with one, its subPath too, needs nothing of the node.
		{"default gates, an image volume", nil,
			[]string{"InPlacePodLevelResourcesVerticalScaling", "InPlacePodVerticalScalingInitContainers", "RestartAllContainersOnContainerExits"},
			&v1.Pod{Spec: v1.PodSpec{
				Containers: []v1.Container{{Name: "c", VolumeMounts: []v1.VolumeMount{{Name: "v", MountPath: "/v", SubPath: "etc"}}}},
				Volumes:    []v1.Volume{{Name: "v", VolumeSource: v1.VolumeSource{Image: &v1.ImageVolumeSource{Reference: "kitten:1.8", PullPolicy: v1.PullIfNotPresent}}}},
			}}, true, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			gate := features.NewFeatureGate()
			if err := gate.SetFromMap(tc.gates); err != nil {
				t.Fatal(err)
			}
			d, err := newDeclaredFeatures(gate, "v1.37.2")
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(d.declared, tc.wantDeclared) {
				t.Errorf("declared = %v, want %v", d.declared, tc.wantDeclared)
			}
			res := d.admit(tc.pod)
			if res.Admit != tc.wantAdmit || (!tc.wantAdmit && (res.Reason != PodFeatureUnsupported || !strings.Contains(res.Message, tc.wantMsg))) {
				t.Errorf("admit = %+v, want admit %v with %q", res, tc.wantAdmit, tc.wantMsg)
			}
		})
	}
}
