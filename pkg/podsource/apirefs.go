package podsource

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
)

// A static pod has no API server behind it: kubelet v1.37 refuses, when it reads the file,
// a pod that names an object only the API server could give it (config/common.go:157-163).

// apiObjectReference names the kind of API object pod references, in upstream's words
// (pkg/api/pod/util.go:1989-2059 HasAPIObjectReference), or "" when it references none: a service
// account, a Secret or ConfigMap (image pull secrets, env and envFrom of every container,
// volumes), a resource claim, or a volume backed by the API. Checked in upstream's order;
// err is a volume whose kind is unknown.
func apiObjectReference(pod *v1.Pod) (string, error) {
	spec := &pod.Spec
	// v1's defaults keep the deprecated serviceAccount and serviceAccountName in sync.
	if spec.ServiceAccountName != "" || spec.DeprecatedServiceAccount != "" {
		return "serviceaccounts", nil
	}
	if referencesSecret(spec) {
		return "secrets", nil
	}
	if referencesConfigMap(spec) {
		return "configmaps", nil
	}
	if len(spec.ResourceClaims) > 0 {
		return "resourceclaims", nil
	}
	for i := range spec.Volumes {
		v := &spec.Volumes[i]
		switch {
		case v.AWSElasticBlockStore != nil, v.AzureDisk != nil, v.CephFS != nil, v.Cinder != nil,
			v.DownwardAPI != nil, v.EmptyDir != nil, v.FC != nil, v.FlexVolume != nil, v.Flocker != nil,
			v.GCEPersistentDisk != nil, v.GitRepo != nil, v.HostPath != nil, v.Image != nil, v.ISCSI != nil,
			v.NFS != nil, v.PhotonPersistentDisk != nil, v.PortworxVolume != nil, v.Quobyte != nil,
			v.RBD != nil, v.ScaleIO != nil, v.StorageOS != nil, v.VsphereVolume != nil:
			continue
		case v.ConfigMap != nil:
			return "configmaps (via configmap volumes)", nil
		case v.Secret != nil:
			return "secrets (via secret volumes)", nil
		case v.CSI != nil:
			return "csidrivers (via CSI volumes)", nil
		case v.Glusterfs != nil:
			return "endpoints (via glusterFS volumes)", nil
		case v.PersistentVolumeClaim != nil:
			return "persistentvolumeclaims", nil
		case v.Ephemeral != nil:
			return "persistentvolumeclaims (via ephemeral volumes)", nil
		case v.AzureFile != nil:
			return "secrets (via azureFile volumes)", nil
		case v.Projected != nil:
			for _, s := range v.Projected.Sources {
				switch {
				case s.ConfigMap != nil:
					return "configmaps (via projected volumes)", nil
				case s.Secret != nil:
					return "secrets (via projected volumes)", nil
				case s.ServiceAccountToken != nil:
					return "serviceaccounts (via projected volumes)", nil
				case s.ClusterTrustBundle != nil:
					return "clustertrustbundles", nil
				case s.PodCertificate != nil:
					return "podcertificates", nil
				case s.DownwardAPI != nil:
					continue
				default:
					return "", fmt.Errorf("unknown source for projected volume %q", v.Name)
				}
			}
		default:
			// Upstream's message has the two spaces.
			return "", fmt.Errorf("unknown volume type for volume  %q", v.Name)
		}
	}
	return "", nil
}

// eachContainerEnv calls f with the env and envFrom of every container, init and ephemeral
// ones included (upstream's AllContainers).
func eachContainerEnv(spec *v1.PodSpec, f func(env []v1.EnvVar, from []v1.EnvFromSource) bool) bool {
	for _, cs := range [][]v1.Container{spec.InitContainers, spec.Containers} {
		for i := range cs {
			if f(cs[i].Env, cs[i].EnvFrom) {
				return true
			}
		}
	}
	for i := range spec.EphemeralContainers {
		if f(spec.EphemeralContainers[i].Env, spec.EphemeralContainers[i].EnvFrom) {
			return true
		}
	}
	return false
}

// referencesSecret reports whether spec names a Secret, as upstream's VisitPodSecretNames
// finds one (empty names do not count).
func referencesSecret(spec *v1.PodSpec) bool {
	for _, r := range spec.ImagePullSecrets {
		if r.Name != "" {
			return true
		}
	}
	if eachContainerEnv(spec, func(env []v1.EnvVar, from []v1.EnvFromSource) bool {
		for _, e := range from {
			if e.SecretRef != nil && e.SecretRef.Name != "" {
				return true
			}
		}
		for _, e := range env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && e.ValueFrom.SecretKeyRef.Name != "" {
				return true
			}
		}
		return false
	}) {
		return true
	}
	named := func(r *v1.LocalObjectReference) bool { return r != nil && r.Name != "" }
	for i := range spec.Volumes {
		s := &spec.Volumes[i].VolumeSource
		switch {
		case s.AzureFile != nil:
			if s.AzureFile.SecretName != "" {
				return true
			}
		case s.CephFS != nil:
			if named(s.CephFS.SecretRef) {
				return true
			}
		case s.Cinder != nil:
			if named(s.Cinder.SecretRef) {
				return true
			}
		case s.FlexVolume != nil:
			if named(s.FlexVolume.SecretRef) {
				return true
			}
		case s.Projected != nil:
			for _, p := range s.Projected.Sources {
				if p.Secret != nil && p.Secret.Name != "" {
					return true
				}
			}
		case s.RBD != nil:
			if named(s.RBD.SecretRef) {
				return true
			}
		case s.Secret != nil:
			if s.Secret.SecretName != "" {
				return true
			}
		case s.ScaleIO != nil:
			if named(s.ScaleIO.SecretRef) {
				return true
			}
		case s.ISCSI != nil:
			if named(s.ISCSI.SecretRef) {
				return true
			}
		case s.StorageOS != nil:
			if named(s.StorageOS.SecretRef) {
				return true
			}
		case s.CSI != nil:
			if named(s.CSI.NodePublishSecretRef) {
				return true
			}
		}
	}
	return false
}

// referencesConfigMap reports whether spec names a ConfigMap, as upstream's
// VisitPodConfigmapNames finds one (empty names do not count).
func referencesConfigMap(spec *v1.PodSpec) bool {
	if eachContainerEnv(spec, func(env []v1.EnvVar, from []v1.EnvFromSource) bool {
		for _, e := range from {
			if e.ConfigMapRef != nil && e.ConfigMapRef.Name != "" {
				return true
			}
		}
		for _, e := range env {
			if e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil && e.ValueFrom.ConfigMapKeyRef.Name != "" {
				return true
			}
		}
		return false
	}) {
		return true
	}
	for i := range spec.Volumes {
		s := &spec.Volumes[i].VolumeSource
		switch {
		case s.Projected != nil:
			for _, p := range s.Projected.Sources {
				if p.ConfigMap != nil && p.ConfigMap.Name != "" {
					return true
				}
			}
		case s.ConfigMap != nil:
			if s.ConfigMap.Name != "" {
				return true
			}
		}
	}
	return false
}

// nodeCriticalPriority is the priority of the system-node-critical class.
const nodeCriticalPriority = 2000001000

// staticPodPriorityWarning is the warning kubelet v1.37 logs about a static pod's priority
// as written in its file (config/common.go:165-169,217-232): the API server's Priority admission
// would resolve it for the mirror pod, which may then fail or not match. "" when the pod
// asks for none, or for system-node-critical by both class and value.
func staticPodPriorityWarning(spec *v1.PodSpec) string {
	switch {
	case spec.Priority == nil && spec.PriorityClassName != "":
		return "Static pod has priorityClassName and nil priority. Kubelet will not use priorityClassName, and mirror pod creation may fail."
	case spec.Priority != nil && spec.PriorityClassName == "":
		return "Static pod has priority without priorityClassName. Mirror pod creation may fail if the default priority class doesn't match the given priority."
	case spec.Priority != nil && (*spec.Priority != nodeCriticalPriority || spec.PriorityClassName != "system-node-critical"):
		return fmt.Sprintf("Static pod has a priority other than %d or a priorityClassName other than %s. Mirror pod may be attempted to be evicted from the node ineffectively.", nodeCriticalPriority, "system-node-critical")
	}
	return ""
}
