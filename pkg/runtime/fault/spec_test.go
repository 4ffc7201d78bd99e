package fault

import (
	"encoding/json"
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
