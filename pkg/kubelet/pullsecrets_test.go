package kubelet

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/pkg/cri"
)

func TestDockerCredentials(t *testing.T) {
	tests := []struct {
		name string
		data map[string][]byte
		want []cri.AuthConfig
	}{
		{"dockerconfigjson with auth", map[string][]byte{v1.DockerConfigJsonKey: []byte(`{"auths":{"https://gcr.io":{"auth":"dXNlcjpwYXNz"}}}`)},
			[]cri.AuthConfig{{Username: "user", Password: "pass", Auth: "dXNlcjpwYXNz", ServerAddress: "https://gcr.io"}}},
		{"dockercfg with a user", map[string][]byte{v1.DockerConfigKey: []byte(`{"quay.io":{"username":"u","password":"p"}}`)},
			[]cri.AuthConfig{{Username: "u", Password: "p", ServerAddress: "quay.io"}}},
		{"nothing", map[string][]byte{"other": []byte("x")}, []cri.AuthConfig{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := dockerCredentials(&v1.Secret{Data: tt.data})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("credentials (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := dockerCredentials(&v1.Secret{Data: map[string][]byte{v1.DockerConfigJsonKey: []byte("{")}}); err == nil {
		t.Error("a malformed docker config parsed")
	}
}
