package podsource

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// FuzzManifest feeds arbitrary file content to the manifest parser. A refused file gets a
// *FileError that starts with its path and carries a known reason; an accepted one is one
// pod that passes the source's validation, has no value out of range, gets the same UID
// when parsed again, and is a fixed point: the pod written back to YAML parses to itself.
// Seeds: testdata/fuzz/FuzzManifest (hostile files: alias bombs, binary, huge numbers,
// lists, deep nesting) run as regression tests under plain go test.
func FuzzManifest(f *testing.F) {
	f.Add([]byte(kubectlRun))
	f.Add([]byte(podYAML("p", "    ports: [{containerPort: 80, hostPort: 8080}]\n    resources: {limits: {cpu: 500m, memory: 64Mi}}\n")))
	f.Add([]byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"j"},"spec":{"containers":[{"name":"c","image":"i:1"}]}}`))
	const path, node = "/etc/kubernetes/manifests/f.yaml", "Node-1"
	f.Fuzz(func(t *testing.T, data []byte) {
		pods, _, err := ParseManifest(data, path, node)
		if err != nil {
			var fe *FileError
			if !errors.As(err, &fe) {
				t.Fatalf("error %T %q is not a *FileError", err, err)
			}
			if fe.Path != path || !strings.HasPrefix(err.Error(), path+": ") {
				t.Fatalf("error %q does not start with the file's path", err)
			}
			switch fe.Reason {
			case ReasonDecode, ReasonNotPod, ReasonInvalid:
			default:
				t.Fatalf("error %q has reason %q", err, fe.Reason)
			}
			if pods != nil {
				t.Fatalf("refused file returned pods %v", pods)
			}
			return
		}
		if len(pods) != 1 {
			t.Fatalf("accepted file gave %d pods, want 1", len(pods))
		}
		pod := pods[0]
		if errs := validatePod(pod); len(errs) > 0 {
			t.Fatalf("accepted pod fails validation: %v", errs)
		}
		checkInRange(t, pod)
		if !strings.HasSuffix(pod.Name, "-node-1") || pod.Spec.NodeName != node || pod.UID == "" {
			t.Fatalf("accepted pod lacks static pod defaults: name %q node %q uid %q", pod.Name, pod.Spec.NodeName, pod.UID)
		}

		// Parsing is deterministic: the same file gives the same UID (the kubelet would
		// otherwise restart the pod at every re-list).
		again, _, err := ParseManifest(data, path, node)
		if err != nil || again[0].UID != pod.UID {
			t.Fatalf("second parse: err %v, UID %v vs %v", err, again, pod.UID)
		}

		// Defaulting is idempotent: the accepted pod, written out with its file name, parses
		// back to itself.
		out := pod.DeepCopy()
		out.Name = strings.TrimSuffix(out.Name, "-node-1")
		j, err := json.Marshal(out)
		if err != nil {
			t.Fatalf("marshal accepted pod: %v", err)
		}
		back, _, err := ParseManifest(j, path, node)
		if err != nil {
			t.Fatalf("accepted pod written back is refused: %v\n%s", err, j)
		}
		if !reflect.DeepEqual(normalise(back[0]), normalise(pod)) {
			b, _ := json.Marshal(back[0])
			a, _ := json.Marshal(pod)
			t.Fatalf("accepted pod written back parses differently:\n got %s\nwant %s", b, a)
		}
	})
}

// normalise makes two pods comparable as JSON, the form they are stored and compared in
// (resource.Quantity keeps its original text, which DeepEqual would see).
func normalise(p *v1.Pod) map[string]any {
	j, _ := json.Marshal(p)
	var m map[string]any
	_ = json.Unmarshal(j, &m)
	return m
}

// checkInRange fails on any value of an accepted pod the simulator would turn into a
// negative or absurd duration, port or amount.
func checkInRange(t *testing.T, pod *v1.Pod) {
	t.Helper()
	spec := &pod.Spec
	if g := spec.TerminationGracePeriodSeconds; g == nil || *g < 0 {
		t.Fatalf("terminationGracePeriodSeconds %v", g)
	}
	if d := spec.ActiveDeadlineSeconds; d != nil && (*d < 1 || *d > math.MaxInt32) {
		t.Fatalf("activeDeadlineSeconds %d", *d)
	}
	all := append(append([]v1.Container{}, spec.InitContainers...), spec.Containers...)
	for _, c := range all {
		for _, p := range c.Ports {
			if p.ContainerPort < 1 || p.ContainerPort > 65535 || p.HostPort < 0 || p.HostPort > 65535 {
				t.Fatalf("container %s: port %+v", c.Name, p)
			}
		}
		for _, l := range []v1.ResourceList{c.Resources.Requests, c.Resources.Limits} {
			for n, q := range l {
				if q.Sign() < 0 {
					t.Fatalf("container %s: %s %s", c.Name, n, q.String())
				}
			}
		}
		for _, p := range []*v1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
			if p == nil {
				continue
			}
			if p.PeriodSeconds < 1 || p.TimeoutSeconds < 1 || p.InitialDelaySeconds < 0 || p.SuccessThreshold < 1 || p.FailureThreshold < 1 {
				t.Fatalf("container %s: probe %+v", c.Name, p)
			}
			if g := p.TerminationGracePeriodSeconds; g != nil && *g < 1 {
				t.Fatalf("container %s: probe terminationGracePeriodSeconds %d", c.Name, *g)
			}
		}
	}
}
