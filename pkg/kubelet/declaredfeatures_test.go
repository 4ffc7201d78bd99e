package kubelet

import (
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/pkg/features"
)

// TestDeclaredFeatures: a v1.37 node with the default gates declares the resize features
// it models and no other, and refuses a pod that needs one it does not declare (a
// RestartAllContainers rule), as the kubelet's declared-features admit handler does.
func TestDeclaredFeatures(t *testing.T) {
	d, err := newDeclaredFeatures(features.DefaultFeatureGate, "v1.37.2")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"InPlacePodLevelResourcesVerticalScaling", "InPlacePodVerticalScalingInitContainers"}
	if !reflect.DeepEqual(d.declared, want) {
		t.Errorf("declared = %v, want %v", d.declared, want)
	}
	restartAll := v1.ContainerRestartRule{Action: v1.ContainerRestartRuleActionRestartAllContainers,
		ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}
	tests := []struct {
		name      string
		pod       *v1.Pod
		wantAdmit bool
		wantMsg   string
	}{
		{"an ordinary pod", &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}}}}, true, ""},
		// No declared feature stands for image volumes in v1.37 (GA and locked on): a
		// pod with one, its subPath too, needs nothing of the node.
		{"an image volume", &v1.Pod{Spec: v1.PodSpec{
			Containers: []v1.Container{{Name: "c", VolumeMounts: []v1.VolumeMount{{Name: "v", MountPath: "/v", SubPath: "etc"}}}},
			Volumes:    []v1.Volume{{Name: "v", VolumeSource: v1.VolumeSource{Image: &v1.ImageVolumeSource{Reference: "kitten:1.8", PullPolicy: v1.PullIfNotPresent}}}},
		}}, true, ""},
		{"a RestartAllContainers rule", &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", RestartPolicyRules: []v1.ContainerRestartRule{restartAll}}}}},
			false, "Pod requires node features that are not available: RestartAllContainersOnContainerExits"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := d.admit(tc.pod)
			if res.Admit != tc.wantAdmit || (!tc.wantAdmit && (res.Reason != PodFeatureUnsupported || !strings.Contains(res.Message, tc.wantMsg))) {
				t.Errorf("admit = %+v, want admit %v with %q", res, tc.wantAdmit, tc.wantMsg)
			}
		})
	}
}
