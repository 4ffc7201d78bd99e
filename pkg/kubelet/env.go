package kubelet

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/features"
	"github.com/minikubelet/minikubelet/pkg/kuberuntime"
	"github.com/minikubelet/minikubelet/pkg/kubetypes"
)

// envList is an environment being built: a name defined again keeps its place and takes
// the new value (a process sees each name once).
type envList struct {
	vars  []cri.KeyValue
	index map[string]int
}

func (l *envList) set(key, value string) {
	if i, ok := l.index[key]; ok {
		l.vars[i].Value = value
		return
	}
	if l.index == nil {
		l.index = map[string]int{}
	}
	l.index[key] = len(l.vars)
	l.vars = append(l.vars, cri.KeyValue{Key: key, Value: value})
}

func (l *envList) lookup(key string) (string, bool) {
	i, ok := l.index[key]
	if !ok {
		return "", false
	}
	return l.vars[i].Value, true
}

// makeEnvironmentVariables is the container's environment as the kubelet makes it
// (makeEnvironmentVariables): the envFrom ConfigMaps and Secrets (keys sorted, with the
// prefix), then env in order (values with $(VAR) references to the variables before them
// expanded; the downward API's fields and resources; ConfigMap and Secret keys; keys of
// env files in the pod's emptyDir volumes, with EnvFiles: fileKeyValue). PATH,
// HOSTNAME and HOME are the runtime's to add, as on a node (the image's PATH, the
// sandbox's hostname, the user's home). A ConfigMap, Secret or key that is
// missing and not optional is an error with upstream's message: the container waits with
// CreateContainerConfigError. The service links (FOO_SERVICE_HOST, ...) of the
// namespace's Services (with enableServiceLinks) and of the kubernetes Service come last,
// but for names the container defines itself, and $(VAR) can refer to them.
func (k *Kubelet) makeEnvironmentVariables(ctx context.Context, pod *v1.Pod, c *v1.Container, podIPs []string) ([]cri.KeyValue, error) {
	serviceEnv, err := k.serviceEnv(ctx, pod)
	if err != nil {
		return nil, err
	}
	var env envList
	configMaps := map[string]*v1.ConfigMap{}
	secrets := map[string]*v1.Secret{}

	for _, from := range c.EnvFrom {
		var data map[string]string
		switch {
		case from.ConfigMapRef != nil:
			cm, err := k.envConfigMap(ctx, pod, from.ConfigMapRef.Name, configMaps)
			if err != nil {
				if apierrors.IsNotFound(err) && isTrue(from.ConfigMapRef.Optional) {
					continue
				}
				return nil, err
			}
			data = cm.Data
		case from.SecretRef != nil:
			s, err := k.envSecret(ctx, pod, from.SecretRef.Name, secrets)
			if err != nil {
				if apierrors.IsNotFound(err) && isTrue(from.SecretRef.Optional) {
					continue
				}
				return nil, err
			}
			data = make(map[string]string, len(s.Data))
			for key, v := range s.Data {
				data[key] = string(v)
			}
		default:
			continue
		}
		keys := make([]string, 0, len(data))
		for key := range data {
			keys = append(keys, key)
		}
		sort.Strings(keys)
		// Every key, even one that is not a portable variable name: since v1.30
		// (KEP-4369, kubernetes#123385) the kubelet no longer skips those with an
		// InvalidEnvironmentVariableNames event; the API server's validation decides.
		for _, key := range keys {
			env.set(from.Prefix+key, data[key])
		}
	}

	for _, e := range c.Env {
		value := e.Value
		src := e.ValueFrom
		switch {
		case src == nil:
			// $(VAR) refers to the variables defined before this one, and the service links.
			value = kuberuntime.Expand(e.Value, func(name string) (string, bool) {
				if v, ok := env.lookup(name); ok {
					return v, true
				}
				v, ok := serviceEnv[name]
				return v, ok
			})
		case src.FieldRef != nil:
			v, err := podFieldValue(pod, src.FieldRef.FieldPath, k.podIPsFor(pod, podIPs), k.hostIP)
			if err != nil {
				return nil, err
			}
			value = v
		case src.ResourceFieldRef != nil:
			v, err := resourceFieldValue(src.ResourceFieldRef, pod, c, k.nodeInfo.Allocatable)
			if err != nil {
				return nil, err
			}
			value = v
		case src.ConfigMapKeyRef != nil:
			ref := src.ConfigMapKeyRef
			optional := isTrue(ref.Optional)
			cm, err := k.envConfigMap(ctx, pod, ref.Name, configMaps)
			if err != nil {
				if apierrors.IsNotFound(err) && optional {
					continue
				}
				return nil, err
			}
			v, ok := cm.Data[ref.Key]
			if !ok {
				if optional {
					continue
				}
				return nil, fmt.Errorf("couldn't find key %v in ConfigMap %v/%v", ref.Key, pod.Namespace, ref.Name)
			}
			value = v
		case src.SecretKeyRef != nil:
			ref := src.SecretKeyRef
			optional := isTrue(ref.Optional)
			s, err := k.envSecret(ctx, pod, ref.Name, secrets)
			if err != nil {
				if apierrors.IsNotFound(err) && optional {
					continue
				}
				return nil, err
			}
			v, ok := s.Data[ref.Key]
			if !ok {
				if optional {
					continue
				}
				return nil, fmt.Errorf("couldn't find key %v in Secret %v/%v", ref.Key, pod.Namespace, ref.Name)
			}
			value = string(v)
		case src.FileKeyRef != nil:
			if !k.gate.Enabled(features.EnvFiles) {
				break // as upstream with the gate off: the variable is set, empty
			}
			v, skip, err := k.fileKeyValue(ctx, pod, src.FileKeyRef)
			if err != nil {
				return nil, err
			}
			if skip {
				continue
			}
			value = v
		}
		env.set(e.Name, value)
	}
	for _, name := range slices.Sorted(maps.Keys(serviceEnv)) {
		if _, ok := env.lookup(name); !ok {
			env.set(name, serviceEnv[name])
		}
	}
	return env.vars, nil
}

// envConfigMap reads a ConfigMap once per container (upstream keeps a map for the call);
// standalone, upstream's makeEnvironmentVariables refuses with its own message.
func (k *Kubelet) envConfigMap(ctx context.Context, pod *v1.Pod, name string, seen map[string]*v1.ConfigMap) (*v1.ConfigMap, error) {
	if cm, ok := seen[name]; ok {
		return cm, nil
	}
	if k.kubeClient == nil {
		return nil, fmt.Errorf("couldn't get configMap %v/%v, no kubeClient defined", pod.Namespace, name)
	}
	cm, err := k.objects.ConfigMap(ctx, pod.Namespace, name)
	if err != nil {
		return nil, err
	}
	seen[name] = cm
	return cm, nil
}

// envSecret is envConfigMap for a Secret.
func (k *Kubelet) envSecret(ctx context.Context, pod *v1.Pod, name string, seen map[string]*v1.Secret) (*v1.Secret, error) {
	if s, ok := seen[name]; ok {
		return s, nil
	}
	if k.kubeClient == nil {
		return nil, fmt.Errorf("couldn't get secret %v/%v, no kubeClient defined", pod.Namespace, name)
	}
	s, err := k.objects.Secret(ctx, pod.Namespace, name)
	if err != nil {
		return nil, err
	}
	seen[name] = s
	return s, nil
}

// podIPsFor are the IPs the pod's containers see as status.podIP(s): the sandbox's, or the
// node's for a pod on the host network (the runtime reports none for its sandbox).
func (k *Kubelet) podIPsFor(pod *v1.Pod, podIPs []string) []string {
	if len(podIPs) == 0 && pod.Spec.HostNetwork {
		return []string{k.hostIP}
	}
	return podIPs
}

// recordEvent records an event when the kubelet has an event store (tests may build a
// Kubelet without one).
func (k *Kubelet) recordEvent(ref *v1.ObjectReference, eventType, reason, format string, args ...any) {
	if k.events != nil {
		k.events.Eventf(ref, eventType, reason, format, args...)
	}
}

func isTrue(b *bool) bool { return b != nil && *b }

// masterServiceNamespace is where the kubernetes Service lives, whose links every pod gets.
const masterServiceNamespace = metav1.NamespaceDefault

// serviceEnv is upstream's getServiceEnvVarMap: the links of the Services of the pod's
// namespace (unless enableServiceLinks is false) and of the kubernetes Service, for the
// Services with a cluster IP. Standalone there are none. Before the Service watch's first
// list it is upstream's error (the container waits with CreateContainerConfigError; a
// static pod goes on with what there is); where the Services are listed instead
// (simulate), a list that fails is logged and leaves them out.
func (k *Kubelet) serviceEnv(ctx context.Context, pod *v1.Pod) (map[string]string, error) {
	if k.kubeClient == nil {
		return nil, nil
	}
	static := kubetypes.IsStaticPod(pod)
	services := map[string]*v1.Service{}
	add := func(namespace string, only func(*v1.Service) bool) error {
		list, err := k.objects.Services(ctx, namespace, static)
		if errors.Is(err, errServicesNotSynced) {
			return err
		}
		if err != nil {
			klog.FromContext(ctx).V(2).Info("Unable to list the Services for a pod's service links", "pod", klog.KObj(pod), "namespace", namespace, "err", err)
			return nil
		}
		for _, s := range list {
			if (only == nil || only(s)) && s.Spec.ClusterIP != "" && s.Spec.ClusterIP != v1.ClusterIPNone {
				if _, taken := services[s.Name]; !taken || s.Namespace == pod.Namespace {
					services[s.Name] = s
				}
			}
		}
		return nil
	}
	if err := add(masterServiceNamespace, func(s *v1.Service) bool { return s.Name == "kubernetes" }); err != nil {
		return nil, err
	}
	if pod.Spec.EnableServiceLinks == nil || *pod.Spec.EnableServiceLinks {
		if err := add(pod.Namespace, nil); err != nil {
			return nil, err
		}
	}
	env := map[string]string{}
	for _, s := range services {
		serviceLinks(s, env)
	}
	return env, nil
}

// serviceLinks adds a Service's variables as Docker links name them: FOO_SERVICE_HOST,
// FOO_SERVICE_PORT (and _<PORT NAME>), FOO_PORT, FOO_PORT_<port>_<PROTO>[_PROTO|_PORT|_ADDR].
func serviceLinks(s *v1.Service, env map[string]string) {
	name := strings.ToUpper(strings.ReplaceAll(s.Name, "-", "_"))
	ip := s.Spec.ClusterIP
	env[name+"_SERVICE_HOST"] = ip
	for i, p := range s.Spec.Ports {
		port := strconv.Itoa(int(p.Port))
		if i == 0 {
			env[name+"_SERVICE_PORT"] = port
		}
		if p.Name != "" {
			env[name+"_SERVICE_PORT_"+strings.ToUpper(strings.ReplaceAll(p.Name, "-", "_"))] = port
		}
	}
	for i, p := range s.Spec.Ports {
		proto := strings.ToLower(string(p.Protocol))
		if proto == "" {
			proto = "tcp"
		}
		port := strconv.Itoa(int(p.Port))
		url := proto + "://" + net.JoinHostPort(ip, port)
		if i == 0 {
			env[name+"_PORT"] = url
		}
		prefix := name + "_PORT_" + port + "_" + strings.ToUpper(proto)
		env[prefix] = url
		env[prefix+"_PROTO"] = proto
		env[prefix+"_PORT"] = port
		env[prefix+"_ADDR"] = ip
	}
}
