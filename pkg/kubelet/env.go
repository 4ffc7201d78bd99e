package kubelet

import (
	"context"
	"maps"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/pkg/cri"
)

// defaultPath is the PATH of a container whose image sets none, as the runtime gives it.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// configMapStore holds the ConfigMaps the node's pods use, read from the API server when
// a pod that refers to one arrives (cluster mode). A ConfigMap not (yet) read is unknown:
// its variables and files are missing, as they would be while a real kubelet waits.
type configMapStore struct {
	mu sync.RWMutex
	m  map[string]*v1.ConfigMap // namespace/name; nil value: not found in the API
}

func (s *configMapStore) get(namespace, name string) (*v1.ConfigMap, bool) {
	if s == nil {
		return nil, false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	cm, ok := s.m[namespace+"/"+name]
	return cm, ok && cm != nil
}

// configMapGetTimeout bounds one ConfigMap read.
const configMapGetTimeout = 5 * time.Second

// fetch reads the ConfigMaps pods refer to that the store does not have yet. It runs on
// the API pod source's goroutine, before the pods are handed on, so that their
// containers start with them known.
func (k *Kubelet) fetchConfigMaps(ctx context.Context, pods []*v1.Pod) {
	s := k.configMaps
	for _, pod := range pods {
		for _, name := range configMapNames(pod) {
			key := pod.Namespace + "/" + name
			s.mu.RLock()
			_, known := s.m[key]
			s.mu.RUnlock()
			if known {
				continue
			}
			getCtx, cancel := context.WithTimeout(ctx, configMapGetTimeout)
			cm, err := k.kubeClient.CoreV1().ConfigMaps(pod.Namespace).Get(getCtx, name, metav1.GetOptions{})
			cancel()
			switch {
			case apierrors.IsNotFound(err):
				cm = nil
			case err != nil:
				klog.FromContext(ctx).V(2).Info("Unable to read a ConfigMap the pod refers to", "pod", klog.KObj(pod), "configMap", key, "err", err)
				continue
			}
			s.mu.Lock()
			s.m[key] = cm
			s.mu.Unlock()
		}
	}
}

// configMapNames lists the ConfigMaps a pod refers to: volumes, env and envFrom.
func configMapNames(pod *v1.Pod) []string {
	var names []string
	for _, vol := range pod.Spec.Volumes {
		if vol.ConfigMap != nil {
			names = append(names, vol.ConfigMap.Name)
		}
	}
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			for _, e := range c.EnvFrom {
				if e.ConfigMapRef != nil {
					names = append(names, e.ConfigMapRef.Name)
				}
			}
			for _, e := range c.Env {
				if e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil {
					names = append(names, e.ValueFrom.ConfigMapKeyRef.Name)
				}
			}
		}
	}
	return names
}

// containerEnvironment is the container's environment and mounted files as the kubelet
// makes them (kuberuntime.Config.Environment): PATH and HOSTNAME, the envFrom ConfigMaps,
// then env (values, the downward API's fields, ConfigMap keys), HOME; files for each mounted
// ConfigMap's keys (nil without any: /etc/hostname is the runtime's, from the sandbox's
// hostname, as containerd writes it; a map per container would cost 6 MB at 20,000
// containers). Secrets are not simulated.
func (k *Kubelet) containerEnvironment(pod *v1.Pod, c *v1.Container, podIPs []string) ([]cri.KeyValue, map[string]string) {
	hostname := pod.Name
	if pod.Spec.Hostname != "" {
		hostname = pod.Spec.Hostname
	}
	envs := []cri.KeyValue{{Key: "PATH", Value: defaultPath}, {Key: "HOSTNAME", Value: hostname}}
	for _, from := range c.EnvFrom {
		if from.ConfigMapRef == nil {
			continue
		}
		if cm, ok := k.configMaps.get(pod.Namespace, from.ConfigMapRef.Name); ok {
			for _, key := range slices.Sorted(maps.Keys(cm.Data)) {
				envs = append(envs, cri.KeyValue{Key: from.Prefix + key, Value: cm.Data[key]})
			}
		}
	}
	podIP := ""
	if len(podIPs) > 0 {
		podIP = podIPs[0]
	}
	for _, e := range c.Env {
		value, ok := e.Value, true
		if src := e.ValueFrom; src != nil {
			switch {
			case src.FieldRef != nil:
				value, ok = fieldValue(pod, src.FieldRef.FieldPath, podIP, k.hostIP)
			case src.ConfigMapKeyRef != nil:
				var cm *v1.ConfigMap
				if cm, ok = k.configMaps.get(pod.Namespace, src.ConfigMapKeyRef.Name); ok {
					value, ok = cm.Data[src.ConfigMapKeyRef.Key]
				}
			default:
				ok = false // secrets and resource fields are not simulated
			}
		}
		if ok {
			envs = append(envs, cri.KeyValue{Key: e.Name, Value: value})
		}
	}
	envs = append(envs, cri.KeyValue{Key: "HOME", Value: "/root"})

	var files map[string]string
	volumes := map[string]*v1.ConfigMapVolumeSource{}
	for _, vol := range pod.Spec.Volumes {
		if vol.ConfigMap != nil {
			volumes[vol.Name] = vol.ConfigMap
		}
	}
	for _, m := range c.VolumeMounts {
		src := volumes[m.Name]
		if src == nil {
			continue
		}
		cm, ok := k.configMaps.get(pod.Namespace, src.Name)
		if !ok {
			continue
		}
		if files == nil {
			files = map[string]string{}
		}
		paths := map[string]string{} // file path in the volume -> key
		if len(src.Items) > 0 {
			for _, it := range src.Items {
				paths[it.Path] = it.Key
			}
		} else {
			for key := range cm.Data {
				paths[key] = key
			}
		}
		for p, key := range paths {
			data, ok := cm.Data[key]
			if !ok {
				continue
			}
			switch {
			case m.SubPath == "":
				files[path.Join(m.MountPath, p)] = data
			case m.SubPath == p:
				files[m.MountPath] = data
			case strings.HasPrefix(p, m.SubPath+"/"):
				files[path.Join(m.MountPath, strings.TrimPrefix(p, m.SubPath+"/"))] = data
			}
		}
	}
	return envs, files
}

// fieldValue resolves a downward API field path, as the kubelet's podFieldSelectorRuntimeValue.
func fieldValue(pod *v1.Pod, fieldPath, podIP, hostIP string) (string, bool) {
	switch fieldPath {
	case "metadata.name":
		return pod.Name, true
	case "metadata.namespace":
		return pod.Namespace, true
	case "metadata.uid":
		return string(pod.UID), true
	case "spec.nodeName":
		return pod.Spec.NodeName, true
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, true
	case "status.podIP", "status.podIPs":
		return podIP, true
	case "status.hostIP", "status.hostIPs":
		return hostIP, true
	}
	for prefix, m := range map[string]map[string]string{"metadata.labels": pod.Labels, "metadata.annotations": pod.Annotations} {
		if key, ok := strings.CutPrefix(fieldPath, prefix+"['"); ok {
			v, ok := m[strings.TrimSuffix(key, "']")]
			return v, ok
		}
	}
	return "", false
}
