package featuregate

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestFeatureGateMetrics(t *testing.T) {
	const header = `
# HELP kubernetes_feature_enabled [BETA] This metric records the data about the stage and enablement of a k8s feature.
# TYPE kubernetes_feature_enabled gauge
`
	tests := []struct {
		name  string
		specs map[Feature]FeatureSpec
		set   map[string]bool
		want  string
	}{
		{
			name: "stages and explicit values",
			specs: map[Feature]FeatureSpec{
				"TestAlpha":        {Default: false, PreRelease: Alpha},
				"TestAlphaEnabled": {Default: false, PreRelease: Alpha},
				"TestBeta":         {Default: true, PreRelease: Beta},
				"TestBetaDisabled": {Default: true, PreRelease: Alpha},
			},
			set: map[string]bool{"TestAlphaEnabled": true, "TestBetaDisabled": false},
			want: header + `
kubernetes_feature_enabled{name="AllAlpha",stage="ALPHA"} 0
kubernetes_feature_enabled{name="AllBeta",stage="BETA"} 0
kubernetes_feature_enabled{name="TestAlpha",stage="ALPHA"} 0
kubernetes_feature_enabled{name="TestAlphaEnabled",stage="ALPHA"} 1
kubernetes_feature_enabled{name="TestBeta",stage="BETA"} 1
kubernetes_feature_enabled{name="TestBetaDisabled",stage="ALPHA"} 0
`,
		},
		{
			name: "GA has an empty stage",
			specs: map[Feature]FeatureSpec{
				"Stable": {Default: true, PreRelease: GA},
				"Old":    {Default: false, PreRelease: Deprecated},
			},
			set: map[string]bool{"AllBeta": true},
			want: header + `
kubernetes_feature_enabled{name="AllAlpha",stage="ALPHA"} 0
kubernetes_feature_enabled{name="AllBeta",stage="BETA"} 1
kubernetes_feature_enabled{name="Old",stage="DEPRECATED"} 0
kubernetes_feature_enabled{name="Stable",stage=""} 1
`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newTestGate(t, tc.specs)
			if err := f.SetFromMap(tc.set); err != nil {
				t.Fatal(err)
			}
			reg := prometheus.NewRegistry()
			// Another gate registers the gauge first; later calls reuse it and overwrite
			// the series they share.
			if err := NewFeatureGate().AddMetrics(reg); err != nil {
				t.Fatalf("AddMetrics from another gate: %v", err)
			}
			for i := 0; i < 2; i++ {
				if err := f.AddMetrics(reg); err != nil {
					t.Fatalf("AddMetrics call %d: %v", i+1, err)
				}
			}
			if err := testutil.GatherAndCompare(reg, strings.NewReader(tc.want), "kubernetes_feature_enabled"); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestAddMetricsErrors(t *testing.T) {
	clash := prometheus.NewRegistry()
	clash.MustRegister(prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "kubernetes_feature_enabled", Help: "something else",
	}, []string{"name", "stage"}))
	tests := []struct {
		name    string
		reg     prometheus.Registerer
		wantErr string
	}{
		{name: "nil registerer", reg: nil, wantErr: "cannot add feature gate metrics: registerer is nil"},
		{name: "clashing metric", reg: clash, wantErr: "registering feature gate metrics: "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := NewFeatureGate().AddMetrics(tc.reg)
			if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
				t.Errorf("AddMetrics error = %v, want prefix %q", err, tc.wantErr)
			}
		})
	}
}
