package simulate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/minikubelet/minikubelet/pkg/release"
	"github.com/minikubelet/minikubelet/pkg/runtime/fault"
)

// MaxScenarioSize bounds a scenario file: it is read whole.
const MaxScenarioSize = 4 << 20

// Scenario is a scenario file (docs/simulate.md; the contract is
// shared/reference/scenario-format.md).
type Scenario struct {
	Name        string   `json:"name"`
	Description string   `json:"description,omitempty"`
	Seed        *int64   `json:"seed,omitempty"`
	Duration    Duration `json:"duration"`
	Args        []string `json:"args,omitempty"`
	// EmulatedVersion is the kubelet release the node is ("1.35"), as --emulated-version.
	EmulatedVersion string            `json:"emulatedVersion,omitempty"`
	Config          string            `json:"config,omitempty"`
	Manifests       map[string]string `json:"manifests,omitempty"`
	Cluster         bool              `json:"cluster,omitempty"`
	Steps           []Step            `json:"-"`
}

// Step is one timed action or expectation.
type Step struct {
	At     Duration  `json:"at"`
	Within *Duration `json:"within,omitempty"`
	// During makes an alert expectation hold at every instant of [at, at+during] (an
	// alert that never fires over a span).
	During *Duration `json:"during,omitempty"`

	Write          map[string]string `json:"write,omitempty"`
	Remove         []string          `json:"remove,omitempty"`
	Fault          *fault.Spec       `json:"fault,omitempty"`
	ClearFaults    bool              `json:"clearFaults,omitempty"`
	ClearFault     string            `json:"clearFault,omitempty"`
	Shutdown       bool              `json:"shutdown,omitempty"`
	RestartKubelet bool              `json:"restartKubelet,omitempty"`
	// Apply and Delete change the in-process API (cluster scenarios): Apply creates or
	// updates the objects of a multi-document YAML (Pods, ConfigMaps), Delete deletes
	// objects as kubectl delete does (a pod bound to the node gracefully).
	Apply  string      `json:"apply,omitempty"`
	Delete []ObjectRef `json:"delete,omitempty"`
	Expect *Expect     `json:"expect,omitempty"`

	objects []apiObject // Apply, decoded by validate
}

// ObjectRef names an API object; Namespace defaults to "default".
type ObjectRef struct {
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
}

// Expect is what must hold at a step's time (or at some instant of its within window).
// Each key present is one expectation.
type Expect struct {
	Node    *NodeExpect   `json:"node,omitempty"`
	Pod     *PodExpect    `json:"pod,omitempty"`
	Metric  *MetricExpect `json:"metric,omitempty"`
	Healthz string        `json:"healthz,omitempty"`
	Event   *EventExpect  `json:"event,omitempty"`
	Absent  *AbsentExpect `json:"absent,omitempty"`
	// Cluster scenarios: the objects as the in-process API holds them.
	APIPod   *APIPodExpect   `json:"apiPod,omitempty"`
	APINode  *NodeExpect     `json:"apiNode,omitempty"`
	APILease *APILeaseExpect `json:"apiLease,omitempty"`
	// Alert checks an alert of the rules the run evaluates (--rules).
	Alert *AlertExpect `json:"alert,omitempty"`
}

// APIPodExpect checks a pod as the API holds it (what the status manager patched).
type APIPodExpect struct {
	Name            string           `json:"name"`
	Namespace       string           `json:"namespace,omitempty"`
	Phase           string           `json:"phase,omitempty"`
	Reason          string           `json:"reason,omitempty"`
	MessageContains string           `json:"messageContains,omitempty"`
	Ready           *bool            `json:"ready,omitempty"`
	Condition       *ConditionExpect `json:"condition,omitempty"`
}

// AlertExpect checks an alert's state (of any name when Name is empty): some alert of that
// name whose labels include Labels is
// pending or firing (State pending or firing), none is pending or firing (inactive), or none
// is firing (notFiring: pending ones may be).
type AlertExpect struct {
	Name   string            `json:"name"`
	State  string            `json:"state"`
	Labels map[string]string `json:"labels,omitempty"`
}

// APILeaseExpect checks the node's Lease: renewed no longer than RenewedWithin ago.
type APILeaseExpect struct {
	RenewedWithin Duration `json:"renewedWithin"`
}

// NodeExpect checks one node condition.
type NodeExpect struct {
	Condition       string `json:"condition"`
	Status          string `json:"status,omitempty"`
	Reason          string `json:"reason,omitempty"`
	MessageContains string `json:"messageContains,omitempty"`
}

// PodExpect checks a pod as /pods shows it.
type PodExpect struct {
	Name           string                `json:"name"`
	Phase          string                `json:"phase,omitempty"`
	Ready          *bool                 `json:"ready,omitempty"`
	Restarts       *Value                `json:"restarts,omitempty"`
	ContainerState *ContainerStateExpect `json:"containerState,omitempty"`
	Condition      *ConditionExpect      `json:"condition,omitempty"`
}

// ContainerStateExpect checks one container's state.
type ContainerStateExpect struct {
	Name   string `json:"name"`
	State  string `json:"state"`
	Reason string `json:"reason,omitempty"`
	// ExitCode is a terminated state's exit code; LastReason the reason of the container's
	// last termination (lastState: OOMKilled while it waits in CrashLoopBackOff).
	ExitCode   *int32 `json:"exitCode,omitempty"`
	LastReason string `json:"lastReason,omitempty"`
}

// ConditionExpect checks one pod condition.
type ConditionExpect struct {
	Type   string `json:"type"`
	Status string `json:"status"`
	// Reason, when set, must be the condition's reason too.
	Reason string `json:"reason,omitempty"`
}

// MetricExpect checks a metric series (the sum of the series matching labels).
type MetricExpect struct {
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels,omitempty"`
	Value  Value             `json:"value"`
}

// EventExpect is an event seen at least once so far.
type EventExpect struct {
	Reason          string `json:"reason"`
	Object          string `json:"object,omitempty"`
	MessageContains string `json:"messageContains,omitempty"`
}

// AbsentExpect names what must not exist.
type AbsentExpect struct {
	Pod    string `json:"pod,omitempty"`
	APIPod string `json:"apiPod,omitempty"` // namespace/name or name (in default)
}

// Duration is a Go duration in a scenario ("30s", "1m30s"; 0 for zero).
type Duration struct{ time.Duration }

// UnmarshalJSON accepts a duration string or the number 0.
func (d *Duration) UnmarshalJSON(b []byte) error {
	if string(b) == "0" {
		d.Duration = 0
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("%s is not a duration (write it as \"30s\", \"2m\")", b)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%q is not a duration (write it as \"30s\", \"2m\")", s)
	}
	d.Duration = v
	return nil
}

// MarshalJSON writes the duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.Duration.String()) }

// Value is a comparison: an optional comparator (= != > >= < <=) and a number or word; a
// bare value means equals.
type Value struct {
	Op  string
	Arg string
}

var valueRE = regexp.MustCompile(`^\s*(==|=|!=|>=|<=|>|<)?\s*(.*?)\s*$`)

// UnmarshalJSON accepts a string or a number.
func (v *Value) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		var n json.Number
		if err := json.Unmarshal(b, &n); err != nil {
			return fmt.Errorf("%s is not a value (a number or a comparison such as \">0\")", b)
		}
		s = n.String()
	}
	m := valueRE.FindStringSubmatch(s)
	if m == nil || m[2] == "" {
		return fmt.Errorf("%q is not a value (a number or a comparison such as \">0\")", s)
	}
	op := m[1]
	if op == "" || op == "==" {
		op = "="
	}
	v.Op, v.Arg = op, m[2]
	return nil
}

// MarshalJSON writes the comparison as written.
func (v Value) MarshalJSON() ([]byte, error) { return json.Marshal(v.String()) }

func (v Value) String() string {
	if v.Op == "=" {
		return v.Arg
	}
	return v.Op + v.Arg
}

// numeric reports whether the comparison holds for got; false, with an error, when the
// argument is not a number.
func (v Value) numeric(got float64) (bool, error) {
	want, err := strconv.ParseFloat(v.Arg, 64)
	if err != nil {
		return false, fmt.Errorf("%q is not a number", v.Arg)
	}
	switch v.Op {
	case "=":
		return got == want, nil
	case "!=":
		return got != want, nil
	case ">":
		return got > want, nil
	case ">=":
		return got >= want, nil
	case "<":
		return got < want, nil
	case "<=":
		return got <= want, nil
	}
	return false, fmt.Errorf("unknown comparator %q", v.Op)
}

// InvalidError is a scenario file that cannot run (exit code 2).
type InvalidError struct {
	File string
	Err  error
}

func (e *InvalidError) Error() string {
	if e.File == "" {
		return "invalid scenario: " + e.Err.Error()
	}
	return fmt.Sprintf("invalid scenario %s: %v", e.File, e.Err)
}

func (e *InvalidError) Unwrap() error { return e.Err }

// Parse decodes and validates a scenario file's content. Unknown keys are errors; every
// error names the step index (from 0, as the file lists them) and the key.
func Parse(data []byte) (*Scenario, error) {
	if len(data) > MaxScenarioSize {
		return nil, &InvalidError{Err: fmt.Errorf("%d bytes is over the %d byte limit", len(data), MaxScenarioSize)}
	}
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, &InvalidError{Err: fmt.Errorf("not YAML: %w", err)}
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(js, &top); err != nil || top == nil {
		return nil, &InvalidError{Err: errors.New("the file must be a YAML mapping with name, duration and steps")}
	}
	rawSteps := top["steps"]
	delete(top, "steps")
	rest, _ := json.Marshal(top)
	s := &Scenario{}
	if err := strictUnmarshal(rest, s); err != nil {
		return nil, &InvalidError{Err: err}
	}
	var steps []json.RawMessage
	if len(rawSteps) > 0 && string(rawSteps) != "null" {
		if err := json.Unmarshal(rawSteps, &steps); err != nil {
			return nil, &InvalidError{Err: errors.New("key \"steps\": must be a list of steps")}
		}
	}
	for i, raw := range steps {
		var st Step
		if err := strictUnmarshal(raw, &st); err != nil {
			return nil, &InvalidError{Err: fmt.Errorf("step %d: %w", i, err)}
		}
		s.Steps = append(s.Steps, st)
	}
	if err := s.validate(); err != nil {
		return nil, &InvalidError{Err: err}
	}
	return s, nil
}

var unknownFieldRE = regexp.MustCompile(`unknown field "([^"]+)"`)

// durationKeys are the keys holding a Duration at the top level and in a step: their
// decoding errors are reported with the key (encoding/json does not name it).
var durationKeys = []string{"at", "within", "duration"}

// strictUnmarshal decodes JSON rejecting unknown keys, with errors that name the key.
func strictUnmarshal(data []byte, v any) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return errors.New("must be a mapping of keys to values")
	}
	for _, k := range durationKeys {
		if raw, ok := fields[k]; ok {
			var d Duration
			if err := d.UnmarshalJSON(raw); err != nil {
				return fmt.Errorf("key %q: %w", k, err)
			}
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if m := unknownFieldRE.FindStringSubmatch(err.Error()); m != nil {
			return fmt.Errorf("unknown key %q", m[1])
		}
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return fmt.Errorf("key %q: %s is not a %s", te.Field, te.Value, te.Type)
		}
		return errors.New(strings.TrimPrefix(err.Error(), "json: "))
	}
	return nil
}

func (s *Scenario) validate() error {
	if strings.TrimSpace(s.Name) == "" {
		return errors.New("key \"name\": required")
	}
	if s.Duration.Duration <= 0 {
		return fmt.Errorf("key \"duration\": required and positive, got %v", s.Duration.Duration)
	}
	if s.EmulatedVersion != "" {
		if _, err := release.Parse(s.EmulatedVersion); err != nil {
			return fmt.Errorf("key \"emulatedVersion\": %w", err)
		}
		if containsFlag(s.Args, "emulated-version") {
			return errors.New("key \"emulatedVersion\": args give --emulated-version as well; keep one")
		}
	}
	for name := range s.Manifests {
		if err := validFileName(name); err != nil {
			return fmt.Errorf("key \"manifests\": %w", err)
		}
	}
	var last time.Duration
	for i := range s.Steps {
		if err := s.Steps[i].validate(s.Duration.Duration, last); err != nil {
			return fmt.Errorf("step %d: %w", i, err)
		}
		if err := s.Steps[i].validateCluster(s.Cluster); err != nil {
			return fmt.Errorf("step %d: %w", i, err)
		}
		last = s.Steps[i].At.Duration
	}
	return nil
}

func validFileName(name string) error {
	if name == "" || name != filepath.Base(name) || name == "." || name == ".." || strings.ContainsAny(name, `/\`) {
		return fmt.Errorf("file name %q must be a plain file name, no directories", name)
	}
	return nil
}

// actions names the action keys a step sets.
func (st *Step) actions() []string {
	var keys []string
	if st.Write != nil {
		keys = append(keys, "write")
	}
	if st.Remove != nil {
		keys = append(keys, "remove")
	}
	if st.Fault != nil {
		keys = append(keys, "fault")
	}
	if st.ClearFaults {
		keys = append(keys, "clearFaults")
	}
	if st.ClearFault != "" {
		keys = append(keys, "clearFault")
	}
	if st.Shutdown {
		keys = append(keys, "shutdown")
	}
	if st.RestartKubelet {
		keys = append(keys, "restartKubelet")
	}
	if st.Apply != "" {
		keys = append(keys, "apply")
	}
	if st.Delete != nil {
		keys = append(keys, "delete")
	}
	if st.Expect != nil {
		keys = append(keys, "expect")
	}
	return keys
}

func (st *Step) validate(duration, last time.Duration) error {
	at := st.At.Duration
	switch {
	case at < 0:
		return fmt.Errorf("key \"at\": must not be negative, got %v", at)
	case at > duration:
		return fmt.Errorf("key \"at\": %v is after the scenario's duration %v", at, duration)
	case at < last:
		return fmt.Errorf("key \"at\": %v is before the previous step's %v (steps are in time order)", at, last)
	}
	keys := st.actions()
	switch len(keys) {
	case 0:
		return errors.New("no action or expect (one of write, remove, fault, clearFaults, clearFault, shutdown, restartKubelet, apply, delete, expect)")
	case 1:
	default:
		return fmt.Errorf("keys %s: one action or expect per step", strings.Join(keys, ", "))
	}
	if st.Within != nil {
		if st.Expect == nil {
			return errors.New("key \"within\": only with expect")
		}
		if st.Within.Duration < 0 {
			return fmt.Errorf("key \"within\": must not be negative, got %v", st.Within.Duration)
		}
	}
	if st.During != nil {
		switch {
		case st.Expect == nil || st.Expect.Alert == nil || len(st.Expect.checkKeys()) > 1:
			return errors.New("key \"during\": only with an alert expectation alone")
		case st.Within != nil:
			return errors.New("keys within, during: one or the other")
		case st.During.Duration <= 0:
			return fmt.Errorf("key \"during\": must be positive, got %v", st.During.Duration)
		case at+st.During.Duration > duration:
			return fmt.Errorf("key \"during\": %v from %v ends after the scenario's duration %v", st.During.Duration, at, duration)
		}
	}
	for name := range st.Write {
		if err := validFileName(name); err != nil {
			return fmt.Errorf("key \"write\": %w", err)
		}
	}
	for _, name := range st.Remove {
		if err := validFileName(name); err != nil {
			return fmt.Errorf("key \"remove\": %w", err)
		}
	}
	if st.Fault != nil {
		if err := st.Fault.Validate(); err != nil {
			return fmt.Errorf("key \"fault\": %w", err)
		}
	}
	if st.Expect != nil {
		if err := st.Expect.validate(); err != nil {
			return fmt.Errorf("key \"expect\": %w", err)
		}
	}
	return nil
}

// checkKeys names the expectation's keys present.
func (e *Expect) checkKeys() []string {
	var out []string
	for _, k := range []struct {
		name string
		set  bool
	}{{"node", e.Node != nil}, {"pod", e.Pod != nil}, {"metric", e.Metric != nil}, {"healthz", e.Healthz != ""},
		{"event", e.Event != nil}, {"absent", e.Absent != nil}, {"apiPod", e.APIPod != nil}, {"apiNode", e.APINode != nil},
		{"apiLease", e.APILease != nil}, {"alert", e.Alert != nil}} {
		if k.set {
			out = append(out, k.name)
		}
	}
	return out
}

func (e *Expect) validate() error {
	if len(e.checkKeys()) == 0 {
		return errors.New("empty (one or more of node, pod, metric, healthz, event, absent, apiPod, apiNode, apiLease, alert)")
	}
	if a := e.Alert; a != nil {
		switch a.State {
		case "pending", "firing", "inactive", "notFiring":
		default:
			return fmt.Errorf("key \"alert.state\": %q is not pending, firing, inactive or notFiring", a.State)
		}
	}
	if n := e.Node; n != nil {
		if n.Condition == "" {
			return errors.New("key \"node.condition\": required")
		}
		if n.Status != "" && n.Status != "True" && n.Status != "False" && n.Status != "Unknown" {
			return fmt.Errorf("key \"node.status\": %q is not True, False or Unknown", n.Status)
		}
	}
	if p := e.Pod; p != nil {
		if p.Name == "" {
			return errors.New("key \"pod.name\": required")
		}
		if p.Restarts != nil {
			if _, err := p.Restarts.numeric(0); err != nil {
				return fmt.Errorf("key \"pod.restarts\": %w", err)
			}
		}
		if cs := p.ContainerState; cs != nil {
			if cs.Name == "" {
				return errors.New("key \"pod.containerState.name\": required")
			}
			switch cs.State {
			case "waiting", "running", "terminated":
			default:
				return fmt.Errorf("key \"pod.containerState.state\": %q is not waiting, running or terminated", cs.State)
			}
		}
		if c := p.Condition; c != nil && (c.Type == "" || c.Status == "") {
			return errors.New("key \"pod.condition\": type and status are required")
		}
	}
	if m := e.Metric; m != nil {
		if m.Name == "" {
			return errors.New("key \"metric.name\": required")
		}
		if m.Value.Arg == "" {
			return errors.New("key \"metric.value\": required")
		}
		if _, err := m.Value.numeric(0); err != nil {
			return fmt.Errorf("key \"metric.value\": %w", err)
		}
	}
	if e.Healthz != "" && e.Healthz != "ok" && e.Healthz != "fail" {
		return fmt.Errorf("key \"healthz\": %q is not ok or fail", e.Healthz)
	}
	if ev := e.Event; ev != nil && ev.Reason == "" {
		return errors.New("key \"event.reason\": required")
	}
	if a := e.Absent; a != nil && (a.Pod == "") == (a.APIPod == "") {
		return errors.New("key \"absent\": one of pod or apiPod")
	}
	if p := e.APIPod; p != nil {
		if p.Name == "" {
			return errors.New("key \"apiPod.name\": required")
		}
		if c := p.Condition; c != nil && (c.Type == "" || c.Status == "") {
			return errors.New("key \"apiPod.condition\": type and status are required")
		}
	}
	if n := e.APINode; n != nil && n.Condition == "" {
		return errors.New("key \"apiNode.condition\": required")
	}
	if l := e.APILease; l != nil && l.RenewedWithin.Duration <= 0 {
		return errors.New("key \"apiLease.renewedWithin\": required and positive")
	}
	return nil
}

// validateCluster checks the cluster keys: only in a cluster scenario, and apply's
// objects decode.
func (st *Step) validateCluster(cluster bool) error {
	var keys []string
	if st.Apply != "" {
		keys = append(keys, "apply")
	}
	if st.Delete != nil {
		keys = append(keys, "delete")
	}
	if e := st.Expect; e != nil {
		if e.APIPod != nil {
			keys = append(keys, "expect.apiPod")
		}
		if e.APINode != nil {
			keys = append(keys, "expect.apiNode")
		}
		if e.APILease != nil {
			keys = append(keys, "expect.apiLease")
		}
		if e.Absent != nil && e.Absent.APIPod != "" {
			keys = append(keys, "expect.absent.apiPod")
		}
	}
	if len(keys) > 0 && !cluster {
		return fmt.Errorf("key %q: only in a cluster scenario (cluster: true)", keys[0])
	}
	if st.Apply != "" {
		objs, err := decodeObjects(st.Apply)
		if err != nil {
			return fmt.Errorf("key \"apply\": %w", err)
		}
		st.objects = objs
	}
	for j, ref := range st.Delete {
		if ref.Name == "" || (ref.Kind != "Pod" && ref.Kind != "ConfigMap" && ref.Kind != "Secret") {
			return fmt.Errorf("key \"delete[%d]\": kind (Pod, ConfigMap or Secret) and name are required, got kind %q name %q", j, ref.Kind, ref.Name)
		}
	}
	return nil
}

// ExpectsAlerts reports whether a step expects an alert (such a scenario needs rules).
func (s *Scenario) ExpectsAlerts() bool {
	for _, st := range s.Steps {
		if st.Expect != nil && st.Expect.Alert != nil {
			return true
		}
	}
	return false
}
