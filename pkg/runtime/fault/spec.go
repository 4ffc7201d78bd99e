package fault

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Type is the kind of fault.
type Type string

const (
	Latency     Type = "latency"
	Error       Type = "error"
	Hang        Type = "hang"
	NotReady    Type = "notReady"
	StreamError Type = "streamError"
)

// AnyMethod matches every runtime method.
const AnyMethod = "*"

// Methods are the runtime methods a fault can name (the CRI RPC names).
var Methods = []string{
	"RunPodSandbox", "StopPodSandbox", "RemovePodSandbox", "PodSandboxStatus", "ListPodSandbox", "ExecSync", "ListContainerStats", "ListPodSandboxStats",
	"CreateContainer", "StartContainer", "StopContainer", "RemoveContainer", "ListContainers", "UpdateContainerResources",
	"ContainerStatus", "Status", "GetContainerEvents", "PullImage", "ImageStatus", "ListImages",
	"RemoveImage",
}

// Spec is one fault as users write it (YAML in the SimulatorConfiguration and scenarios, JSON
// over HTTP). A field its type does not use is refused by Validate.
type Spec struct {
	// ID is assigned by the runtime when the fault is added (users may leave it empty).
	ID     string `json:"id,omitempty"`
	Method string `json:"method"`
	Type   Type   `json:"type"`
	// Delay (latency): added to every matching call.
	Delay metav1.Duration `json:"delay,omitzero"`
	// PerContainer (latency): extra delay per container the call touches or lists.
	PerContainer metav1.Duration `json:"perContainer,omitzero"`
	// Message (error): the error text; default "injected fault".
	Message string `json:"message,omitempty"`
	// Count (error, streamError): fire this many times then retire; 0 = unlimited (error) or 1 (streamError).
	Count int `json:"count,omitempty"`
	// Rate (error): probability in (0,1] that a matching call fails, from the seeded source.
	Rate float64 `json:"rate,omitempty"`
	// For (hang): the longest a call blocks; 0 = until cleared or the caller's context ends.
	For metav1.Duration `json:"for,omitzero"`
	// Condition (notReady): RuntimeReady or NetworkReady.
	Condition string `json:"condition,omitempty"`
}

// Validate checks a spec and returns an error naming the bad field and value.
func (s *Spec) Validate() error {
	if s.Method == "" {
		return fmt.Errorf("fault field \"method\" is required (one of %s or %q)", strings.Join(Methods, ", "), AnyMethod)
	}
	if s.Method != AnyMethod && !knownMethod(s.Method) {
		return fmt.Errorf("fault field \"method\": unknown runtime method %q (one of %s or %q)", s.Method, strings.Join(Methods, ", "), AnyMethod)
	}
	if s.Delay.Duration < 0 {
		return fmt.Errorf("fault field \"delay\": must not be negative, got %v", s.Delay.Duration)
	}
	if s.PerContainer.Duration < 0 {
		return fmt.Errorf("fault field \"perContainer\": must not be negative, got %v", s.PerContainer.Duration)
	}
	if s.For.Duration < 0 {
		return fmt.Errorf("fault field \"for\": must not be negative, got %v", s.For.Duration)
	}
	if s.Count < 0 {
		return fmt.Errorf("fault field \"count\": must not be negative, got %d", s.Count)
	}
	if s.Rate < 0 || s.Rate > 1 {
		return fmt.Errorf("fault field \"rate\": must be within [0,1], got %v", s.Rate)
	}
	switch s.Type {
	case Latency:
		if s.Delay.Duration == 0 && s.PerContainer.Duration == 0 {
			return fmt.Errorf("fault field \"delay\": a latency fault needs delay or perContainer")
		}
	case Error, Hang:
	case NotReady:
		if s.Condition != "RuntimeReady" && s.Condition != "NetworkReady" {
			return fmt.Errorf("fault field \"condition\": must be RuntimeReady or NetworkReady, got %q", s.Condition)
		}
		if s.Method != "Status" && s.Method != AnyMethod {
			return fmt.Errorf("fault field \"method\": a notReady fault applies to Status, got %q", s.Method)
		}
	case StreamError:
		if s.Method != "GetContainerEvents" && s.Method != AnyMethod {
			return fmt.Errorf("fault field \"method\": a streamError fault applies to GetContainerEvents, got %q", s.Method)
		}
	case "":
		return fmt.Errorf("fault field \"type\" is required (latency, error, hang, notReady or streamError)")
	default:
		return fmt.Errorf("fault field \"type\": unknown fault type %q (latency, error, hang, notReady or streamError)", s.Type)
	}
	// A field the type does not use is a mistake (say "for" on a notReady fault, which would
	// otherwise silently never end): refuse it rather than ignore it.
	allowed := fieldsByType[s.Type]
	for _, f := range s.setFields() {
		if !allowed[f] {
			return fmt.Errorf("fault field %q does not apply to a %s fault (it takes: %s)", f, s.Type, fieldList[s.Type])
		}
	}
	return nil
}

// fieldsByType lists the optional fields each fault type uses (method and type always apply).
var fieldsByType = map[Type]map[string]bool{
	Latency:     {"delay": true, "perContainer": true},
	Error:       {"message": true, "count": true, "rate": true},
	Hang:        {"for": true},
	NotReady:    {"condition": true, "message": true},
	StreamError: {"message": true, "count": true},
}

var fieldList = map[Type]string{
	Latency:     "delay, perContainer",
	Error:       "message, count, rate",
	Hang:        "for",
	NotReady:    "condition, message",
	StreamError: "message, count",
}

// setFields names the optional fields that are set.
func (s *Spec) setFields() []string {
	var out []string
	add := func(set bool, name string) {
		if set {
			out = append(out, name)
		}
	}
	add(s.Delay.Duration != 0, "delay")
	add(s.PerContainer.Duration != 0, "perContainer")
	add(s.Message != "", "message")
	add(s.Count != 0, "count")
	add(s.Rate != 0, "rate")
	add(s.For.Duration != 0, "for")
	add(s.Condition != "", "condition")
	return out
}

// Matches reports whether the fault applies to method.
func (s *Spec) Matches(method string) bool {
	return s.Method == AnyMethod || s.Method == method
}

func knownMethod(m string) bool {
	for _, k := range Methods {
		if k == m {
			return true
		}
	}
	return false
}
