package kubelet

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minikubelet/minikubelet/pkg/cri"
)

// TestContainerEnvironment: what exec and exec probes see, as the kubelet builds a
// container's environment and volumes: literal values, the downward API, ConfigMap keys
// and files when the ConfigMap is known, nothing for what is not simulated.
func TestContainerEnvironment(t *testing.T) {
	k := &Kubelet{hostIP: "10.0.0.1", configMaps: &configMapStore{m: map[string]*v1.ConfigMap{
		"shop/settings": {Data: map[string]string{"mode": "blue", "level": "3", "app.conf": "a=1\n"}},
		"shop/missing":  nil, // not found in the API
	}}}
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "shop", UID: "u-1", Labels: map[string]string{"app": "web"}},
		Spec: v1.PodSpec{
			NodeName: "node-1", Hostname: "web",
			Volumes: []v1.Volume{
				{Name: "conf", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "settings"}}}},
				{Name: "one", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "settings"},
					Items: []v1.KeyToPath{{Key: "mode", Path: "colour"}}}}},
				{Name: "gone", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "missing"}}}},
			},
		},
	}
	c := &v1.Container{
		Name:    "app",
		EnvFrom: []v1.EnvFromSource{{Prefix: "CFG_", ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "settings"}}}},
		Env: []v1.EnvVar{
			{Name: "GREETING", Value: "hello"},
			{Name: "POD", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
			{Name: "NODE", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
			{Name: "POD_IP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
			{Name: "HOST_IP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.hostIP"}}},
			{Name: "APP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels['app']"}}},
			{Name: "MODE", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "settings"}, Key: "mode"}}},
			{Name: "UNKNOWN", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "missing"}, Key: "x"}}},
			{Name: "PASSWORD", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "s"}, Key: "p"}}},
		},
		VolumeMounts: []v1.VolumeMount{
			{Name: "conf", MountPath: "/etc/app"},
			{Name: "one", MountPath: "/etc/one"},
			{Name: "conf", MountPath: "/etc/level", SubPath: "level"},
			{Name: "gone", MountPath: "/etc/gone"},
		},
	}
	envs, files := k.containerEnvironment(pod, c, []string{"10.88.0.7"})
	wantEnvs := []cri.KeyValue{
		{Key: "PATH", Value: defaultPath}, {Key: "HOSTNAME", Value: "web"},
		{Key: "CFG_app.conf", Value: "a=1\n"}, {Key: "CFG_level", Value: "3"}, {Key: "CFG_mode", Value: "blue"},
		{Key: "GREETING", Value: "hello"}, {Key: "POD", Value: "web-0"}, {Key: "NODE", Value: "node-1"},
		{Key: "POD_IP", Value: "10.88.0.7"}, {Key: "HOST_IP", Value: "10.0.0.1"}, {Key: "APP", Value: "web"},
		{Key: "MODE", Value: "blue"}, {Key: "HOME", Value: "/root"},
	}
	if diff := cmp.Diff(wantEnvs, envs); diff != "" {
		t.Errorf("environment (-want +got):\n%s", diff)
	}
	wantFiles := map[string]string{
		"/etc/app/mode": "blue", "/etc/app/level": "3", "/etc/app/app.conf": "a=1\n",
		"/etc/one/colour": "blue",
		"/etc/level":      "3",
	}
	if diff := cmp.Diff(wantFiles, files); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	// Without ConfigMap mounts there is nothing to keep per container: /etc/hostname is the
	// runtime's, from the sandbox.
	if _, files := k.containerEnvironment(pod, &v1.Container{Name: "plain", Image: "busybox"}, nil); files != nil {
		t.Errorf("files of a container without mounts = %v, want nil", files)
	}
}
