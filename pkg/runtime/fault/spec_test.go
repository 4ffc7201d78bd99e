package fault

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestSpecJSONOmitsUnsetDurations: a fault as the HTTP API and the config echo it shows only
// what was set; an unset "for" reading "0s" suggested a hang of no time at all.
func TestSpecJSONOmitsUnsetDurations(t *testing.T) {
	tests := []struct {
		name string
		spec Spec
		want string
	}{
		{"hang", Spec{ID: "fault-1", Method: "ListPodSandbox", Type: Hang}, `{"id":"fault-1","method":"ListPodSandbox","type":"hang"}`},
		{"hang with for", Spec{ID: "f", Method: "*", Type: Hang, For: metav1.Duration{Duration: 30 * time.Second}}, `{"id":"f","method":"*","type":"hang","for":"30s"}`},
		{"latency", Spec{Method: "ListContainers", Type: Latency, Delay: metav1.Duration{Duration: 200 * time.Millisecond}, PerContainer: metav1.Duration{Duration: 50 * time.Microsecond}},
			`{"method":"ListContainers","type":"latency","delay":"200ms","perContainer":"50µs"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := json.Marshal(tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("JSON = %s, want %s", got, tt.want)
			}
			var back Spec
			if err := json.Unmarshal(got, &back); err != nil || back != tt.spec {
				t.Errorf("round trip = %+v, %v; want %+v", back, err, tt.spec)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	d := func(s string) metav1.Duration { v, _ := time.ParseDuration(s); return metav1.Duration{Duration: v} }
	tests := []struct {
		name    string
		spec    Spec
		wantErr string // substring; "" = valid
	}{
		{"hang", Spec{Method: "ListPodSandbox", Type: Hang}, ""},
		{"hang for", Spec{Method: "*", Type: Hang, For: d("30s")}, ""},
		{"latency", Spec{Method: "ListContainers", Type: Latency, Delay: d("1s")}, ""},
		{"error count", Spec{Method: "StartContainer", Type: Error, Message: "boom", Count: 2}, ""},
		{"error rate", Spec{Method: "*", Type: Error, Rate: 0.5}, ""},
		{"notReady", Spec{Method: "Status", Type: NotReady, Condition: "NetworkReady", Message: "cni down"}, ""},
		{"streamError", Spec{Method: "GetContainerEvents", Type: StreamError, Count: 5}, ""},
		{"no method", Spec{Type: Hang}, `"method" is required`},
		{"unknown method", Spec{Method: "ListPods", Type: Hang}, `unknown runtime method "ListPods"`},
		{"no type", Spec{Method: "*"}, `"type" is required`},
		{"unknown type", Spec{Method: "*", Type: "slow"}, `unknown fault type "slow"`},
		{"latency without delay", Spec{Method: "*", Type: Latency}, `needs delay or perContainer`},
		{"negative delay", Spec{Method: "*", Type: Latency, Delay: d("-1s")}, `"delay": must not be negative`},
		{"rate above 1", Spec{Method: "*", Type: Error, Rate: 1.5}, `"rate": must be within [0,1]`},
		{"negative count", Spec{Method: "*", Type: Error, Count: -1}, `"count": must not be negative`},
		{"bad condition", Spec{Method: "Status", Type: NotReady, Condition: "DiskReady"}, `must be RuntimeReady or NetworkReady, got "DiskReady"`},
		{"notReady on another method", Spec{Method: "ListContainers", Type: NotReady, Condition: "RuntimeReady"}, `a notReady fault applies to Status`},
		{"streamError on another method", Spec{Method: "Status", Type: StreamError}, `a streamError fault applies to GetContainerEvents`},
		{"for on notReady", Spec{Method: "Status", Type: NotReady, Condition: "RuntimeReady", For: d("1m")}, `fault field "for" does not apply to a notReady fault (it takes: condition, message)`},
		{"count on hang", Spec{Method: "*", Type: Hang, Count: 1}, `fault field "count" does not apply to a hang fault`},
		{"message on latency", Spec{Method: "*", Type: Latency, Delay: d("1s"), Message: "x"}, `fault field "message" does not apply to a latency fault`},
		{"rate on streamError", Spec{Method: "GetContainerEvents", Type: StreamError, Rate: 0.1}, `fault field "rate" does not apply to a streamError fault`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.spec.Validate()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("Validate() = %v, want nil", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("Validate() = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}
