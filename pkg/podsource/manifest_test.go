package podsource

import (
	"errors"
	"reflect"
	"regexp"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/minikubelet/minikubelet/pkg/kubetypes"
)

// kubectlRun is `kubectl run x --image=nginx --dry-run=client -o yaml` (kubectl 1.30) verbatim.
const kubectlRun = `apiVersion: v1
kind: Pod
metadata:
  creationTimestamp: null
  labels:
    run: x
  name: x
spec:
  containers:
  - image: nginx
    name: x
    resources: {}
  dnsPolicy: ClusterFirst
  restartPolicy: Always
status: {}
`

func podYAML(name string, extra string) string {
	return `apiVersion: v1
kind: Pod
metadata:
  name: ` + name + `
spec:
  containers:
  - name: app
    image: busybox:1.36
` + extra
}

func TestParseManifestKubectlRunOutput(t *testing.T) {
	pods, warnings, err := ParseManifest([]byte(kubectlRun), "/etc/kubernetes/manifests/x.yaml", "Node-1")
	if err != nil {
		t.Fatalf("ParseManifest: %v", err)
	}
	if len(warnings) != 0 {
		t.Errorf("warnings = %v, want none for kubectl output", warnings)
	}
	if len(pods) != 1 {
		t.Fatalf("got %d pods, want 1", len(pods))
	}
	p := pods[0]
	c := p.Spec.Containers[0]
	checks := []struct {
		what      string
		got, want interface{}
	}{
		{"name", p.Name, "x-node-1"},
		{"namespace", p.Namespace, "default"},
		{"spec.nodeName", p.Spec.NodeName, "Node-1"},
		{"config.hash", p.Annotations[kubetypes.ConfigHashAnnotationKey], string(p.UID)},
		{"phase", p.Status.Phase, v1.PodPending},
		{"label kept", p.Labels["run"], "x"},
		{"restartPolicy", p.Spec.RestartPolicy, v1.RestartPolicyAlways},
		{"dnsPolicy", p.Spec.DNSPolicy, v1.DNSClusterFirst},
		{"terminationGracePeriodSeconds", *p.Spec.TerminationGracePeriodSeconds, int64(30)},
		{"schedulerName", p.Spec.SchedulerName, "default-scheduler"},
		{"enableServiceLinks", *p.Spec.EnableServiceLinks, true},
		{"priority", *p.Spec.Priority, int32(0)},
		{"preemptionPolicy", *p.Spec.PreemptionPolicy, v1.PreemptLowerPriority},
		{"imagePullPolicy (untagged)", c.ImagePullPolicy, v1.PullAlways},
		{"terminationMessagePath", c.TerminationMessagePath, "/dev/termination-log"},
		{"terminationMessagePolicy", c.TerminationMessagePolicy, v1.TerminationMessageReadFile},
		{"kind", p.Kind, "Pod"},
		{"creationTimestamp left for the source", p.CreationTimestamp.IsZero(), true},
	}
	for _, ck := range checks {
		if ck.got != ck.want {
			t.Errorf("%s = %v, want %v", ck.what, ck.got, ck.want)
		}
	}
	if !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(string(p.UID)) {
		t.Errorf("UID %q is not a 32-digit hex md5", p.UID)
	}
	if len(p.Spec.Tolerations) != 1 || p.Spec.Tolerations[0].Operator != v1.TolerationOpExists || p.Spec.Tolerations[0].Effect != v1.TaintEffectNoExecute {
		t.Errorf("tolerations = %+v, want the static pod NoExecute toleration", p.Spec.Tolerations)
	}
}

func TestParseManifestUIDStability(t *testing.T) {
	uid := func(data, path, node string) string {
		t.Helper()
		pods, _, err := ParseManifest([]byte(data), path, node)
		if err != nil {
			t.Fatalf("ParseManifest: %v", err)
		}
		return string(pods[0].UID)
	}
	base := uid(kubectlRun, "/m/x.yaml", "n1")
	tests := []struct {
		name             string
		data, path, node string
		same             bool
	}{
		{"same input", kubectlRun, "/m/x.yaml", "n1", true},
		{"other path", kubectlRun, "/m/y.yaml", "n1", false},
		{"other node", kubectlRun, "/m/x.yaml", "n2", false},
		{"edited image", strings.Replace(kubectlRun, "image: nginx", "image: nginx:1.25", 1), "/m/x.yaml", "n1", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := uid(tt.data, tt.path, tt.node); (got == base) != tt.same {
				t.Errorf("UID %s vs base %s: same = %v, want %v", got, base, got == base, tt.same)
			}
		})
	}

	withUID := strings.Replace(kubectlRun, "  name: x\n", "  name: x\n  uid: 1234-abcd\n", 1)
	if got := uid(withUID, "/m/x.yaml", "n1"); got != "1234-abcd" {
		t.Errorf("explicit uid: got %q, want the file's uid kept", got)
	}
}

func TestParseManifestFormats(t *testing.T) {
	tests := []struct {
		name  string
		data  string
		names []string
	}{
		{"json", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"j"},"spec":{"containers":[{"name":"c","image":"i:1"}]}}`, []string{"j-n"}},
		{"json with tabs", "{\n\t\"apiVersion\": \"v1\",\n\t\"kind\": \"Pod\",\n\t\"metadata\": {\"name\": \"t\"},\n\t\"spec\": {\"containers\": [{\"name\": \"c\", \"image\": \"i:1\"}]}\n}", []string{"t-n"}},
		// As upstream (tryDecodeSinglePod over yaml.ToJSON): the first document only.
		{"several documents: the first", podYAML("one", "") + "---\n" + podYAML("two", ""), []string{"one-n"}},
		{"leading document marker", "---\n" + podYAML("one", ""), []string{"one-n"}},
		{"comment before the marker", "# a comment\n---\n" + podYAML("one", ""), []string{"one-n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pods, warnings, err := ParseManifest([]byte(tt.data), "/m/f", "n")
			if err != nil {
				t.Fatalf("ParseManifest: %v", err)
			}
			ignored := strings.Contains(strings.Join(warnings, ";"), "documents after the first are ignored")
			if want := strings.HasPrefix(tt.name, "several documents"); ignored != want {
				t.Errorf("warnings %q: a warning about ignored documents = %t, want %t", warnings, ignored, want)
			}
			var got []string
			for _, p := range pods {
				got = append(got, p.Name)
			}
			if strings.Join(got, ",") != strings.Join(tt.names, ",") {
				t.Errorf("pods = %v, want %v", got, tt.names)
			}
			if len(pods) == 2 && pods[0].UID == pods[1].UID {
				t.Errorf("two pods of one file share UID %s", pods[0].UID)
			}
		})
	}
}

func TestParseManifestRejects(t *testing.T) {
	const path = "/etc/kubernetes/manifests/bad.yaml"
	tests := []struct {
		name    string
		data    string
		reason  string
		wantErr string // substring after the path
		podKnow bool   // the error names the pod
	}{
		{"not yaml", "apiVersion: v1\nkind: Pod\nmetadata: [unclosed\n", ReasonDecode, "couldn't parse as pod(", false},
		{"plain text", "hello world\n", ReasonDecode, "not a Kubernetes object", false},
		{"empty file", "\n# nothing\n", ReasonDecode, "Object 'Kind' is missing in 'null'", false},
		{"a deployment", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n", ReasonNotPod, `kind "Deployment" (apiVersion "apps/v1") is not a Pod`, false},
		{"wrong version", strings.Replace(podYAML("p", ""), "apiVersion: v1", "apiVersion: v2", 1), ReasonNotPod, `no kind "Pod" is registered for version "v2"`, false},
		{"no kind", "apiVersion: v1\nmetadata: {name: p}\n", ReasonNotPod, `Object 'Kind' is missing in '{"apiVersion":"v1","metadata":{"name":"p"}}'`, false},
		// The kubelet reads one pod per file: lists are refused as upstream does.
		{"pod list", "apiVersion: v1\nkind: PodList\nitems:\n- metadata: {name: a}\n  spec: {containers: [{name: c, image: 'i:1'}]}\n", ReasonNotPod, `invalid pod: kind "PodList" (apiVersion "v1") is not a Pod`, false},
		{"list of pods", "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Pod, metadata: {name: a}}\n", ReasonNotPod, `invalid pod: kind "List" (apiVersion "v1") is not a Pod`, false},
		{"bad quantity", podYAML("p", "    resources: {requests: {cpu: lots}}\n"), ReasonDecode, "quantities must match", false},
		{"wrong field type", podYAML("p", "    ports: [{containerPort: eighty}]\n"), ReasonDecode, "cannot unmarshal string", false},
		{"no name", strings.Replace(podYAML("p", ""), "  name: p\n", "  labels: {a: b}\n", 1), ReasonInvalid, "name is needed for the pod", false},
		{"bad name", podYAML("Bad_Name", ""), ReasonInvalid, "metadata.name: Invalid value", false},
		{"missing container name", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - image: nginx\n", ReasonInvalid, "spec.containers[0].name: Required value", true},
		{"missing image", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n", ReasonInvalid, "spec.containers[0].image: Required value", true},
		{"no containers", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {}\n", ReasonInvalid, "spec.containers: Required value", true},
		{"duplicate container names", podYAML("p", "  - name: app\n    image: nginx:1\n"), ReasonInvalid, `spec.containers[1].name: Duplicate value: "app"`, true},
		{"init and app share a name", podYAML("p", "  initContainers:\n  - name: app\n    image: busybox:1\n"), ReasonInvalid, `spec.containers[0].name: Duplicate value: "app"`, true},
		{"container name not a label", podYAML("p", "  - name: Web_1\n    image: nginx:1\n"), ReasonInvalid, "spec.containers[1].name: Invalid value", true},
		{"restart policy", podYAML("p", "  restartPolicy: Sometimes\n"), ReasonInvalid, `spec.restartPolicy: Unsupported value: "Sometimes"`, true},
		{"init restart policy", podYAML("p", "  initContainers:\n  - name: i\n    image: busybox:1\n    restartPolicy: Sometimes\n"), ReasonInvalid, `spec.initContainers[0].restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "Never", "OnFailure"`, true},
		{"app restart rules without a policy", podYAML("p", "    restartPolicyRules: [{action: Restart, exitCodes: {operator: In, values: [42]}}]\n"), ReasonInvalid, "spec.containers[0].restartPolicy: Required value: must specify restartPolicy when restart rules are used", true},
		{"app restart rule action", podYAML("p", "    restartPolicy: Never\n    restartPolicyRules: [{action: Stop, exitCodes: {operator: In, values: [42]}}]\n"), ReasonInvalid, `spec.containers[0].restartPolicyRules[0].action: Unsupported value: "Stop": supported values: "Restart", "RestartAllContainers"`, true},
		{"app restart rule without exit codes", podYAML("p", "    restartPolicy: Never\n    restartPolicyRules: [{action: Restart}]\n"), ReasonInvalid, "spec.containers[0].restartPolicyRules[0].exitCodes: Required value: must be specified", true},
		{"app restart rule operator", podYAML("p", "    restartPolicy: Never\n    restartPolicyRules: [{action: Restart, exitCodes: {operator: Is, values: [42]}}]\n"), ReasonInvalid, `spec.containers[0].restartPolicyRules[0].exitCodes.operator: Unsupported value: "Is": supported values: "In", "NotIn"`, true},
		{"request over limit", podYAML("p", "    resources: {requests: {cpu: 2}, limits: {cpu: 1}}\n"), ReasonInvalid, "must be less than or equal to cpu limit of 1", true},
		{"mount of unknown volume", podYAML("p", "    volumeMounts: [{name: data, mountPath: /data}]\n"), ReasonInvalid, `spec.containers[0].volumeMounts[0].name: Not found: "data"`, true},
		// Image volumes and subPaths, as the API server validates them.
		{"image volume without a reference", podYAML("p", "  volumes: [{name: v, image: {pullPolicy: Always}}]\n"), ReasonInvalid, "spec.volumes[0].image.reference: Required value", true},
		{"image volume pull policy", podYAML("p", "  volumes: [{name: v, image: {reference: 'kitten:1.8', pullPolicy: Sometimes}}]\n"), ReasonInvalid, `spec.volumes[0].image.pullPolicy: Unsupported value: "Sometimes": supported values: "Always", "IfNotPresent", "Never"`, true},
		{"image volume with another source", podYAML("p", "  volumes: [{name: v, emptyDir: {}, image: {reference: 'kitten:1.8'}}]\n"), ReasonInvalid, "spec.volumes[0].image: Forbidden: may not specify more than 1 volume type", true},
		{"image volume with bind mount options", podYAML("p", "    volumeMounts: [{name: v, mountPath: /v, bindMountOptions: [noexec]}]\n  volumes: [{name: v, image: {reference: 'kitten:1.8'}}]\n"), ReasonInvalid, `spec.containers[0].volumeMounts[0].bindMountOptions: Invalid value: ["noexec"]: bindMountOptions may not be used with image volumes`, true},
		{"absolute subPath", podYAML("p", "    volumeMounts: [{name: v, mountPath: /v, subPath: /etc}]\n  volumes: [{name: v, image: {reference: 'kitten:1.8'}}]\n"), ReasonInvalid, `spec.containers[0].volumeMounts.subPath: Invalid value: "/etc": must be a relative path`, true},
		{"subPath going up", podYAML("p", "    volumeMounts: [{name: v, mountPath: /v, subPath: etc/../..}]\n  volumes: [{name: v, emptyDir: {}}]\n"), ReasonInvalid, `spec.containers[0].volumeMounts.subPath: Invalid value: "etc/../..": must not contain '..'`, true},
		{"subPath and subPathExpr", podYAML("p", "    volumeMounts: [{name: v, mountPath: /v, subPath: a, subPathExpr: $(B)}]\n  volumes: [{name: v, emptyDir: {}}]\n"), ReasonInvalid, `spec.containers[0].volumeMounts[0].subPathExpr: Invalid value: "$(B)": subPathExpr and subPath are mutually exclusive`, true},
		// The fields the simulator uses, checked with apimachinery's helpers and upstream's
		// messages: each would otherwise become a negative duration, a wrapped amount or a
		// name the API server refuses.
		{"label key", strings.Replace(podYAML("p", ""), "  name: p\n", "  name: p\n  labels: {\"a b\": x}\n", 1), ReasonInvalid, `metadata.labels: Invalid value: "a b": name part must consist of alphanumeric characters`, true},
		{"label value", strings.Replace(podYAML("p", ""), "  name: p\n", "  name: p\n  labels: {a: \"x y\"}\n", 1), ReasonInvalid, `metadata.labels: Invalid value: "x y": a valid label must be an empty string or consist of alphanumeric characters`, true},
		{"annotation key", strings.Replace(podYAML("p", ""), "  name: p\n", "  name: p\n  annotations: {\"/x\": z}\n", 1), ReasonInvalid, `metadata.annotations: Invalid value: "/x": prefix part must be non-empty`, true},
		{"namespace", strings.Replace(podYAML("p", ""), "  name: p\n", "  name: p\n  namespace: Kube_System\n", 1), ReasonInvalid, `metadata.namespace: Invalid value: "Kube_System": a lowercase RFC 1123 label must consist of`, false},
		{"hostname", podYAML("p", "  hostname: -web\n"), ReasonInvalid, `spec.hostname: Invalid value: "-web": a lowercase RFC 1123 label must consist of`, true},
		{"priority class name", podYAML("p", "  priorityClassName: High_Priority\n"), ReasonInvalid, `spec.priorityClassName: Invalid value: "High_Priority": a lowercase RFC 1123 subdomain`, true},
		{"node selector", podYAML("p", "  nodeSelector: {\"a/b/c\": x}\n"), ReasonInvalid, `spec.nodeSelector: Invalid value: "a/b/c": a valid label key must consist of`, true},
		{"readiness gate", podYAML("p", "  readinessGates: [{conditionType: \"not ok\"}]\n"), ReasonInvalid, `spec.readinessGates[0].conditionType: Invalid value: "not ok"`, true},
		{"toleration key", podYAML("p", "  tolerations: [{key: \"a b\", operator: Exists}]\n"), ReasonInvalid, `spec.tolerations[0].key: Invalid value: "a b"`, true},
		{"toleration operator", podYAML("p", "  tolerations: [{key: a, operator: Maybe}]\n"), ReasonInvalid, `spec.tolerations[0].operator: Unsupported value: "Maybe"`, true},
		{"toleration effect", podYAML("p", "  tolerations: [{key: a, operator: Exists, effect: Sometimes}]\n"), ReasonInvalid, `spec.tolerations[0].effect: Unsupported value: "Sometimes"`, true},
		{"tolerationSeconds without NoExecute", podYAML("p", "  tolerations: [{key: a, operator: Exists, effect: NoSchedule, tolerationSeconds: 5}]\n"), ReasonInvalid, "spec.tolerations[0].effect: Invalid value: \"NoSchedule\": effect must be 'NoExecute' when `tolerationSeconds` is set", true},
		{"active deadline over int32", podYAML("p", "  activeDeadlineSeconds: 9999999999\n"), ReasonInvalid, "spec.activeDeadlineSeconds: Invalid value: 9999999999: must be between 1 and 2147483647, inclusive", true},
		{"negative grace period", podYAML("p", "  terminationGracePeriodSeconds: -1\n"), ReasonInvalid, "spec.terminationGracePeriodSeconds: Invalid value: -1: must be greater than or equal to 0", true},
		{"port name", podYAML("p", "    ports: [{name: \"HTTP PORT\", containerPort: 80}]\n"), ReasonInvalid, `spec.containers[0].ports[0].name: Invalid value: "HTTP PORT"`, true},
		{"host port", podYAML("p", "    ports: [{containerPort: 80, hostPort: 70000}]\n"), ReasonInvalid, "spec.containers[0].ports[0].hostPort: Invalid value: 70000: must be between 1 and 65535, inclusive", true},
		{"env name", podYAML("p", "    env: [{name: \"1X\", value: v}]\n"), ReasonInvalid, `spec.containers[0].env[0].name: Invalid value: "1X": a valid environment variable name must consist of`, true},
		{"resource name", podYAML("p", "    resources: {limits: {gpu: 1}}\n"), ReasonInvalid, `spec.containers[0].resources.limits[gpu]: Invalid value: "gpu": must be a standard resource type or fully qualified`, true},
		{"memory that wraps round", podYAML("p", "    resources: {limits: {memory: \"9223372036854775808\"}}\n"), ReasonInvalid, `spec.containers[0].resources.limits[memory]: Invalid value: "9223372036854775808": must be less than or equal to 1Ei`, true},
		{"cpu over int64 millicores", podYAML("p", "    resources: {requests: {cpu: 1e400}}\n"), ReasonInvalid, `spec.containers[0].resources.requests[cpu]: Invalid value: "10e399": must be less than or equal to 1P`, true},
		{"quantity with a huge exponent", podYAML("p", "    resources: {requests: {cpu: \"1e-666666000\"}}\n"), ReasonDecode, `spec.containers[0].resources.requests.cpu: quantity "1e-666666000": exponent has more than 3 digits`, false},
		{"negative probe period", podYAML("p", "    livenessProbe: {exec: {command: [\"true\"]}, periodSeconds: -5}\n"), ReasonInvalid, "spec.containers[0].livenessProbe.periodSeconds: Invalid value: -5: must be greater than or equal to 0", true},
		{"probe without handler", podYAML("p", "    readinessProbe: {periodSeconds: 1}\n"), ReasonInvalid, "spec.containers[0].readinessProbe: Required value: must specify a handler type", true},
		{"probe with two handlers", podYAML("p", "    readinessProbe: {exec: {command: [\"true\"]}, tcpSocket: {port: 80}}\n"), ReasonInvalid, "spec.containers[0].readinessProbe: Forbidden: may not specify more than 1 handler type", true},
		{"liveness success threshold", podYAML("p", "    livenessProbe: {tcpSocket: {port: 80}, successThreshold: 2}\n"), ReasonInvalid, "spec.containers[0].livenessProbe.successThreshold: Invalid value: 2: must be 1", true},
		{"probe port", podYAML("p", "    startupProbe: {httpGet: {port: 0}}\n"), ReasonInvalid, "spec.containers[0].startupProbe.httpGet.port: Invalid value: 0: must be between 1 and 65535, inclusive", true},
		{"fileKeyRef to a volume that is not there", podYAML("p", "    env: [{name: A, valueFrom: {fileKeyRef: {volumeName: config, path: a.env, key: A}}}]\n"), ReasonInvalid, `spec.containers[0].env[0].valueFrom.fileKeyRef.volumeName: Not found: "config"`, true},
		{"fileKeyRef to a hostPath volume", podYAML("p", "    env: [{name: A, valueFrom: {fileKeyRef: {volumeName: config, path: a.env, key: A}}}]\n  volumes: [{name: config, hostPath: {path: /tmp}}]\n"), ReasonInvalid, `spec.containers[0].env[0].valueFrom.fileKeyRef.volumeName: Invalid value: "config": referenced volume must be of type emptyDir`, true},
		{"fileKeyRef path with ..", podYAML("p", "    env: [{name: A, valueFrom: {fileKeyRef: {volumeName: config, path: ../a.env, key: A}}}]\n  volumes: [{name: config, emptyDir: {}}]\n"), ReasonInvalid, `spec.containers[0].env[0].valueFrom.fileKeyRef.path: Invalid value: "../a.env": must not contain '..'`, true},
		{"fileKeyRef without a key", podYAML("p", "    env: [{name: A, valueFrom: {fileKeyRef: {volumeName: config, path: a.env}}}]\n  volumes: [{name: config, emptyDir: {}}]\n"), ReasonInvalid, "spec.containers[0].env[0].valueFrom.fileKeyRef.key: Required value", true},
		{"fileKeyRef key with '='", podYAML("p", "    env: [{name: A, valueFrom: {fileKeyRef: {volumeName: config, path: a.env, key: 'A=B'}}}]\n  volumes: [{name: config, emptyDir: {}}]\n"), ReasonInvalid, `spec.containers[0].env[0].valueFrom.fileKeyRef.key: Invalid value: "A=B": a valid environment variable name must consist only of printable ASCII characters other than '='`, true},
		{"fileKeyRef beside a value", podYAML("p", "    env: [{name: A, value: x, valueFrom: {fileKeyRef: {volumeName: config, path: a.env, key: A}}}]\n  volumes: [{name: config, emptyDir: {}}]\n"), ReasonInvalid, "spec.containers[0].env[0].valueFrom: Invalid value: \"\": may not be specified when `value` is not empty", true},
		{"valueFrom without a source", podYAML("p", "    env: [{name: A, valueFrom: {}}]\n"), ReasonInvalid, "spec.containers[0].env[0].valueFrom: Invalid value: \"\": must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef`, `secretKeyRef` or `fileKeyRef`", true},
		{"procMount Unmasked without a user namespace", podYAML("p", "    securityContext: {procMount: Unmasked}\n"), ReasonInvalid, "spec.containers[0].securityContext.procMount: Invalid value: \"Unmasked\": `hostUsers` must be false to use `Unmasked`", true},
		{"procMount Unmasked with hostUsers true", podYAML("p", "    securityContext: {procMount: Unmasked}\n  hostUsers: true\n"), ReasonInvalid, "spec.containers[0].securityContext.procMount: Invalid value: \"Unmasked\": `hostUsers` must be false to use `Unmasked`", true},
		{"procMount value", podYAML("p", "    securityContext: {procMount: Open}\n"), ReasonInvalid, `spec.containers[0].securityContext.procMount: Unsupported value: "Open": supported values: "Default", "Unmasked"`, true},
		{"init container procMount", podYAML("p", "  initContainers:\n  - name: i\n    image: busybox:1\n    securityContext: {procMount: Unmasked}\n"), ReasonInvalid, "spec.initContainers[0].securityContext.procMount: Invalid value: \"Unmasked\": `hostUsers` must be false to use `Unmasked`", true},
		{"container runAsGroup", podYAML("p", "    securityContext: {runAsGroup: -2}\n"), ReasonInvalid, "spec.containers[0].securityContext.runAsGroup: Invalid value: -2: must be between 0 and 2147483647, inclusive", true},
		{"hostUsers false with the host network", podYAML("p", "  hostUsers: false\n  hostNetwork: true\n"), ReasonInvalid, "spec.hostNetwork: Forbidden: when `hostUsers` is false", true},
		{"hostUsers false with the host PID namespace", podYAML("p", "  hostUsers: false\n  hostPID: true\n"), ReasonInvalid, "spec.HostPID: Forbidden: when `hostUsers` is false", true},
		{"hostUsers false with the host IPC namespace", podYAML("p", "  hostUsers: false\n  hostIPC: true\n"), ReasonInvalid, "spec.HostIPC: Forbidden: when `hostUsers` is false", true},
		{"hostUsers false with a raw block device", podYAML("p", "    volumeDevices: [{name: disk, devicePath: /dev/xvda}]\n  hostUsers: false\n  volumes: [{name: disk, persistentVolumeClaim: {claimName: c}}]\n"), ReasonInvalid, "spec.containers[0].volumeDevices: Forbidden: when `hostUsers` is false", true},
		{"supplemental groups policy", podYAML("p", "  securityContext: {supplementalGroupsPolicy: Loose}\n"), ReasonInvalid, `spec.securityContext.supplementalGroupsPolicy: Unsupported value: "Loose": supported values: "Merge", "Strict"`, true},
		{"supplemental group", podYAML("p", "  securityContext: {supplementalGroups: [5, -1]}\n"), ReasonInvalid, "spec.securityContext.supplementalGroups[1]: Invalid value: -1: must be between 0 and 2147483647, inclusive", true},
		{"pod runAsUser", podYAML("p", "  securityContext: {runAsUser: 4294967296}\n"), ReasonInvalid, "spec.securityContext.runAsUser: Invalid value: 4294967296: must be between 0 and 2147483647, inclusive", true},
		{"readiness probe grace", podYAML("p", "    readinessProbe: {tcpSocket: {port: 80}, terminationGracePeriodSeconds: 5}\n"), ReasonInvalid, "spec.containers[0].readinessProbe.terminationGracePeriodSeconds: Invalid value: 5: must not be set for readinessProbes", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pods, _, err := ParseManifest([]byte(tt.data), path, "n")
			if err == nil {
				t.Fatalf("ParseManifest accepted it: %d pods", len(pods))
			}
			if pods != nil {
				t.Errorf("a refused file returned %d pods", len(pods))
			}
			t.Logf("%v", err)
			var ferr *FileError
			if !errors.As(err, &ferr) {
				t.Fatalf("error %T is not a *FileError: %v", err, err)
			}
			if !strings.HasPrefix(err.Error(), path+": ") {
				t.Errorf("error %q does not start with the file path", err)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %q does not contain %q", err, tt.wantErr)
			}
			if ferr.Reason != tt.reason {
				t.Errorf("reason = %q, want %q", ferr.Reason, tt.reason)
			}
			if (ferr.Pod != nil) != tt.podKnow {
				t.Errorf("error names pod %v, want named = %v", ferr.Pod, tt.podKnow)
			}
		})
	}
}

func TestParseManifestDefaults(t *testing.T) {
	t.Run("image pull policy", func(t *testing.T) {
		for image, want := range map[string]v1.PullPolicy{
			"nginx":                      v1.PullAlways,
			"nginx:latest":               v1.PullAlways,
			"nginx:1.25":                 v1.PullIfNotPresent,
			"registry:5000/nginx":        v1.PullAlways,
			"registry:5000/team/nginx:1": v1.PullIfNotPresent,
			"nginx@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef": v1.PullIfNotPresent,
		} {
			data := strings.Replace(podYAML("p", ""), "busybox:1.36", image, 1)
			pods, _, err := ParseManifest([]byte(data), "/m/p", "n")
			if err != nil {
				t.Fatalf("%s: %v", image, err)
			}
			if got := pods[0].Spec.Containers[0].ImagePullPolicy; got != want {
				t.Errorf("image %s: imagePullPolicy %s, want %s", image, got, want)
			}
		}
		pods, _, err := ParseManifest([]byte(podYAML("p", "    imagePullPolicy: Never\n")), "/m/p", "n")
		if err != nil || pods[0].Spec.Containers[0].ImagePullPolicy != v1.PullNever {
			t.Errorf("explicit Never not kept: %v %v", err, pods)
		}
	})
	t.Run("image volume pull policy", func(t *testing.T) {
		for ref, want := range map[string]v1.PullPolicy{
			"registry.k8s.io/e2e-test-images/kitten":                                         v1.PullAlways,
			"registry.k8s.io/e2e-test-images/kitten:latest":                                  v1.PullAlways,
			"registry.k8s.io/e2e-test-images/kitten:1.8":                                     v1.PullIfNotPresent,
			"kitten@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef": v1.PullIfNotPresent,
		} {
			data := podYAML("p", "    volumeMounts: [{name: v, mountPath: /volume, subPath: etc}]\n  volumes: [{name: v, image: {reference: '"+ref+"'}}]\n")
			pods, _, err := ParseManifest([]byte(data), "/m/p", "n")
			if err != nil {
				t.Fatalf("%s: %v", ref, err)
			}
			if got := pods[0].Spec.Volumes[0].Image.PullPolicy; got != want {
				t.Errorf("reference %s: pullPolicy %s, want %s", ref, got, want)
			}
		}
		data := podYAML("p", "  volumes: [{name: v, image: {reference: 'kitten:1.8', pullPolicy: Never}}]\n")
		if pods, _, err := ParseManifest([]byte(data), "/m/p", "n"); err != nil || pods[0].Spec.Volumes[0].Image.PullPolicy != v1.PullNever {
			t.Errorf("explicit Never not kept: %v %v", err, pods)
		}
	})
	t.Run("requests default to limits", func(t *testing.T) {
		pods, _, err := ParseManifest([]byte(podYAML("p", "    resources: {limits: {cpu: 500m, memory: 64Mi}, requests: {memory: 32Mi}}\n")), "/m/p", "n")
		if err != nil {
			t.Fatal(err)
		}
		req := pods[0].Spec.Containers[0].Resources.Requests
		if cpu := req[v1.ResourceCPU]; cpu.Cmp(resource.MustParse("500m")) != 0 {
			t.Errorf("cpu request = %s, want the 500m limit", cpu.String())
		}
		if mem := req[v1.ResourceMemory]; mem.Cmp(resource.MustParse("32Mi")) != 0 {
			t.Errorf("memory request = %s, want the explicit 32Mi kept", mem.String())
		}
	})
	t.Run("namespace, priority class, ports, probes", func(t *testing.T) {
		extra := "    ports: [{containerPort: 80}]\n    livenessProbe: {httpGet: {port: 80}}\n  priorityClassName: system-node-critical\n"
		data := strings.Replace(podYAML("p", extra), "  name: p\n", "  name: p\n  namespace: kube-system\n", 1)
		pods, _, err := ParseManifest([]byte(data), "/m/p", "n")
		if err != nil {
			t.Fatal(err)
		}
		p := pods[0]
		c := p.Spec.Containers[0]
		if p.Namespace != "kube-system" || *p.Spec.Priority != 2000001000 || c.Ports[0].Protocol != v1.ProtocolTCP ||
			c.LivenessProbe.PeriodSeconds != 10 || c.LivenessProbe.HTTPGet.Scheme != v1.URISchemeHTTP {
			t.Errorf("defaults not applied: ns %s priority %d protocol %s probe %+v", p.Namespace, *p.Spec.Priority, c.Ports[0].Protocol, c.LivenessProbe)
		}
	})
	t.Run("unknown fields are ignored with a warning", func(t *testing.T) {
		pods, warnings, err := ParseManifest([]byte(podYAML("p", "    imagePullPolcy: Never\n")), "/m/p", "n")
		if err != nil {
			t.Fatal(err)
		}
		if len(warnings) != 1 || !strings.Contains(warnings[0], "imagePullPolcy") {
			t.Errorf("warnings = %v, want one naming imagePullPolcy", warnings)
		}
		if pods[0].Spec.Containers[0].ImagePullPolicy != v1.PullIfNotPresent {
			t.Errorf("misspelt field changed the pod")
		}
	})
}

func BenchmarkParseManifest(b *testing.B) {
	data := []byte(kubectlRun)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, _, err := ParseManifest(data, "/m/x.yaml", "n"); err != nil {
			b.Fatal(err)
		}
	}
}

// TestParseManifestSharesTemplateParts: pods of one template share their containers and
// tolerations (pkg/intern), and each still reads as its own manifest says.
func TestParseManifestSharesTemplateParts(t *testing.T) {
	parse := func(name, extra string) *v1.Pod {
		t.Helper()
		pods, _, err := ParseManifest([]byte(podYAML(name, extra)), "/m/"+name+".yaml", "n1")
		if err != nil {
			t.Fatalf("ParseManifest: %v", err)
		}
		return pods[0]
	}
	a, b := parse("web-1", ""), parse("web-2", "")
	other := parse("web-3", "    command: [sleep, infinity]\n")
	if &a.Spec.Containers[0] != &b.Spec.Containers[0] {
		t.Error("two pods of one template hold two copies of their containers")
	}
	if &a.Spec.Tolerations[0] != &b.Spec.Tolerations[0] {
		t.Error("two static pods hold two copies of the default toleration")
	}
	if &other.Spec.Containers[0] == &a.Spec.Containers[0] {
		t.Error("a pod with another command shares the template's containers")
	}
	if got := other.Spec.Containers[0].Command; !reflect.DeepEqual(got, []string{"sleep", "infinity"}) {
		t.Errorf("command = %q", got)
	}
	if a.Name == b.Name || a.UID == b.UID {
		t.Errorf("the pods' own fields are shared: %s/%s, %s/%s", a.Name, a.UID, b.Name, b.UID)
	}
}

// TestParseManifestAcceptsRestartRules: container-level restartPolicy and rules, on app and
// init containers, load as the v1.37 API server accepts them.
func TestParseManifestAcceptsRestartRules(t *testing.T) {
	for _, extra := range []string{
		"    restartPolicy: Never\n    restartPolicyRules: [{action: Restart, exitCodes: {operator: In, values: [42]}}]\n",
		"    restartPolicy: OnFailure\n",
		"    restartPolicy: Always\n    restartPolicyRules: [{action: RestartAllContainers, exitCodes: {operator: NotIn, values: [0]}}]\n",
		"  initContainers:\n  - name: i\n    image: busybox:1\n    restartPolicy: OnFailure\n",
	} {
		pods, _, err := ParseManifest([]byte(podYAML("p", extra)), "/etc/kubernetes/manifests/p.yaml", "node")
		if err != nil || len(pods) != 1 {
			t.Errorf("%q: %v", extra, err)
		}
	}
}

// TestParseManifestAcceptsSecurityFields: what the upstream e2e specs of EnvFiles,
// SupplementalGroupsPolicy, user namespaces and procMount send passes validation.
func TestParseManifestAcceptsSecurityFields(t *testing.T) {
	for _, extra := range []string{
		"    env: [{name: A, valueFrom: {fileKeyRef: {volumeName: config, path: sub/a.env, key: A, optional: true}}}]\n  volumes: [{name: config, emptyDir: {}}]\n",
		"  initContainers:\n  - name: i\n    image: busybox:1\n    env: [{name: A, valueFrom: {fileKeyRef: {volumeName: config, path: a.env, key: A}}}]\n  volumes: [{name: config, emptyDir: {}}]\n",
		"  securityContext: {runAsUser: 1000, supplementalGroups: [60000], supplementalGroupsPolicy: Strict}\n",
		"    securityContext: {procMount: Unmasked}\n  hostUsers: false\n",
		"    securityContext: {procMount: Default}\n",
		"  hostUsers: true\n  hostNetwork: true\n  hostPID: true\n",
	} {
		pods, _, err := ParseManifest([]byte(podYAML("p", extra)), "/etc/kubernetes/manifests/p.yaml", "node")
		if err != nil || len(pods) != 1 {
			t.Errorf("%q: %v", extra, err)
		}
	}
}

// TestParseManifestRefusesAPIObjectReferences: kubelet v1.37 refuses a static pod that
// references an API object when it reads the file, with HasAPIObjectReference's words
// (pkg/api/pod/util.go:1989-2059, config/common.go:157-163); validation errors come first.
func TestParseManifestRefusesAPIObjectReferences(t *testing.T) {
	const path = "/etc/kubernetes/manifests/p.yaml"
	container := func(extra string) string { return podYAML("p", extra) }
	volume := func(v string) string {
		return podYAML("p", "  volumes: [{name: v, "+v+"}]\n")
	}
	tests := []struct {
		name string
		data string
		want string // "" = accepted
	}{
		{"service account", container("  serviceAccountName: builder\n"), "serviceaccounts"},
		{"deprecated serviceAccount", container("  serviceAccount: builder\n"), "serviceaccounts"},
		{"image pull secret", container("  imagePullSecrets: [{name: registry}]\n"), "secrets"},
		{"envFrom secret", container("    envFrom: [{secretRef: {name: creds}}]\n"), "secrets"},
		{"env secretKeyRef", container("    env: [{name: A, valueFrom: {secretKeyRef: {name: creds, key: a}}}]\n"), "secrets"},
		{"init container's secretKeyRef", container("  initContainers: [{name: i, image: busybox:1, env: [{name: A, valueFrom: {secretKeyRef: {name: creds, key: a}}}]}]\n"), "secrets"},
		{"envFrom configMap", container("    envFrom: [{configMapRef: {name: settings}}]\n"), "configmaps"},
		{"env configMapKeyRef", container("    env: [{name: A, valueFrom: {configMapKeyRef: {name: settings, key: a}}}]\n"), "configmaps"},
		{"secrets before configmaps", container("    envFrom: [{configMapRef: {name: settings}}, {secretRef: {name: creds}}]\n"), "secrets"},
		{"resource claim", container("  resourceClaims: [{name: gpu, resourceClaimName: gpu-claim}]\n"), "resourceclaims"},
		{"configMap volume", volume("configMap: {name: settings}"), "configmaps"},
		{"secret volume", volume("secret: {secretName: creds}"), "secrets"},
		{"projected configMap", volume("projected: {sources: [{configMap: {name: settings}}]}"), "configmaps"},
		{"projected secret", volume("projected: {sources: [{secret: {name: creds}}]}"), "secrets"},
		{"projected token", volume("projected: {sources: [{serviceAccountToken: {path: token}}]}"), "serviceaccounts (via projected volumes)"},
		{"projected clusterTrustBundle", volume("projected: {sources: [{clusterTrustBundle: {name: b, path: ca.pem}}]}"), "clustertrustbundles"},
		{"persistentVolumeClaim", volume("persistentVolumeClaim: {claimName: data}"), "persistentvolumeclaims"},
		{"csi", volume("csi: {driver: example.com}"), "csidrivers (via CSI volumes)"},
		{"csi with a secret", volume("csi: {driver: example.com, nodePublishSecretRef: {name: creds}}"), "secrets"},
		{"nfs", volume("nfs: {server: nfs.local, path: /srv}"), ""},
		{"emptyDir", volume("emptyDir: {}"), ""},
		{"hostPath", volume("hostPath: {path: /srv}"), ""},
		{"projected downwardAPI", volume("projected: {sources: [{downwardAPI: {items: [{path: name, fieldRef: {fieldPath: metadata.name}}]}}]}"), ""},
		{"env fieldRef", container("    env: [{name: A, valueFrom: {fieldRef: {fieldPath: metadata.name}}}]\n"), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pods, _, err := ParseManifest([]byte(tt.data), path, "node")
			if tt.want == "" {
				if err != nil || len(pods) != 1 {
					t.Fatalf("ParseManifest = %d pods, %v; want the pod", len(pods), err)
				}
				return
			}
			var ferr *FileError
			if !errors.As(err, &ferr) {
				t.Fatalf("error %v, want a *FileError", err)
			}
			if want := path + ": static pods may not reference " + tt.want; err.Error() != want {
				t.Errorf("error = %q, want %q", err, want)
			}
			if ferr.Reason != ReasonInvalid || ferr.Pod == nil || ferr.Pod.Name != "p-node" || pods != nil {
				t.Errorf("reason %s, pod %+v, %d pods; want %s about p-node, no pods", ferr.Reason, ferr.Pod, len(pods), ReasonInvalid)
			}
		})
	}
	// A pod both invalid and referencing a Secret is refused for being invalid.
	_, _, err := ParseManifest([]byte(podYAML("p", "    envFrom: [{secretRef: {name: creds}}]\n  - name: app\n    image: nginx:1\n")), path, "node")
	if err == nil || !strings.Contains(err.Error(), "invalid pod: ") {
		t.Errorf("error = %v, want the validation error first", err)
	}
}

func TestStaticPodPriorityWarning(t *testing.T) {
	p := func(v int32) *int32 { return &v }
	tests := []struct {
		name     string
		priority *int32
		class    string
		want     string
	}{
		{"neither", nil, "", ""},
		{"system-node-critical by both", p(2000001000), "system-node-critical", ""},
		{"class only", nil, "system-node-critical", "Static pod has priorityClassName and nil priority. Kubelet will not use priorityClassName, and mirror pod creation may fail."},
		{"priority only", p(2000001000), "", "Static pod has priority without priorityClassName. Mirror pod creation may fail if the default priority class doesn't match the given priority."},
		{"another class", p(2000000000), "system-cluster-critical", "Static pod has a priority other than 2000001000 or a priorityClassName other than system-node-critical. Mirror pod may be attempted to be evicted from the node ineffectively."},
		{"another value", p(5), "system-node-critical", "Static pod has a priority other than 2000001000 or a priorityClassName other than system-node-critical. Mirror pod may be attempted to be evicted from the node ineffectively."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := staticPodPriorityWarning(&v1.PodSpec{Priority: tt.priority, PriorityClassName: tt.class}); got != tt.want {
				t.Errorf("warning = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestStaticPodUID: the UID is kubelet v1.37's FNV-128a (config/common.go:67-80) of the
// pod's bytes, then "host:<node>" (the node name as given, not lower-cased) and
// "file:<path>", hex-encoded (32 lower-case digits).
//
// How the expected values were derived, independently of Go's hash/fnv: FNV-1a with 128
// bits, offset basis 0x6c62272e07bb014262b821756295c58d, prime 2^88 + 2^8 + 0x3b, and for
// each byte h = (h XOR byte) * prime mod 2^128, written out big-endian: a dozen lines of
// Python (int arithmetic). That code gives the published FNV-1a/128 vectors for "a"
// (d228cb696f1a8caf78912b704e4a8964) and "foobar" (343e1662793c64bf6f0d3597ba446f18),
// and the values below for these bytes:
//   - the empty pod: `{"metadata":{},"spec":{"containers":null},"status":{}}` (what
//     encoding/json writes for v1.Pod{}) + "host:node1" + "file:/m/p.yaml";
//   - podYAML("web", "") read from /etc/kubernetes/manifests/web.yaml on "Node-1": the
//     pod as the API would default it, marshalled before the name suffix:
//     {"kind":"Pod","apiVersion":"v1","metadata":{"name":"web"},"spec":{"containers":
//     [{"name":"app","image":"busybox:1.36","resources":{},"terminationMessagePath":
//     "/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":
//     "IfNotPresent"}],"restartPolicy":"Always","terminationGracePeriodSeconds":30,
//     "dnsPolicy":"ClusterFirst","securityContext":{},"schedulerName":
//     "default-scheduler","priority":0,"enableServiceLinks":true,"preemptionPolicy":
//     "PreemptLowerPriority"},"status":{}}, then "host:Node-1" and
//     "file:/etc/kubernetes/manifests/web.yaml".
//
// Upstream writes the internal pod type's dump where this writes the v1 JSON, so a real
// kubelet gives the same file another UID (see applyStaticPodDefaults).
func TestStaticPodUID(t *testing.T) {
	tests := []struct {
		name string
		uid  func(t *testing.T) string
		want string
	}{
		{"empty pod", func(*testing.T) string { return string(staticPodUID(&v1.Pod{}, "/m/p.yaml", "node1")) },
			"6a506284b2f020ce4256bb75713c452d"},
		{"manifest", func(t *testing.T) string {
			pods, _, err := ParseManifest([]byte(podYAML("web", "")), "/etc/kubernetes/manifests/web.yaml", "Node-1")
			if err != nil {
				t.Fatal(err)
			}
			if h := pods[0].Annotations[kubetypes.ConfigHashAnnotationKey]; h != string(pods[0].UID) {
				t.Errorf("config.hash %q, want the UID %q", h, pods[0].UID)
			}
			return string(pods[0].UID)
		}, "e7f0ad5e219dc5fe528e42da28db3f1f"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.uid(t); got != tt.want {
				t.Errorf("UID = %s, want %s", got, tt.want)
			}
		})
	}
}
