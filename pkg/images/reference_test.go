package images

import (
	"strings"
	"testing"
)

const hex64 = "7b3ccabffc97de872a30dfd234fd972a66d247c8cfc69b0550f276481852627c"

func TestParseReference(t *testing.T) {
	tests := []struct {
		ref     string
		want    string // Reference.String()
		wantErr string
	}{
		{ref: "busybox", want: "docker.io/library/busybox:latest"},
		{ref: "busybox:1.36", want: "docker.io/library/busybox:1.36"},
		{ref: "docker.io/busybox", want: "docker.io/library/busybox:latest"},
		{ref: "library/busybox", want: "docker.io/library/busybox:latest"},
		{ref: "docker.io/library/busybox:1.36.1", want: "docker.io/library/busybox:1.36.1"},
		{ref: "index.docker.io/library/busybox", want: "docker.io/library/busybox:latest"},
		{ref: "bitnami/redis:7.2", want: "docker.io/bitnami/redis:7.2"},
		{ref: "registry.k8s.io/e2e-test-images/agnhost:2.47", want: "registry.k8s.io/e2e-test-images/agnhost:2.47"},
		{ref: "registry.k8s.io/pause", want: "registry.k8s.io/pause:latest"},
		{ref: "localhost/app", want: "localhost/app:latest"},
		{ref: "localhost:5000/team/app:v1", want: "localhost:5000/team/app:v1"},
		{ref: "[::1]:5000/app", want: "[::1]:5000/app:latest"},
		{ref: "busybox@sha256:" + hex64, want: "docker.io/library/busybox@sha256:" + hex64},
		// A tagged and digested reference keeps only its digest, as ParseDockerRef does.
		{ref: "busybox:1.36@sha256:" + hex64, want: "docker.io/library/busybox@sha256:" + hex64},
		{ref: "Busybox", wantErr: "invalid reference format: repository name (library/Busybox) must be lowercase"},
		{ref: "team/App:1", wantErr: "invalid reference format: repository name (team/App) must be lowercase"},
		{ref: "", wantErr: "invalid reference format"},
		{ref: "busybox:", wantErr: "invalid reference format"},
		{ref: "busy box", wantErr: "invalid reference format"},
		{ref: "busybox@sha256:abc", wantErr: "invalid reference format"},
		{ref: "busybox@sha256:" + hex64[:40], wantErr: "invalid checksum digest length"},
		{ref: "busybox@md5:" + hex64[:32], wantErr: "unsupported digest algorithm"},
		{ref: hex64, wantErr: "invalid repository name (" + hex64 + "), cannot specify 64-byte hexadecimal strings"},
		{ref: "registry.k8s.io/" + strings.Repeat("a", 250), wantErr: "repository name must not be more than 255 characters"},
	}
	for _, tt := range tests {
		t.Run(tt.ref, func(t *testing.T) {
			got, err := ParseReference(tt.ref)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("ParseReference(%q) = %v, %v; want error %q", tt.ref, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got.String() != tt.want {
				t.Fatalf("ParseReference(%q) = %q, %v; want %q", tt.ref, got.String(), err, tt.want)
			}
		})
	}
}
