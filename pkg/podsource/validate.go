package podsource

import (
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validatePod is the subset of the apiserver's ValidatePodCreate a static pod most often
// trips over, with the same field paths and messages: metadata, containers (name, image,
// uniqueness, pull policy, ports, resources, mounts, restartPolicy), volumes and the pod's
// restart and DNS policies. The behaviour annotations of the fake runtime are validated by
// the runtime, not here.
func validatePod(pod *v1.Pod) field.ErrorList {
	errs := apivalidation.ValidateObjectMeta(&pod.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	spec := &pod.Spec
	specPath := field.NewPath("spec")

	volumes := map[string]bool{}
	for i, vol := range spec.Volumes {
		p := specPath.Child("volumes").Index(i).Child("name")
		switch {
		case vol.Name == "":
			errs = append(errs, field.Required(p, ""))
		case volumes[vol.Name]:
			errs = append(errs, field.Duplicate(p, vol.Name))
		default:
			for _, msg := range validation.IsDNS1123Label(vol.Name) {
				errs = append(errs, field.Invalid(p, vol.Name, msg))
			}
		}
		volumes[vol.Name] = true
	}

	if len(spec.Containers) == 0 {
		errs = append(errs, field.Required(specPath.Child("containers"), ""))
	}
	// Names are unique across init and app containers: they key the container statuses.
	names := map[string]bool{}
	for i := range spec.InitContainers {
		errs = append(errs, validateContainer(&spec.InitContainers[i], specPath.Child("initContainers").Index(i), true, volumes, names)...)
	}
	for i := range spec.Containers {
		errs = append(errs, validateContainer(&spec.Containers[i], specPath.Child("containers").Index(i), false, volumes, names)...)
	}

	switch spec.RestartPolicy {
	case v1.RestartPolicyAlways, v1.RestartPolicyOnFailure, v1.RestartPolicyNever:
	default:
		errs = append(errs, field.NotSupported(specPath.Child("restartPolicy"), spec.RestartPolicy,
			[]string{string(v1.RestartPolicyAlways), string(v1.RestartPolicyOnFailure), string(v1.RestartPolicyNever)}))
	}
	switch spec.DNSPolicy {
	case v1.DNSClusterFirstWithHostNet, v1.DNSClusterFirst, v1.DNSDefault, v1.DNSNone:
	default:
		errs = append(errs, field.NotSupported(specPath.Child("dnsPolicy"), spec.DNSPolicy,
			[]string{string(v1.DNSClusterFirstWithHostNet), string(v1.DNSClusterFirst), string(v1.DNSDefault), string(v1.DNSNone)}))
	}
	if d := spec.ActiveDeadlineSeconds; d != nil && *d <= 0 {
		errs = append(errs, field.Invalid(specPath.Child("activeDeadlineSeconds"), *d, "must be between 1 and 2147483647, inclusive"))
	}
	if g := spec.TerminationGracePeriodSeconds; g != nil && *g < 0 {
		errs = append(errs, field.Invalid(specPath.Child("terminationGracePeriodSeconds"), *g, "must be greater than or equal to 0"))
	}
	return errs
}

func validateContainer(c *v1.Container, p *field.Path, isInit bool, volumes, names map[string]bool) field.ErrorList {
	var errs field.ErrorList
	switch {
	case c.Name == "":
		errs = append(errs, field.Required(p.Child("name"), ""))
	case names[c.Name]:
		errs = append(errs, field.Duplicate(p.Child("name"), c.Name))
	default:
		for _, msg := range validation.IsDNS1123Label(c.Name) {
			errs = append(errs, field.Invalid(p.Child("name"), c.Name, msg))
		}
	}
	names[c.Name] = true

	switch {
	case c.Image == "":
		errs = append(errs, field.Required(p.Child("image"), ""))
	case strings.TrimSpace(c.Image) != c.Image:
		errs = append(errs, field.Invalid(p.Child("image"), c.Image, "must not have leading or trailing whitespace"))
	}
	switch c.ImagePullPolicy {
	case v1.PullAlways, v1.PullIfNotPresent, v1.PullNever:
	default:
		errs = append(errs, field.NotSupported(p.Child("imagePullPolicy"), c.ImagePullPolicy,
			[]string{string(v1.PullAlways), string(v1.PullIfNotPresent), string(v1.PullNever)}))
	}
	switch c.TerminationMessagePolicy {
	case v1.TerminationMessageReadFile, v1.TerminationMessageFallbackToLogsOnError:
	default:
		errs = append(errs, field.NotSupported(p.Child("terminationMessagePolicy"), c.TerminationMessagePolicy,
			[]string{string(v1.TerminationMessageReadFile), string(v1.TerminationMessageFallbackToLogsOnError)}))
	}

	// A container restartPolicy exists only for sidecars: init containers with Always.
	if c.RestartPolicy != nil {
		switch {
		case !isInit:
			errs = append(errs, field.Forbidden(p.Child("restartPolicy"), "may not be set for non-init containers"))
		case *c.RestartPolicy != v1.ContainerRestartPolicyAlways:
			errs = append(errs, field.NotSupported(p.Child("restartPolicy"), *c.RestartPolicy, []string{string(v1.ContainerRestartPolicyAlways)}))
		}
	}

	for i, port := range c.Ports {
		pp := p.Child("ports").Index(i)
		if port.ContainerPort < 1 || port.ContainerPort > 65535 {
			errs = append(errs, field.Invalid(pp.Child("containerPort"), port.ContainerPort, "must be between 1 and 65535, inclusive"))
		}
		if port.HostPort < 0 || port.HostPort > 65535 {
			errs = append(errs, field.Invalid(pp.Child("hostPort"), port.HostPort, "must be between 1 and 65535, inclusive"))
		}
		switch port.Protocol {
		case v1.ProtocolTCP, v1.ProtocolUDP, v1.ProtocolSCTP:
		default:
			errs = append(errs, field.NotSupported(pp.Child("protocol"), port.Protocol,
				[]string{string(v1.ProtocolSCTP), string(v1.ProtocolTCP), string(v1.ProtocolUDP)}))
		}
	}

	rp := p.Child("resources")
	for _, kind := range []struct {
		name string
		list v1.ResourceList
	}{{"limits", c.Resources.Limits}, {"requests", c.Resources.Requests}} {
		for _, name := range sortedNames(kind.list) {
			if q := kind.list[name]; q.Sign() < 0 {
				errs = append(errs, field.Invalid(rp.Child(kind.name).Key(string(name)), q.String(), "must be greater than or equal to 0"))
			}
		}
	}
	for _, name := range sortedNames(c.Resources.Requests) {
		req := c.Resources.Requests[name]
		if limit, ok := c.Resources.Limits[name]; ok && req.Cmp(limit) > 0 {
			errs = append(errs, field.Invalid(rp.Child("requests").Key(string(name)), req.String(),
				fmt.Sprintf("must be less than or equal to %s limit of %s", name, limit.String())))
		}
	}

	for i, m := range c.VolumeMounts {
		mp := p.Child("volumeMounts").Index(i)
		if m.Name == "" {
			errs = append(errs, field.Required(mp.Child("name"), ""))
		} else if !volumes[m.Name] {
			errs = append(errs, field.NotFound(mp.Child("name"), m.Name))
		}
		if m.MountPath == "" {
			errs = append(errs, field.Required(mp.Child("mountPath"), ""))
		}
	}
	return errs
}

// sortedNames keeps error lists stable: the source reports a bad file again only when its
// error text changes.
func sortedNames(l v1.ResourceList) []v1.ResourceName {
	out := make([]v1.ResourceName, 0, len(l))
	for n := range l {
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
