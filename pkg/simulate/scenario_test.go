package simulate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const validHead = "name: t\nduration: 1m\n"

func TestParseErrorsNameStepAndKey(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"not yaml", "name: [", "not YAML"},
		{"not a mapping", "- a\n- b\n", "must be a YAML mapping"},
		{"no name", "duration: 1m\n", `key "name": required`},
		{"no duration", "name: t\n", `key "duration": required`},
		{"bad duration", "name: t\nduration: soon\n", `key "duration": "soon" is not a duration`},
		{"unknown top key", validHead + "sed: 1\n", `unknown key "sed"`},
		{"release not emulated", validHead + "emulatedVersion: \"1.33\"\n", `key "emulatedVersion": "1.33": the simulator emulates the kubelet releases 1.34, 1.35, 1.36 and 1.37`},
		{"release twice", validHead + "emulatedVersion: \"1.35\"\nargs: [--emulated-version=1.36]\n", `key "emulatedVersion": args give --emulated-version as well`},
		{"steps not a list", validHead + "steps: {at: 1s}\n", `key "steps": must be a list`},
		{"unknown step key", validHead + "steps:\n- at: 1s\n  wirte: {}\n", `step 0: unknown key "wirte"`},
		{"bad at", validHead + "steps:\n- at: 1s\n  shutdown: true\n- at: later\n  shutdown: true\n", `step 1: key "at": "later" is not a duration`},
		{"at after duration", validHead + "steps:\n- at: 2m\n  shutdown: true\n", `step 0: key "at": 2m0s is after the scenario's duration 1m0s`},
		{"out of order", validHead + "steps:\n- at: 30s\n  shutdown: true\n- at: 10s\n  shutdown: true\n", `step 1: key "at": 10s is before the previous step's 30s`},
		{"two actions", validHead + "steps:\n- at: 1s\n  shutdown: true\n  clearFaults: true\n", `step 0: keys clearFaults, shutdown: one action or expect per step`},
		{"no action", validHead + "steps:\n- at: 1s\n", `step 0: no action or expect`},
		{"within without expect", validHead + "steps:\n- at: 1s\n  within: 5s\n  shutdown: true\n", `step 0: key "within": only with expect`},
		{"bad fault", validHead + "steps:\n- at: 1s\n  fault: {method: Nope, type: hang}\n", `step 0: key "fault": fault field "method": unknown runtime method "Nope"`},
		{"empty expect", validHead + "steps:\n- at: 1s\n  expect: {}\n", `step 0: key "expect": empty`},
		{"pod without name", validHead + "steps:\n- at: 1s\n  expect: {pod: {phase: Running}}\n", `step 0: key "expect": key "pod.name": required`},
		{"bad state", validHead + "steps:\n- at: 1s\n  expect: {pod: {name: a, containerState: {name: c, state: sleeping}}}\n", `key "pod.containerState.state": "sleeping" is not waiting`},
		{"bad metric value", validHead + "steps:\n- at: 1s\n  expect: {metric: {name: m, value: \">x\"}}\n", `key "metric.value": "x" is not a number`},
		{"bad healthz", validHead + "steps:\n- at: 1s\n  expect: {healthz: maybe}\n", `key "healthz": "maybe" is not ok or fail`},
		{"bad alert state", validHead + "steps:\n- at: 1s\n  expect: {alert: {name: A, state: up}}\n", `key "alert.state": "up" is not pending, firing, inactive or notFiring`},
		{"during without alert", validHead + "steps:\n- at: 1s\n  during: 5s\n  expect: {healthz: ok}\n", `step 0: key "during": only with an alert expectation alone`},
		{"during and within", validHead + "steps:\n- at: 1s\n  during: 5s\n  within: 5s\n  expect: {alert: {name: A, state: firing}}\n", `step 0: keys within, during: one or the other`},
		{"during past the end", validHead + "steps:\n- at: 30s\n  during: 1m\n  expect: {alert: {name: A, state: inactive}}\n", `step 0: key "during": 1m0s from 30s ends after the scenario's duration 1m0s`},
		{"bad node status", validHead + "steps:\n- at: 1s\n  expect: {node: {condition: Ready, status: Maybe}}\n", `key "node.status": "Maybe" is not True`},
		{"manifest path", validHead + "manifests:\n  ../x.yaml: a\n", `key "manifests": file name "../x.yaml" must be a plain file name`},
		{"write path", validHead + "steps:\n- at: 1s\n  write: {a/b.yaml: x}\n", `step 0: key "write": file name "a/b.yaml"`},
		{"apply outside a cluster scenario", validHead + "steps:\n- at: 1s\n  apply: |\n    apiVersion: v1\n    kind: Pod\n    metadata: {name: a}\n", `step 0: key "apply": only in a cluster scenario (cluster: true)`},
		{"apiPod outside a cluster scenario", validHead + "steps:\n- at: 1s\n  expect: {apiPod: {name: a}}\n", `step 0: key "expect.apiPod": only in a cluster scenario`},
		{"apply of another kind", validHead + "cluster: true\nsteps:\n- at: 1s\n  apply: |\n    apiVersion: apps/v1\n    kind: Deployment\n    metadata: {name: a}\n", `step 0: key "apply": document 0: apiVersion "apps/v1" kind "Deployment": only v1 Pod, ConfigMap and Secret can be applied`},
		{"apply of an unknown field", validHead + "cluster: true\nsteps:\n- at: 1s\n  apply: |\n    apiVersion: v1\n    kind: Pod\n    metadata: {name: a}\n    spec: {nodeNmae: x}\n", `step 0: key "apply": document 0 (Pod)`},
		{"delete without a kind", validHead + "cluster: true\nsteps:\n- at: 1s\n  delete: [{name: a}]\n", `step 0: key "delete[0]": kind (Pod, ConfigMap or Secret) and name are required`},
		{"absent with both", validHead + "cluster: true\nsteps:\n- at: 1s\n  expect: {absent: {pod: a, apiPod: a}}\n", `key "absent": one of pod or apiPod`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.in))
			if err == nil {
				t.Fatalf("Parse accepted:\n%s", tt.in)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
			if !strings.HasPrefix(err.Error(), "invalid scenario") {
				t.Errorf("error %q does not start with \"invalid scenario\"", err)
			}
		})
	}
}

func TestParseValid(t *testing.T) {
	sc, err := Parse([]byte(`
name: ok
duration: 5m
seed: 7
args: ["--relist-threshold=3m"]
steps:
- at: 0
  fault: {method: ListPodSandbox, type: latency, delay: 2s}
- at: 30s
  within: 10s
  expect:
    pod: {name: web-node, restarts: ">=2", ready: false, condition: {type: Ready, status: "False"}}
    metric: {name: m_bucket, labels: {le: "5"}, value: 3}
- at: 30s
  clearFault: fault-1
`))
	if err != nil {
		t.Fatal(err)
	}
	if sc.Duration.Duration != 5*time.Minute || *sc.Seed != 7 || len(sc.Steps) != 3 {
		t.Errorf("scenario = %+v", sc)
	}
	st := sc.Steps[1]
	if st.Within.Duration != 10*time.Second || st.Expect.Pod.Restarts.Op != ">=" || st.Expect.Pod.Restarts.Arg != "2" || st.Expect.Metric.Value.String() != "3" {
		t.Errorf("step 1 = %+v / %+v", st, st.Expect.Pod)
	}
}

// FuzzParse feeds the parser arbitrary input: it must return a scenario or an
// *InvalidError, never panic, and a scenario it accepts must be valid.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "configs", "scenarios", "*.yaml"))
	for _, path := range files {
		if data, err := os.ReadFile(path); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte(validHead + "steps:\n- at: 1s\n  expect: {metric: {name: m, value: '>=1'}}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		sc, err := Parse(data)
		if err != nil {
			if _, ok := err.(*InvalidError); !ok {
				t.Fatalf("error %T %v is not an *InvalidError", err, err)
			}
			return
		}
		if sc.Duration.Duration <= 0 || sc.Name == "" {
			t.Fatalf("accepted an invalid scenario: %+v", sc)
		}
		for i, st := range sc.Steps {
			if len(st.actions()) != 1 || st.At.Duration > sc.Duration.Duration {
				t.Fatalf("accepted an invalid step %d: %+v", i, st)
			}
		}
	})
}
