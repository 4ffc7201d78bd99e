package podsource

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/minikubelet/minikubelet/pkg/container"
	"github.com/minikubelet/minikubelet/pkg/events"
	"github.com/minikubelet/minikubelet/pkg/intern"
	"github.com/minikubelet/minikubelet/pkg/kubetypes"
	"github.com/minikubelet/minikubelet/pkg/quantity"
)

// MaxManifestSize is the largest manifest file the source reads: upstream's maxConfigLength
// (10 MiB). Bigger files are refused without being read.
const MaxManifestSize int64 = 10 << 20

// Why a manifest file was refused: the values of the reason label of
// static_pod_manifest_errors_total and FileError.Reason.
const (
	// ReasonReadError: the file could not be stat'ed or read.
	ReasonReadError = "read_error"
	// ReasonTooLarge: the file is over MaxManifestSize.
	ReasonTooLarge = "too_large"
	// ReasonDecode: not YAML/JSON, not an object, or fields of the wrong type.
	ReasonDecode = "decode_error"
	// ReasonNotPod: an object, but not apiVersion v1 kind Pod (a PodList or List too: the
	// kubelet reads one pod per file).
	ReasonNotPod = "not_a_pod"
	// ReasonInvalid: a pod that fails validation (missing container name or image, ...).
	ReasonInvalid = "invalid"
	// ReasonDuplicate: a pod whose namespace/name an earlier file (in sorted order) already defines.
	ReasonDuplicate = "duplicate_name"
)

// Static pods priority classes the apiserver's Priority admission resolves; mirror pods show
// these values, so the static pod carries them too.
var systemPriorityClasses = map[string]int32{
	"system-node-critical":    2000001000,
	"system-cluster-critical": 2000000000,
}

// FileError is a manifest file the source refused. Error() starts with the file path.
type FileError struct {
	// Path is the manifest file.
	Path string
	// Reason is one of the Reason* constants.
	Reason string
	// Pod is the refused pod when its name is known (after defaulting), else nil.
	Pod *v1.ObjectReference
	// Err is the cause, without the path.
	Err error
}

func (e *FileError) Error() string { return e.Path + ": " + e.Err.Error() }

// Unwrap returns the cause.
func (e *FileError) Unwrap() error { return e.Err }

// couldNotParse wraps a decoding failure in upstream's wording (file.go extractFromFile).
func couldNotParse(path, reason string, err error) *FileError {
	return &FileError{Path: path, Reason: reason, Err: fmt.Errorf("couldn't parse as pod(%w), please check config file", err)}
}

// ParseManifest decodes a manifest file's content into its static pod, as the kubelet's file
// source does (tryDecodeSinglePod): data holds one v1 Pod, in YAML or JSON. As upstream, only
// the first YAML document is read (a warning says when others follow) and a PodList or List
// is refused. The pod gets the API server's defaults and the kubelet's static pod defaults
// (name suffixed with the node name, namespace, UID hashed from the pod, node and path,
// config.hash annotation, node name, phase Pending) and is validated. On any error no pod is
// returned and the error is a *FileError naming path. warnings lists what the decoder
// ignored. Safe for concurrent use.
func ParseManifest(data []byte, path, nodeName string) (pods []*v1.Pod, warnings []string, err error) {
	m := parseManifest(data, path, path, nodeName)
	if m.ferr != nil {
		return nil, m.warnings, m.ferr
	}
	return m.pods, m.warnings, nil
}

// parsedManifest is what parseManifest makes of a file.
type parsedManifest struct {
	pods     []*v1.Pod
	warnings []string // what the decoder ignored
	// priorityWarning is upstream's warning about the priority the file asks for, or "".
	priorityWarning string
	ferr            *FileError
}

// uidPath is the path the pod's UID hashes (normally path).
func parseManifest(data []byte, path, uidPath, nodeName string) parsedManifest {
	refuse := func(ferr *FileError) parsedManifest { return parsedManifest{ferr: ferr} }
	j, more, err := firstDocument(data)
	if err != nil {
		return refuse(couldNotParse(path, ReasonDecode, err))
	}
	pod, warnings, ferr := decodeDocument(j, path)
	if ferr != nil {
		return refuse(ferr)
	}
	if more {
		warnings = append(warnings, "documents after the first are ignored: the kubelet reads one pod per file")
	}
	// Upstream refuses a nameless pod before defaulting; "-node" would be a confusing name.
	if pod.Name == "" {
		return refuse(&FileError{Path: path, Reason: ReasonInvalid, Err: errors.New("invalid pod: name is needed for the pod")})
	}
	// As written in the file: upstream has no Priority admission to resolve a class first.
	priorityWarning := staticPodPriorityWarning(&pod.Spec)
	applyAPIDefaults(pod)
	applyStaticPodDefaults(pod, uidPath, nodeName)
	if errs := validatePod(pod); len(errs) > 0 {
		var ref *v1.ObjectReference
		if len(validation.IsDNS1123Subdomain(pod.Name)) == 0 && len(validation.IsDNS1123Label(pod.Namespace)) == 0 {
			ref = events.PodRef(pod) // an event about a pod needs a usable name and namespace
		}
		return refuse(&FileError{Path: path, Reason: ReasonInvalid, Pod: ref, Err: fmt.Errorf("invalid pod: %v", errs)})
	}
	// After validation, as upstream's tryDecodeSinglePod (config/common.go:157-163).
	switch resource, err := apiObjectReference(pod); {
	case err != nil:
		return refuse(&FileError{Path: path, Reason: ReasonInvalid, Pod: events.PodRef(pod), Err: err})
	case resource != "":
		return refuse(&FileError{Path: path, Reason: ReasonInvalid, Pod: events.PodRef(pod), Err: fmt.Errorf("static pods may not reference %s", resource)})
	}
	// Final from here: pods of one template share their containers, tolerations and resource lists.
	intern.PodSpec(pod)
	return parsedManifest{pods: []*v1.Pod{pod}, warnings: warnings, priorityWarning: priorityWarning}
}

// firstDocument converts data to JSON as the kubelet does (apimachinery's yaml.ToJSON: JSON
// as it is, else the first YAML document), and reports whether non-empty YAML documents
// follow the first.
func firstDocument(data []byte) (j []byte, more bool, err error) {
	trimmed := bytes.TrimSpace(data)
	// JSON goes through as is: tab-indented JSON is not valid YAML.
	if len(trimmed) > 0 && trimmed[0] == '{' {
		if !json.Valid(trimmed) {
			var v interface{}
			return nil, false, fmt.Errorf("invalid JSON: %w", json.Unmarshal(trimmed, &v))
		}
		return trimmed, false, nil
	}
	if j, err = yaml.YAMLToJSON(data); err != nil {
		return nil, false, err
	}
	// The reader below splits documents at lines that start with "---": without one, the
	// file holds one document, and the reader's second conversion of it is spared (YAML
	// parsing is most of what reading 10,000 manifests costs).
	if !bytes.HasPrefix(data, docSeparator[1:]) && !bytes.Contains(data, docSeparator) {
		return j, false, nil
	}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	docs := 0
	for docs < 2 {
		doc, err := r.Read()
		if err != nil {
			break // io.EOF, or a later document that does not split: not read anyway
		}
		if dj, err := yaml.YAMLToJSON(doc); err != nil || !isEmptyDocument(dj) {
			docs++
		}
	}
	return j, docs > 1, nil
}

// docSeparator is what starts a YAML document separator line, after the newline that ends
// the line before it.
var docSeparator = []byte("\n---")

func isEmptyDocument(j []byte) bool {
	s := bytes.TrimSpace(j)
	return len(s) == 0 || bytes.Equal(s, []byte("null"))
}

// decodeDocument decodes one JSON document into a pod, checking apiVersion and kind.
func decodeDocument(j []byte, path string) (*v1.Pod, []string, *FileError) {
	t := bytes.TrimSpace(j)
	if isEmptyDocument(t) {
		// An empty file, or one whose first document is only a comment: upstream's message.
		return nil, nil, couldNotParse(path, ReasonDecode, fmt.Errorf("Object 'Kind' is missing in '%s'", t))
	}
	if t[0] != '{' {
		return nil, nil, couldNotParse(path, ReasonDecode, fmt.Errorf("the document is %s, not a Kubernetes object", jsonKind(t)))
	}
	var tm metav1.TypeMeta
	if err := json.Unmarshal(j, &tm); err != nil {
		return nil, nil, couldNotParse(path, ReasonDecode, err)
	}
	if err := checkTypeMeta(tm, t); err != nil {
		return nil, nil, couldNotParse(path, ReasonNotPod, err)
	}
	// A quantity with a huge exponent (cpu: "1e-666666000") would hold the parse for hours.
	if err := quantity.CheckJSON(j); err != nil {
		return nil, nil, couldNotParse(path, ReasonDecode, err)
	}
	pod, warn, err := decodePod(j)
	if err != nil {
		return nil, nil, couldNotParse(path, ReasonDecode, err)
	}
	return pod, warn, nil
}

// checkTypeMeta accepts apiVersion v1 kind Pod. Upstream decodes any registered kind and
// then refuses what is not a Pod with "invalid pod: " and the object printed in full
// (%#v); here the message names the kind instead.
func checkTypeMeta(tm metav1.TypeMeta, j []byte) error {
	switch {
	case tm.Kind == "":
		return fmt.Errorf("Object 'Kind' is missing in '%s'", j)
	case tm.APIVersion == "":
		return fmt.Errorf("Object 'apiVersion' is missing for kind %q", tm.Kind)
	case tm.Kind == "Pod" && tm.APIVersion != "v1":
		return fmt.Errorf("no kind %q is registered for version %q: a static pod manifest is apiVersion v1", tm.Kind, tm.APIVersion)
	case tm.Kind != "Pod":
		return fmt.Errorf("invalid pod: kind %q (apiVersion %q) is not a Pod: the kubelet reads one pod per file", tm.Kind, tm.APIVersion)
	}
	return nil
}

// decodePod decodes leniently, as the kubelet's universal decoder does (unknown fields are
// dropped), and reports the first unknown field as a warning so typos are visible.
func decodePod(j []byte) (*v1.Pod, []string, error) {
	// Strictly first: a manifest without unknown fields, nearly every one, is decoded once.
	pod := &v1.Pod{}
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.DisallowUnknownFields()
	var warnings []string
	if strictErr := dec.Decode(pod); strictErr != nil {
		// The strict decoder goes on past an unknown field, but its error may hide a later
		// one that fails the lenient decode: decode again as the kubelet does.
		pod = &v1.Pod{}
		if err := json.Unmarshal(j, pod); err != nil {
			return nil, nil, err
		}
		warnings = append(warnings, fmt.Sprintf("ignored %v", strings.TrimPrefix(strictErr.Error(), "json: ")))
	}
	// The type is implied by the file; keep it set so the pod prints like the apiserver's.
	pod.Kind, pod.APIVersion = "Pod", "v1"
	return pod, warnings, nil
}

func jsonKind(t []byte) string {
	switch {
	case len(t) == 0:
		return "empty"
	case t[0] == '[':
		return "a list"
	case t[0] == '"':
		return "a string"
	default:
		return "a scalar"
	}
}

// staticPodUID is the UID of a static pod read from path on nodeName (see
// applyStaticPodDefaults).
func staticPodUID(pod *v1.Pod, path, nodeName string) types.UID {
	h := fnv.New128a()
	b, _ := json.Marshal(pod) // a decoded v1.Pod always marshals
	h.Write(b)
	fmt.Fprintf(h, "host:%s", nodeName)
	fmt.Fprintf(h, "file:%s", path)
	return types.UID(hex.EncodeToString(h.Sum(nil)))
}

// applyStaticPodDefaults does what the kubelet's applyDefaults (config/common.go:67-80)
// does for a file source. The UID is FNV-128a, as kubelet v1.37's (v1.30 used md5), of the
// pod as decoded and defaulted by the API (before the name suffix), then "host:<node>" and
// "file:<path>", as 32 lower-case hex digits: the same file on the same node keeps its UID
// across restarts and any edit gives a new UID (the kubelet then replaces the pod).
// Upstream writes the pod into the hash as k8s.io/utils/dump.ForHash prints its internal
// (k8s.io/kubernetes/pkg/apis/core) type, which this module does not have; the pod's v1
// JSON stands in for those bytes, so UIDs differ from a real kubelet's but have the same
// stability, while the hash, the bytes after the pod and the encoding are upstream's.
func applyStaticPodDefaults(pod *v1.Pod, path, nodeName string) {
	if pod.UID == "" {
		pod.UID = staticPodUID(pod, path, nodeName)
	}
	pod.Name = pod.Name + "-" + strings.ToLower(nodeName)
	if pod.Namespace == "" {
		pod.Namespace = metav1.NamespaceDefault
	}
	pod.Spec.NodeName = nodeName
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[kubetypes.ConfigHashAnnotationKey] = string(pod.UID)
	// Static pods tolerate every NoExecute taint so node problems never evict them.
	addToleration(pod, v1.Toleration{Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute})
	pod.Status.Phase = v1.PodPending
}

func addToleration(pod *v1.Pod, t v1.Toleration) {
	for i := range pod.Spec.Tolerations {
		if pod.Spec.Tolerations[i].MatchToleration(&t) {
			return
		}
	}
	pod.Spec.Tolerations = append(pod.Spec.Tolerations, t)
}

// applyAPIDefaults applies the defaults a user sees on a pod read back from the apiserver
// (k8s.io/kubernetes/pkg/apis/core/v1 defaults.go, plus the Priority admission plugin), the
// ones that matter to a kubelet.
func applyAPIDefaults(pod *v1.Pod) {
	spec := &pod.Spec
	if spec.RestartPolicy == "" {
		spec.RestartPolicy = v1.RestartPolicyAlways
	}
	if spec.DNSPolicy == "" {
		spec.DNSPolicy = v1.DNSClusterFirst
	}
	if spec.SecurityContext == nil {
		spec.SecurityContext = &v1.PodSecurityContext{}
	}
	if spec.TerminationGracePeriodSeconds == nil {
		g := int64(v1.DefaultTerminationGracePeriodSeconds)
		spec.TerminationGracePeriodSeconds = &g
	}
	if spec.SchedulerName == "" {
		spec.SchedulerName = v1.DefaultSchedulerName
	}
	if spec.EnableServiceLinks == nil {
		t := v1.DefaultEnableServiceLinks
		spec.EnableServiceLinks = &t
	}
	if spec.Priority == nil {
		p := systemPriorityClasses[spec.PriorityClassName] // 0 for any other class
		spec.Priority = &p
	}
	if spec.PreemptionPolicy == nil {
		pp := v1.PreemptLowerPriority
		spec.PreemptionPolicy = &pp
	}
	for i := range spec.Volumes {
		vol := &spec.Volumes[i]
		if vol.VolumeSource == (v1.VolumeSource{}) {
			vol.EmptyDir = &v1.EmptyDirVolumeSource{}
		}
		// An image volume's pullPolicy defaults as a container's imagePullPolicy
		// (SetDefaults_Volume, with the ImageVolume gate, locked on in v1.37).
		if vol.Image != nil && vol.Image.PullPolicy == "" {
			vol.Image.PullPolicy = v1.PullIfNotPresent
			if imageTag(vol.Image.Reference) == "latest" {
				vol.Image.PullPolicy = v1.PullAlways
			}
		}
	}
	for i := range spec.InitContainers {
		defaultContainer(&spec.InitContainers[i], spec.HostNetwork)
	}
	for i := range spec.Containers {
		defaultContainer(&spec.Containers[i], spec.HostNetwork)
	}
}

func defaultContainer(c *v1.Container, hostNetwork bool) {
	if c.ImagePullPolicy == "" {
		if imageTag(c.Image) == "latest" {
			c.ImagePullPolicy = v1.PullAlways
		} else {
			c.ImagePullPolicy = v1.PullIfNotPresent
		}
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = v1.TerminationMessagePathDefault
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = v1.TerminationMessageReadFile
	}
	for i := range c.Ports {
		if c.Ports[i].Protocol == "" {
			c.Ports[i].Protocol = v1.ProtocolTCP
		}
		if hostNetwork && c.Ports[i].HostPort == 0 {
			c.Ports[i].HostPort = c.Ports[i].ContainerPort
		}
	}
	// Limits without requests: requests default to the limits.
	for name, limit := range c.Resources.Limits {
		if _, ok := c.Resources.Requests[name]; !ok {
			if c.Resources.Requests == nil {
				c.Resources.Requests = v1.ResourceList{}
			}
			c.Resources.Requests[name] = limit.DeepCopy()
		}
	}
	for _, p := range []*v1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
		if p == nil {
			continue
		}
		container.DefaultProbe(p)
	}
}

// imageTag returns an image reference's tag as the apiserver's defaulting sees it: "latest"
// when there is neither a tag nor a digest, "" when there is only a digest.
func imageTag(image string) string {
	name, _, hasDigest := strings.Cut(image, "@")
	lastSlash := strings.LastIndex(name, "/")
	if i := strings.LastIndex(name, ":"); i > lastSlash {
		return name[i+1:]
	}
	if hasDigest {
		return ""
	}
	return "latest"
}
