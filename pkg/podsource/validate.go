package podsource

import (
	"fmt"
	"math"
	"path"
	"slices"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validatePod is the subset of the apiserver's ValidatePodCreate that covers the fields the
// simulator uses, with the same field paths and messages, through apimachinery's helpers
// (ValidateObjectMeta for name, namespace, labels and annotations; IsDNS1123Label,
// IsQualifiedName, IsValidLabelValue, IsValidPortNum, IsEnvVarName for the rest):
// metadata, containers (name, image, uniqueness, pull policy, ports, env, resources,
// probes, mounts and their subPaths, restartPolicy), volumes (names; an image volume's
// source), hostname, node selector, tolerations, readiness gates and the pod's restart
// and DNS policies and deadlines. A value the simulator would
// turn into a negative duration or an overflowing amount is refused here, not met later.
// The behaviour annotations of the fake runtime are validated by the runtime, not here.
func validatePod(pod *v1.Pod) field.ErrorList {
	errs := apivalidation.ValidateObjectMeta(&pod.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	spec := &pod.Spec
	specPath := field.NewPath("spec")

	volumes := map[string]bool{}
	var imageVolumes map[string]bool // made for the first one: most pods have none
	volumeSources := make(map[string]*v1.VolumeSource, len(spec.Volumes))
	for i := range spec.Volumes {
		vol := &spec.Volumes[i]
		volumeSources[vol.Name] = &vol.VolumeSource
		vp := specPath.Child("volumes").Index(i)
		p := vp.Child("name")
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
		if vol.Image != nil {
			if imageVolumes == nil {
				imageVolumes = map[string]bool{}
			}
			imageVolumes[vol.Name] = true
			errs = append(errs, validateImageVolume(vol, vp)...)
		}
	}

	if len(spec.Containers) == 0 {
		errs = append(errs, field.Required(specPath.Child("containers"), ""))
	}
	// Names are unique across init and app containers: they key the container statuses.
	names := map[string]bool{}
	// Unset is true: the pod shares the node's user namespace.
	hostUsers := spec.HostUsers == nil || *spec.HostUsers
	for i := range spec.InitContainers {
		errs = append(errs, validateContainer(&spec.InitContainers[i], specPath.Child("initContainers").Index(i), true, volumes, imageVolumes, names, volumeSources, hostUsers)...)
	}
	for i := range spec.Containers {
		errs = append(errs, validateContainer(&spec.Containers[i], specPath.Child("containers").Index(i), false, volumes, imageVolumes, names, volumeSources, hostUsers)...)
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
	if d := spec.ActiveDeadlineSeconds; d != nil && (*d < 1 || *d > math.MaxInt32) {
		errs = append(errs, field.Invalid(specPath.Child("activeDeadlineSeconds"), *d, validation.InclusiveRangeError(1, math.MaxInt32)))
	}
	if g := spec.TerminationGracePeriodSeconds; g != nil {
		errs = append(errs, apivalidation.ValidateNonnegativeField(*g, specPath.Child("terminationGracePeriodSeconds"))...)
	}
	if spec.Hostname != "" {
		for _, msg := range validation.IsDNS1123Label(spec.Hostname) {
			errs = append(errs, field.Invalid(specPath.Child("hostname"), spec.Hostname, msg))
		}
	}
	if spec.PriorityClassName != "" {
		for _, msg := range validation.IsDNS1123Subdomain(spec.PriorityClassName) {
			errs = append(errs, field.Invalid(specPath.Child("priorityClassName"), spec.PriorityClassName, msg))
		}
	}
	errs = append(errs, metav1validation.ValidateLabels(spec.NodeSelector, specPath.Child("nodeSelector"))...)
	for i, g := range spec.ReadinessGates {
		for _, msg := range validation.IsQualifiedName(string(g.ConditionType)) {
			errs = append(errs, field.Invalid(specPath.Child("readinessGates").Index(i).Child("conditionType"), string(g.ConditionType), msg))
		}
	}
	for i := range spec.Tolerations {
		errs = append(errs, validateToleration(&spec.Tolerations[i], specPath.Child("tolerations").Index(i))...)
	}
	errs = append(errs, validatePodSecurityContext(spec.SecurityContext, specPath.Child("securityContext"))...)
	errs = append(errs, validateHostUsers(spec, specPath)...)
	return errs
}

// validateHostUsers is upstream's validateHostUsers: a pod in a user namespace of its own
// (hostUsers: false) may not share the node's network (UserNamespacesHostNetworkSupport is
// alpha, off), PID or IPC namespaces, nor use raw block volumes (volumeDevices), which
// cannot be mapped into it. The field paths are upstream's, "HostPID" and "HostIPC" as it
// writes them.
func validateHostUsers(spec *v1.PodSpec, p *field.Path) field.ErrorList {
	if spec.HostUsers == nil || *spec.HostUsers {
		return nil
	}
	var errs field.ErrorList
	if spec.HostNetwork {
		errs = append(errs, field.Forbidden(p.Child("hostNetwork"), "when `hostUsers` is false"))
	}
	if spec.HostPID {
		errs = append(errs, field.Forbidden(p.Child("HostPID"), "when `hostUsers` is false"))
	}
	if spec.HostIPC {
		errs = append(errs, field.Forbidden(p.Child("HostIPC"), "when `hostUsers` is false"))
	}
	for _, kind := range []struct {
		name string
		list []v1.Container
	}{{"initContainers", spec.InitContainers}, {"containers", spec.Containers}} {
		for i := range kind.list {
			if len(kind.list[i].VolumeDevices) > 0 {
				errs = append(errs, field.Forbidden(p.Child(kind.name).Index(i).Child("volumeDevices"), "when `hostUsers` is false"))
			}
		}
	}
	return errs
}

// validateContainerSecurityContext is upstream's ValidateSecurityContext for the fields the
// runtime reads: the user and group ids, and procMount, whose Unmasked needs the pod in a
// user namespace of its own (hostUsers: false): only there is /proc safe to show whole.
func validateContainerSecurityContext(sc *v1.SecurityContext, p *field.Path, hostUsers bool) field.ErrorList {
	if sc == nil {
		return nil
	}
	errs := validateRunAs(sc.RunAsUser, sc.RunAsGroup, p)
	if pm := sc.ProcMount; pm != nil {
		switch *pm {
		case v1.DefaultProcMount, v1.UnmaskedProcMount:
		default:
			errs = append(errs, field.NotSupported(p.Child("procMount"), *pm, []string{string(v1.DefaultProcMount), string(v1.UnmaskedProcMount)}))
		}
		if hostUsers && *pm == v1.UnmaskedProcMount {
			errs = append(errs, field.Invalid(p.Child("procMount"), *pm, "`hostUsers` must be false to use `Unmasked`"))
		}
	}
	return errs
}

// validateRunAs checks a security context's runAsUser and runAsGroup, the pod's and a
// container's alike.
func validateRunAs(user, group *int64, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if user != nil {
		for _, msg := range validation.IsValidUserID(*user) {
			errs = append(errs, field.Invalid(p.Child("runAsUser"), *user, msg))
		}
	}
	if group != nil {
		for _, msg := range validation.IsValidGroupID(*group) {
			errs = append(errs, field.Invalid(p.Child("runAsGroup"), *group, msg))
		}
	}
	return errs
}

// validatePodSecurityContext is upstream's validatePodSpecSecurityContext for the fields the
// runtime reads: the user and group ids, and the supplemental groups policy, which the CRI
// has two values for.
func validatePodSecurityContext(sc *v1.PodSecurityContext, p *field.Path) field.ErrorList {
	if sc == nil {
		return nil
	}
	var errs field.ErrorList
	if sc.FSGroup != nil {
		for _, msg := range validation.IsValidGroupID(*sc.FSGroup) {
			errs = append(errs, field.Invalid(p.Child("fsGroup"), *sc.FSGroup, msg))
		}
	}
	errs = append(errs, validateRunAs(sc.RunAsUser, sc.RunAsGroup, p)...)
	for i, gid := range sc.SupplementalGroups {
		for _, msg := range validation.IsValidGroupID(gid) {
			errs = append(errs, field.Invalid(p.Child("supplementalGroups").Index(i), gid, msg))
		}
	}
	if policy := sc.SupplementalGroupsPolicy; policy != nil {
		switch *policy {
		case v1.SupplementalGroupsPolicyMerge, v1.SupplementalGroupsPolicyStrict:
		default:
			errs = append(errs, field.NotSupported(p.Child("supplementalGroupsPolicy"), *policy,
				[]string{string(v1.SupplementalGroupsPolicyMerge), string(v1.SupplementalGroupsPolicyStrict)}))
		}
	}
	return errs
}

// validateToleration is upstream's ValidateTolerations for one toleration: tolerations
// decide which node taints evict the pod.
func validateToleration(t *v1.Toleration, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if t.Key != "" {
		errs = append(errs, metav1validation.ValidateLabelName(t.Key, p.Child("key"))...)
	}
	if t.Key == "" && t.Operator != v1.TolerationOpExists {
		errs = append(errs, field.Invalid(p.Child("operator"), t.Operator, "operator must be Exists when `key` is empty, which means \"match all values and all keys\""))
	}
	if t.TolerationSeconds != nil && t.Effect != v1.TaintEffectNoExecute {
		errs = append(errs, field.Invalid(p.Child("effect"), t.Effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"))
	}
	switch t.Operator {
	case v1.TolerationOpEqual, "":
		for _, msg := range validation.IsValidLabelValue(t.Value) {
			errs = append(errs, field.Invalid(p.Child("operator"), t.Value, msg))
		}
	case v1.TolerationOpExists:
		if t.Value != "" {
			errs = append(errs, field.Invalid(p.Child("operator"), t, "value must be empty when `operator` is 'Exists'"))
		}
	default:
		errs = append(errs, field.NotSupported(p.Child("operator"), t.Operator, []string{string(v1.TolerationOpEqual), string(v1.TolerationOpExists)}))
	}
	switch t.Effect {
	case "", v1.TaintEffectNoSchedule, v1.TaintEffectPreferNoSchedule, v1.TaintEffectNoExecute:
	default:
		errs = append(errs, field.NotSupported(p.Child("effect"), t.Effect,
			[]string{string(v1.TaintEffectNoSchedule), string(v1.TaintEffectPreferNoSchedule), string(v1.TaintEffectNoExecute)}))
	}
	return errs
}

// validateEnvValueFrom is upstream's validateEnvVarValueFrom with EnvFiles on: exactly one
// source, and not beside a value; a fileKeyRef's key, volume name and path, and its
// volume an emptyDir of the pod (validateFileKeyRefVolumes), since only an emptyDir is a
// directory of the pod's own that a container can write the file into.
func validateEnvValueFrom(e *v1.EnvVar, p *field.Path, volumes map[string]*v1.VolumeSource) field.ErrorList {
	src := e.ValueFrom
	if src == nil {
		return nil
	}
	var errs field.ErrorList
	n := 0
	for _, set := range []bool{src.FieldRef != nil, src.ResourceFieldRef != nil, src.ConfigMapKeyRef != nil, src.SecretKeyRef != nil, src.FileKeyRef != nil} {
		if set {
			n++
		}
	}
	if f := src.FileKeyRef; f != nil {
		fp := p.Child("fileKeyRef")
		if f.Key == "" {
			errs = append(errs, field.Required(fp.Child("key"), ""))
		} else {
			for _, msg := range validation.IsRelaxedEnvVarName(f.Key) {
				errs = append(errs, field.Invalid(fp.Child("key"), f.Key, msg))
			}
		}
		if f.VolumeName == "" {
			errs = append(errs, field.Required(fp.Child("volumeName"), ""))
		} else {
			for _, msg := range validation.IsDNS1123Label(f.VolumeName) {
				errs = append(errs, field.Invalid(fp.Child("volumeName"), f.VolumeName, msg))
			}
		}
		if f.Path == "" {
			errs = append(errs, field.Required(fp.Child("path"), ""))
		} else if slices.Contains(strings.Split(f.Path, "/"), "..") {
			errs = append(errs, field.Invalid(fp.Child("path"), f.Path, "must not contain '..'"))
		}
	}
	switch {
	case n == 0:
		errs = append(errs, field.Invalid(p, "", "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef`, `secretKeyRef` or `fileKeyRef`"))
	case e.Value != "":
		errs = append(errs, field.Invalid(p, "", "may not be specified when `value` is not empty"))
	case n > 1:
		errs = append(errs, field.Invalid(p, "", "may not have more than one field specified at a time"))
	}
	if f := src.FileKeyRef; f != nil {
		// After the pod's other checks upstream (validateFileKeyRefVolumes), here beside them.
		vp := p.Child("fileKeyRef", "volumeName")
		switch vol, ok := volumes[f.VolumeName]; {
		case !ok:
			errs = append(errs, field.NotFound(vp, f.VolumeName))
		case vol.EmptyDir == nil:
			errs = append(errs, field.Invalid(vp, f.VolumeName, "referenced volume must be of type emptyDir"))
		}
	}
	return errs
}

func validateContainer(c *v1.Container, p *field.Path, isInit bool, volumes, imageVolumes, names map[string]bool, volumeSources map[string]*v1.VolumeSource, hostUsers bool) field.ErrorList {
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

	// A container's restartPolicy and restartPolicyRules (ContainerRestartRules, on in v1.37;
	// with RestartAllContainersOnContainerExits, on too, the RestartAllContainers action), as
	// the API server validates them for init and app containers alike.
	errs = append(errs, validateContainerRestartPolicy(c, p)...)

	for i, port := range c.Ports {
		pp := p.Child("ports").Index(i)
		if port.Name != "" {
			for _, msg := range validation.IsValidPortName(port.Name) {
				errs = append(errs, field.Invalid(pp.Child("name"), port.Name, msg))
			}
		}
		for _, msg := range validation.IsValidPortNum(int(port.ContainerPort)) {
			errs = append(errs, field.Invalid(pp.Child("containerPort"), port.ContainerPort, msg))
		}
		if port.HostPort != 0 {
			for _, msg := range validation.IsValidPortNum(int(port.HostPort)) {
				errs = append(errs, field.Invalid(pp.Child("hostPort"), port.HostPort, msg))
			}
		}
		switch port.Protocol {
		case v1.ProtocolTCP, v1.ProtocolUDP, v1.ProtocolSCTP:
		default:
			errs = append(errs, field.NotSupported(pp.Child("protocol"), port.Protocol,
				[]string{string(v1.ProtocolSCTP), string(v1.ProtocolTCP), string(v1.ProtocolUDP)}))
		}
	}

	for i, e := range c.Env {
		ep := p.Child("env").Index(i).Child("name")
		if e.Name == "" {
			errs = append(errs, field.Required(ep, ""))
		}
		for _, msg := range validation.IsEnvVarName(e.Name) {
			errs = append(errs, field.Invalid(ep, e.Name, msg))
		}
		errs = append(errs, validateEnvValueFrom(&e, p.Child("env").Index(i).Child("valueFrom"), volumeSources)...)
	}

	errs = append(errs, validateContainerSecurityContext(c.SecurityContext, p.Child("securityContext"), hostUsers)...)

	rp := p.Child("resources")
	for _, kind := range []struct {
		name string
		list v1.ResourceList
	}{{"limits", c.Resources.Limits}, {"requests", c.Resources.Requests}} {
		for _, name := range sortedNames(kind.list) {
			errs = append(errs, validateResource(name, kind.list[name], rp.Child(kind.name).Key(string(name)))...)
		}
	}
	for _, name := range sortedNames(c.Resources.Requests) {
		req := c.Resources.Requests[name]
		if limit, ok := c.Resources.Limits[name]; ok && req.Cmp(limit) > 0 {
			errs = append(errs, field.Invalid(rp.Child("requests").Key(string(name)), req.String(),
				fmt.Sprintf("must be less than or equal to %s limit of %s", name, limit.String())))
		}
	}

	for _, probe := range []struct {
		name  string
		probe *v1.Probe
	}{{"livenessProbe", c.LivenessProbe}, {"readinessProbe", c.ReadinessProbe}, {"startupProbe", c.StartupProbe}} {
		if probe.probe != nil {
			errs = append(errs, validateProbe(probe.probe, probe.name, p.Child(probe.name))...)
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
		// As upstream's ValidateVolumeMounts, whose subPath errors name the list, not the
		// mount ("volumeMounts.subPath").
		if m.SubPath != "" {
			errs = append(errs, validateLocalDescendingPath(m.SubPath, p.Child("volumeMounts").Child("subPath"))...)
		}
		if m.SubPathExpr != "" {
			if m.SubPath != "" {
				errs = append(errs, field.Invalid(mp.Child("subPathExpr"), m.SubPathExpr, "subPathExpr and subPath are mutually exclusive"))
			}
			errs = append(errs, validateLocalDescendingPath(m.SubPathExpr, p.Child("volumeMounts").Child("subPathExpr"))...)
		}
		if len(m.BindMountOptions) > 0 && imageVolumes[m.Name] {
			errs = append(errs, field.Invalid(mp.Child("bindMountOptions"), m.BindMountOptions, "bindMountOptions may not be used with image volumes"))
		}
	}
	return errs
}

// validateLocalDescendingPath is upstream's: a subPath is relative and never goes up.
func validateLocalDescendingPath(target string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if path.IsAbs(target) {
		errs = append(errs, field.Invalid(p, target, "must be a relative path"))
	}
	for _, item := range strings.Split(target, "/") {
		if item == ".." {
			errs = append(errs, field.Invalid(p, target, "must not contain '..'"))
			break // one error makes the point, as upstream
		}
	}
	return errs
}

// validateImageVolume is upstream's validateVolumeSource for an image volume: the only
// source of its volume, with a reference and a pull policy (defaulted before this runs).
func validateImageVolume(vol *v1.Volume, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	ip := p.Child("image")
	other := vol.VolumeSource
	other.Image = nil
	if other != (v1.VolumeSource{}) {
		// Upstream checks the image source last: the other one was counted first.
		return append(errs, field.Forbidden(ip, "may not specify more than 1 volume type"))
	}
	if vol.Image.Reference == "" {
		errs = append(errs, field.Required(ip.Child("reference"), ""))
	}
	switch vol.Image.PullPolicy {
	case v1.PullAlways, v1.PullIfNotPresent, v1.PullNever:
	case "":
		errs = append(errs, field.Required(ip.Child("pullPolicy"), ""))
	default:
		errs = append(errs, field.NotSupported(ip.Child("pullPolicy"), vol.Image.PullPolicy,
			[]string{string(v1.PullAlways), string(v1.PullIfNotPresent), string(v1.PullNever)}))
	}
	return errs
}

// Largest quantities the simulator accepts: a CPU amount is counted in millicores and
// anything else in units (bytes), both as int64; a bigger quantity would wrap round to a
// negative amount (9223372036854775808 reads back as -9223372036854775808) or to zero (1e400).
var (
	maxCPU      = resource.MustParse("1P")  // 10^18 millicores
	maxQuantity = resource.MustParse("1Ei") // 2^60
)

// validateResource is upstream's validateContainerResourceName and
// ValidateResourceQuantityValue, with an upper bound the int64 arithmetic needs.
func validateResource(name v1.ResourceName, q resource.Quantity, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(string(name)) {
		errs = append(errs, field.Invalid(p, string(name), msg))
	}
	if len(errs) == 0 && !strings.Contains(string(name), "/") {
		switch {
		case name == v1.ResourceCPU, name == v1.ResourceMemory, name == v1.ResourceEphemeralStorage,
			strings.HasPrefix(string(name), v1.ResourceHugePagesPrefix):
		default:
			errs = append(errs, field.Invalid(p, string(name), "must be a standard resource type or fully qualified"))
		}
	}
	max := maxQuantity
	if name == v1.ResourceCPU {
		max = maxCPU
	}
	switch {
	case q.Sign() < 0:
		errs = append(errs, field.Invalid(p, q.String(), "must be greater than or equal to 0"))
	case q.Cmp(max) > 0:
		errs = append(errs, field.Invalid(p, q.String(), "must be less than or equal to "+max.String()))
	}
	return errs
}

// validateProbe is upstream's validateProbe (and validateHandler) for the fields the prober
// uses, run after defaulting: a negative period would make the prober due at every instant.
func validateProbe(probe *v1.Probe, kind string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	h := &probe.ProbeHandler
	handlers := 0
	if h.Exec != nil {
		handlers++
		if len(h.Exec.Command) == 0 {
			errs = append(errs, field.Required(p.Child("exec", "command"), ""))
		}
	}
	if h.HTTPGet != nil {
		handlers++
		errs = append(errs, validatePortNumOrName(h.HTTPGet.Port, p.Child("httpGet", "port"))...)
		switch h.HTTPGet.Scheme {
		case v1.URISchemeHTTP, v1.URISchemeHTTPS:
		default:
			errs = append(errs, field.NotSupported(p.Child("httpGet", "scheme"), h.HTTPGet.Scheme, []string{string(v1.URISchemeHTTP), string(v1.URISchemeHTTPS)}))
		}
	}
	if h.TCPSocket != nil {
		handlers++
		errs = append(errs, validatePortNumOrName(h.TCPSocket.Port, p.Child("tcpSocket", "port"))...)
	}
	if h.GRPC != nil {
		handlers++
		for _, msg := range validation.IsValidPortNum(int(h.GRPC.Port)) {
			errs = append(errs, field.Invalid(p.Child("grpc", "port"), h.GRPC.Port, msg))
		}
	}
	switch {
	case handlers == 0:
		errs = append(errs, field.Required(p, "must specify a handler type"))
	case handlers > 1:
		errs = append(errs, field.Forbidden(p, "may not specify more than 1 handler type"))
	}
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(probe.InitialDelaySeconds), p.Child("initialDelaySeconds"))...)
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(probe.TimeoutSeconds), p.Child("timeoutSeconds"))...)
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(probe.PeriodSeconds), p.Child("periodSeconds"))...)
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(probe.SuccessThreshold), p.Child("successThreshold"))...)
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(probe.FailureThreshold), p.Child("failureThreshold"))...)
	if kind != "readinessProbe" && probe.SuccessThreshold != 1 {
		errs = append(errs, field.Invalid(p.Child("successThreshold"), probe.SuccessThreshold, "must be 1"))
	}
	if g := probe.TerminationGracePeriodSeconds; g != nil {
		switch {
		case kind == "readinessProbe":
			errs = append(errs, field.Invalid(p.Child("terminationGracePeriodSeconds"), *g, "must not be set for readinessProbes"))
		case *g <= 0:
			errs = append(errs, field.Invalid(p.Child("terminationGracePeriodSeconds"), *g, "must be greater than 0"))
		}
	}
	return errs
}

func validatePortNumOrName(port intstr.IntOrString, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if port.Type == intstr.String {
		for _, msg := range validation.IsValidPortName(port.StrVal) {
			errs = append(errs, field.Invalid(p, port.StrVal, msg))
		}
		return errs
	}
	for _, msg := range validation.IsValidPortNum(port.IntValue()) {
		errs = append(errs, field.Invalid(p, port.IntValue(), msg))
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

// validateContainerRestartPolicy is upstream's validateContainerRestartPolicy with container
// restart rules and the RestartAllContainers action allowed.
func validateContainerRestartPolicy(c *v1.Container, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case c.RestartPolicy == nil && len(c.RestartPolicyRules) == 0:
		return nil
	case c.RestartPolicy == nil:
		errs = append(errs, field.Required(p.Child("restartPolicy"), "must specify restartPolicy when restart rules are used"))
	default:
		switch *c.RestartPolicy {
		case v1.ContainerRestartPolicyAlways, v1.ContainerRestartPolicyNever, v1.ContainerRestartPolicyOnFailure:
		default:
			errs = append(errs, field.NotSupported(p.Child("restartPolicy"), *c.RestartPolicy, []string{"Always", "Never", "OnFailure"}))
		}
	}
	if len(c.RestartPolicyRules) > 20 {
		errs = append(errs, field.TooMany(p.Child("restartPolicyRules"), len(c.RestartPolicyRules), 20))
	}
	for i, rule := range c.RestartPolicyRules {
		rp := p.Child("restartPolicyRules").Index(i)
		switch rule.Action {
		case v1.ContainerRestartRuleActionRestart, v1.ContainerRestartRuleActionRestartAllContainers:
		default:
			errs = append(errs, field.NotSupported(rp.Child("action"), rule.Action, []string{"Restart", "RestartAllContainers"}))
		}
		if rule.ExitCodes == nil {
			errs = append(errs, field.Required(rp.Child("exitCodes"), "must be specified"))
			continue
		}
		ep := rp.Child("exitCodes")
		switch rule.ExitCodes.Operator {
		case v1.ContainerRestartRuleOnExitCodesOpIn, v1.ContainerRestartRuleOnExitCodesOpNotIn:
		default:
			errs = append(errs, field.NotSupported(ep.Child("operator"), rule.ExitCodes.Operator, []string{"In", "NotIn"}))
		}
		if len(rule.ExitCodes.Values) > 255 {
			errs = append(errs, field.TooMany(ep.Child("values"), len(rule.ExitCodes.Values), 255))
		}
	}
	return errs
}
