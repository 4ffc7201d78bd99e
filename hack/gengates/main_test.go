package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const source = `package features

import (
	genericfeatures "k8s.io/apiserver/pkg/features"
	"k8s.io/component-base/featuregate"
)

const (
	// EventedPLEG is a gate.
	EventedPLEG featuregate.Feature = "EventedPLEG"
	PodHostIPs  featuregate.Feature = "PodHostIPs"
	Old         featuregate.Feature = "OldGate"
)

var defaultKubernetesFeatureGates = map[featuregate.Feature]featuregate.FeatureSpec{
	EventedPLEG: {Default: false, PreRelease: featuregate.Alpha},
	PodHostIPs:  {Default: true, PreRelease: featuregate.GA, LockToDefault: true}, // remove in 1.32
	Old:         {Default: false, PreRelease: featuregate.Deprecated},
	genericfeatures.APIListChunking: {Default: true, PreRelease: featuregate.Beta},
}
`

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		src     string
		want    []Gate
		wantErr string
	}{
		{name: "gates of both packages, sorted", src: source, want: []Gate{
			{Name: "APIListChunking", Default: true, PreRelease: "BETA"},
			{Name: "EventedPLEG", PreRelease: "ALPHA"},
			{Name: "OldGate", PreRelease: "DEPRECATED"},
			{Name: "PodHostIPs", Default: true, LockToDefault: true},
		}},
		{name: "no table", src: "package features\n", wantErr: "no defaultKubernetesFeatureGates map"},
		{name: "unknown stage", src: strings.Replace(source, "featuregate.Alpha", "featuregate.Gamma", 1), wantErr: "gate EventedPLEG: unknown stage"},
		{name: "computed default", src: strings.Replace(source, "Default: false, PreRelease: featuregate.Alpha", "Default: on(), PreRelease: featuregate.Alpha", 1), wantErr: "gate EventedPLEG: Default is not a literal bool"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "kube_features.go")
			if err := os.WriteFile(path, []byte(tt.src), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := parse(path)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("gates = %+v\nwant %+v", got, tt.want)
			}
		})
	}
}
