package config

import (
	"crypto/tls"
	"fmt"
	"math"
	"regexp"
	"strings"

	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/minikubelet/minikubelet/pkg/admission"
	"github.com/minikubelet/minikubelet/pkg/featuregate"
	"github.com/minikubelet/minikubelet/pkg/images"
)

// The kubelet's gates the fields v1.37 added depend on. They are upstream gates the
// simulator accepts without modelling (pkg/features registers every kubelet gate), so
// they are named here, where they are read.
const (
	gateKubeletCrashLoopBackOffMax      featuregate.Feature = "KubeletCrashLoopBackOffMax"
	gateKubeletEnsureSecretPulledImages featuregate.Feature = "KubeletEnsureSecretPulledImages"
	gateDefaultPodSysctls               featuregate.Feature = "DefaultPodSysctls"
	gateMemoryQoS                       featuregate.Feature = "MemoryQoS"
)

// validateV137Fields checks the fields v1.37 added with the rules of v1.37's
// ValidateKubeletConfiguration and of its Linux part on a cgroup v2 host (the simulated
// node's), where failCgroupV1 and singleProcessOOMKill have nothing to refuse.
func validateV137Fields(v *validator, kc *KubeletConfiguration, gate featuregate.FeatureGate) {
	validateCrashLoopBackOff(v, kc, gate)
	validateUserNamespaces(v, kc)
	validateDefaultPodSysctls(v, kc, gate)
	validateImagePullCredentials(v, kc, gate)
	validateMemoryReservationPolicy(v, kc, gate)
	validateTLSCurvePreferences(v, kc)
}

// Bounds of crashLoopBackOff.maxContainerRestartPeriod, which upstream compares in whole
// milliseconds (so 999.9ms is too short and 300.0009s is not too long).
const (
	minMaxContainerRestartPeriodMillis = 1000
	maxMaxContainerRestartPeriodMillis = 300000
)

func validateCrashLoopBackOff(v *validator, kc *KubeletConfiguration, gate featuregate.FeatureGate) {
	const path = "kubeletConfiguration.crashLoopBackOff.maxContainerRestartPeriod"
	period := kc.CrashLoopBackOff.MaxContainerRestartPeriod
	switch {
	case !gate.Enabled(gateKubeletCrashLoopBackOffMax):
		if period != nil {
			v.invalid(path, *period, "requires feature gate %s", gateKubeletCrashLoopBackOffMax)
		}
	case period == nil:
		// Load defaults it with the gate on; a Config built otherwise may lack it.
		v.missing(path, "must be set when feature gate %s is enabled", gateKubeletCrashLoopBackOffMax)
	default:
		if ms := period.Duration.Milliseconds(); ms < minMaxContainerRestartPeriodMillis || ms > maxMaxContainerRestartPeriodMillis {
			v.invalid(path, *period, "must be set between 1s and 300s")
		}
	}
}

func validateUserNamespaces(v *validator, kc *KubeletConfiguration) {
	if kc.UserNamespaces == nil || kc.UserNamespaces.IDsPerPod == nil {
		return
	}
	const path = "kubeletConfiguration.userNamespaces.idsPerPod"
	// Upstream reports the first rule broken only; so does this.
	switch n := *kc.UserNamespaces.IDsPerPod; {
	case n < DefaultUserNamespacesIDsPerPod:
		v.invalid(path, n, "must not be less than %d", DefaultUserNamespacesIDsPerPod)
	case n%DefaultUserNamespacesIDsPerPod != 0:
		v.invalid(path, n, "must be a multiple of %d", DefaultUserNamespacesIDsPerPod)
	case n > math.MaxUint32:
		v.invalid(path, n, "must not be more than %d", int64(math.MaxUint32))
	}
}

// sysctlNameRegexp is a sysctl name, dotted or with slashes, without wildcards (upstream's
// isValidSysctlName).
var sysctlNameRegexp = regexp.MustCompile(`^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$`)

const sysctlNameMaxLength = 253

func validateDefaultPodSysctls(v *validator, kc *KubeletConfiguration, gate featuregate.FeatureGate) {
	const path = "kubeletConfiguration.defaultPodSysctls"
	if len(kc.DefaultPodSysctls) == 0 {
		return
	}
	if !gate.Enabled(gateDefaultPodSysctls) {
		v.invalid(path, kc.DefaultPodSysctls, "requires feature gate %s", gateDefaultPodSysctls)
		return
	}
	seen := map[string]string{} // normalised name -> the key written
	for _, name := range sortedKeys(kc.DefaultPodSysctls) {
		entry, value := path+"["+name+"]", kc.DefaultPodSysctls[name]
		if len(name) > sysctlNameMaxLength || !sysctlNameRegexp.MatchString(name) {
			v.invalid(entry, value, "%q is not a valid sysctl name", name)
			continue
		}
		normal := admission.NormalizeSysctl(name) // net/ipv4/ip_forward is net.ipv4.ip_forward
		// The name is valid, so the pattern check can only find it not namespaced.
		if admission.CheckSysctlPattern(name) != nil {
			v.invalid(entry, value, "%q is not known to be namespaced", name)
		}
		if first, dup := seen[normal]; dup {
			v.invalid(entry, value, "duplicate sysctl %q (also set as %q)", normal, first)
			continue
		}
		seen[normal] = name
	}
}

// imagePullCredentialsPolicies are the values of imagePullCredentialsVerificationPolicy.
var imagePullCredentialsPolicies = []kubeletv1beta1.ImagePullCredentialsVerificationPolicy{
	kubeletv1beta1.NeverVerify, kubeletv1beta1.NeverVerifyPreloadedImages,
	kubeletv1beta1.NeverVerifyAllowlistedImages, kubeletv1beta1.AlwaysVerify,
}

func validateImagePullCredentials(v *validator, kc *KubeletConfiguration, gate featuregate.FeatureGate) {
	const (
		policyPath    = "kubeletConfiguration.imagePullCredentialsVerificationPolicy"
		allowlistPath = "kubeletConfiguration.preloadedImagesVerificationAllowlist"
	)
	policy, allowlist := kc.ImagePullCredentialsVerificationPolicy, kc.PreloadedImagesVerificationAllowlist
	if !gate.Enabled(gateKubeletEnsureSecretPulledImages) {
		if policy != "" {
			v.invalid(policyPath, string(policy), "requires feature gate %s", gateKubeletEnsureSecretPulledImages)
		}
		if len(allowlist) > 0 {
			v.invalid(allowlistPath, allowlist, "requires feature gate %s", gateKubeletEnsureSecretPulledImages)
		}
		return
	}
	known := false
	names := make([]string, len(imagePullCredentialsPolicies))
	for i, p := range imagePullCredentialsPolicies {
		known, names[i] = known || policy == p, string(p)
	}
	if !known {
		v.invalid(policyPath, string(policy), "must be one of %s", strings.Join(names, ", "))
	}
	if len(allowlist) > 0 && policy != kubeletv1beta1.NeverVerifyAllowlistedImages {
		v.invalid(allowlistPath, allowlist, "must be empty unless imagePullCredentialsVerificationPolicy is %s", kubeletv1beta1.NeverVerifyAllowlistedImages)
		return
	}
	for i, pattern := range allowlist {
		if err := checkAllowlistPattern(pattern); err != nil {
			v.invalid(fmt.Sprintf("%s[%d]", allowlistPath, i), pattern, "%v", err)
		}
	}
}

// checkAllowlistPattern is upstream's getAllowlistImagePattern: an image name without tag
// or digest, or a prefix of path segments ending in "/*".
func checkAllowlistPattern(pattern string) error {
	if pattern != strings.TrimSpace(pattern) {
		return fmt.Errorf("leading/trailing spaces are not allowed")
	}
	trimmed, wildcard := strings.CutSuffix(pattern, "/*")
	if wildcard {
		trimmed += "/"
	}
	switch {
	case trimmed == "":
		return fmt.Errorf("the supplied pattern is too short")
	case strings.ContainsRune(trimmed, '*'):
		return fmt.Errorf("not a valid wildcard pattern, only patterns ending with '/*' are allowed")
	case wildcard && trimmed == "/":
		return fmt.Errorf("at least registry hostname is required")
	case wildcard:
		return nil
	}
	if _, err := images.ParseReference(pattern); err != nil {
		return fmt.Errorf("failed to parse as an image name: %w", err)
	}
	// A tag or digest sits in the last path segment (a registry's port before the first /).
	if last := pattern[strings.LastIndex(pattern, "/")+1:]; strings.ContainsAny(last, ":@") {
		return fmt.Errorf("neither tag nor digest is accepted in an image reference")
	}
	return nil
}

func validateMemoryReservationPolicy(v *validator, kc *KubeletConfiguration, gate featuregate.FeatureGate) {
	const path = "kubeletConfiguration.memoryReservationPolicy"
	switch policy := kc.MemoryReservationPolicy; policy {
	case "", kubeletv1beta1.NoneMemoryReservationPolicy: // "": a release before the field (forRelease)
	case kubeletv1beta1.TieredReservationMemoryReservationPolicy:
		if !gate.Enabled(gateMemoryQoS) {
			v.invalid(path, string(policy), "requires feature gate %s", gateMemoryQoS)
		}
	default:
		v.invalid(path, string(policy), "must be %s or %s", kubeletv1beta1.NoneMemoryReservationPolicy, kubeletv1beta1.TieredReservationMemoryReservationPolicy)
	}
}

// validateTLSCurvePreferences refuses at load what the kubelet refuses as it sets up TLS
// (component-base's cliflag.TLSCurvePreferences): crypto/tls CurveIDs this Go knows, once each.
func validateTLSCurvePreferences(v *validator, kc *KubeletConfiguration) {
	const path = "kubeletConfiguration.tlsCurvePreferences"
	seen := map[int32]bool{}
	for i, id := range kc.TLSCurvePreferences {
		entry := fmt.Sprintf("%s[%d]", path, i)
		switch {
		case id <= 0 || id > math.MaxUint16:
			v.invalid(entry, id, "curve preference is out of range (must be 1-%d)", math.MaxUint16)
		case seen[id]:
			v.invalid(entry, id, "duplicate curve preference")
		case strings.HasPrefix(tls.CurveID(id).String(), "CurveID("):
			v.invalid(entry, id, "curve preference is not supported by crypto/tls")
		}
		seen[id] = true
	}
}
