package evictionapi

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseEvictionHard(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      map[string]string
		want    []string
		wantErr string
	}{
		{"nil means the defaults", nil, []string{"imagefs.available<15%", "memory.available<100Mi", "nodefs.available<10%", "nodefs.inodesFree<5%"}, ""},
		{"empty means none", map[string]string{}, nil, ""},
		{"quantities and percentages", map[string]string{"memory.available": "1Gi", "pid.available": "1000", "nodefs.available": "12.5%"}, []string{"memory.available<1Gi", "nodefs.available<12.5%", "pid.available<1k"}, ""},
		{"0% and 100% disable", map[string]string{"memory.available": "0%", "nodefs.available": "100%"}, nil, ""},
		{"unknown signal", map[string]string{"memory.free": "1Gi"}, nil, `evictionHard["memory.free"]="1Gi": unsupported eviction signal memory.free`},
		{"bad quantity", map[string]string{"memory.available": "lots"}, nil, `evictionHard["memory.available"]="lots": invalid quantity`},
		{"zero quantity", map[string]string{"memory.available": "0"}, nil, `evictionHard["memory.available"]="0": eviction threshold memory.available must be positive: 0`},
		{"negative quantity", map[string]string{"pid.available": "-5"}, nil, "must be positive"},
		{"percentage over 100", map[string]string{"nodefs.available": "120%"}, nil, `evictionHard["nodefs.available"]="120%": eviction percentage threshold nodefs.available must be <= 100%: 120%`},
		{"negative percentage", map[string]string{"nodefs.available": "-1%"}, nil, "must be >= 0%"},
		{"bad percentage", map[string]string{"nodefs.available": "x%"}, nil, `invalid percentage "x%"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseEvictionHard(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var s []string
			for _, th := range got {
				s = append(s, th.String())
			}
			if diff := cmp.Diff(tc.want, s); diff != "" {
				t.Errorf("thresholds (-want +got):\n%s", diff)
			}
		})
	}
}
