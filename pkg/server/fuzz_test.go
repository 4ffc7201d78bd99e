package server

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/minikubelet/minikubelet/pkg/runtime/fault"
)

// FuzzFault feeds an arbitrary body to DecodeFault, as POST /debug/faults does. A refused
// body gets an error that starts with "invalid fault" (and names the field when a field is
// at fault); an accepted fault validates, has no negative duration or count and a rate in
// [0,1], and its JSON (as the server answers it) decodes to the same fault. Seeds:
// testdata/fuzz/FuzzFault run as regression tests under plain go test.
func FuzzFault(f *testing.F) {
	f.Add([]byte(`{"method":"ListPodSandbox","type":"hang"}`))
	f.Add([]byte(`{"method":"StartContainer","type":"error","message":"boom","count":3,"rate":0.5}`))
	f.Add([]byte(`{"method":"*","type":"latency","delay":"2s","perContainer":"10ms"}`))
	f.Add([]byte(`{"method":"Status","type":"notReady","condition":"NetworkReady"}`))
	f.Add([]byte(`{"method":"GetContainerEvents","type":"streamError","count":2}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		spec, err := DecodeFault(bytes.NewReader(body))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "invalid fault") {
				t.Fatalf("error %q does not start with \"invalid fault\"", err)
			}
			if strings.HasPrefix(err.Error(), "invalid fault: fault field") && !strings.Contains(err.Error(), `"`) {
				t.Fatalf("error %q does not quote the field", err)
			}
			return
		}
		if err := spec.Validate(); err != nil {
			t.Fatalf("accepted fault does not validate: %v", err)
		}
		if spec.Delay.Duration < 0 || spec.PerContainer.Duration < 0 || spec.For.Duration < 0 || spec.Count < 0 || !(spec.Rate >= 0 && spec.Rate <= 1) {
			t.Fatalf("accepted fault out of range: %+v", spec)
		}
		if spec.Method != fault.AnyMethod && !contains(fault.Methods, spec.Method) {
			t.Fatalf("accepted unknown method %q", spec.Method)
		}
		j, err := json.Marshal(spec)
		if err != nil {
			t.Fatalf("marshal accepted fault: %v", err)
		}
		back, err := DecodeFault(bytes.NewReader(j))
		if err != nil {
			t.Fatalf("accepted fault's JSON %s is refused: %v", j, err)
		}
		if !reflect.DeepEqual(back, spec) {
			t.Fatalf("accepted fault's JSON %s decodes to %+v, want %+v", j, back, spec)
		}
	})
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
