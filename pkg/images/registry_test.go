package images

import (
	"errors"
	"testing"
)

func TestExists(t *testing.T) {
	msg := func(ref, reason string) string {
		return `failed to pull and unpack image "` + ref + `": failed to resolve reference "` + ref + `": ` + reason
	}
	const denied = "pull access denied, repository does not exist or may require authorization: server message: insufficient_scope: authorization failed"
	tests := []struct {
		name     string
		ref      string
		wantCode string // "" : the pull succeeds
		wantMsg  string
	}{
		// Rule 1: the reference must parse.
		{name: "malformed", ref: "Busybox", wantCode: CodeUnknown,
			wantMsg: `failed to parse image reference "Busybox": invalid reference format: repository name (library/Busybox) must be lowercase`},

		// Rule 2: the registry host must resolve, and something must listen.
		{name: "e2e invalid registry", ref: "invalid.registry.k8s.io/invalid/alpine:3.1", wantCode: CodeUnknown,
			wantMsg: msg("invalid.registry.k8s.io/invalid/alpine:3.1", `failed to do request: Head "https://invalid.registry.k8s.io/v2/invalid/alpine/manifests/3.1": dial tcp: lookup invalid.registry.k8s.io: no such host`)},
		{name: "reserved TLD .example", ref: "invalid.registry.example/app:1", wantCode: CodeUnknown,
			wantMsg: msg("invalid.registry.example/app:1", `failed to do request: Head "https://invalid.registry.example/v2/app/manifests/1": dial tcp: lookup invalid.registry.example: no such host`)},
		{name: "reserved TLD .test with a port", ref: "registry.test:5000/app", wantCode: CodeUnknown,
			wantMsg: msg("registry.test:5000/app:latest", `failed to do request: Head "https://registry.test:5000/v2/app/manifests/latest": dial tcp: lookup registry.test: no such host`)},
		{name: "under example.com", ref: "registry.example.com/api:2.4.1", wantCode: CodeUnknown,
			wantMsg: msg("registry.example.com/api:2.4.1", `failed to do request: Head "https://registry.example.com/v2/api/manifests/2.4.1": dial tcp: lookup registry.example.com: no such host`)},
		{name: "a host without a dot", ref: "myregistry:5000/app:1", wantCode: CodeUnknown,
			wantMsg: msg("myregistry:5000/app:1", `failed to do request: Head "https://myregistry:5000/v2/app/manifests/1": dial tcp: lookup myregistry: no such host`)},
		{name: "localhost: nothing listens", ref: "localhost:5000/app", wantCode: CodeUnknown,
			wantMsg: msg("localhost:5000/app:latest", `failed to do request: Head "https://localhost:5000/v2/app/manifests/latest": dial tcp 127.0.0.1:5000: connect: connection refused`)},
		{name: "an IP address: nothing listens", ref: "10.0.0.7/app:1", wantCode: CodeUnknown,
			wantMsg: msg("10.0.0.7/app:1", `failed to do request: Head "https://10.0.0.7/v2/app/manifests/1": dial tcp 10.0.0.7:443: connect: connection refused`)},
		{name: "an unknown host under docker.io", ref: "mirror.docker.io/library/busybox", wantCode: CodeUnknown,
			wantMsg: msg("mirror.docker.io/library/busybox:latest", `failed to do request: Head "https://mirror.docker.io/v2/library/busybox/manifests/latest": dial tcp: lookup mirror.docker.io: no such host`)},
		{name: "a registry nobody catalogued", ref: "quay.io/prometheus/node-exporter:v1.7.0"},
		{name: "a host with a dot nobody knows", ref: "registry.acme.io/team/app:3"},

		// Rule 3: private repositories refuse anonymous pulls.
		{name: "e2e private registry without secret", ref: "gcr.io/authenticated-image-pulling/alpine:3.7", wantCode: CodeUnknown,
			wantMsg: msg("gcr.io/authenticated-image-pulling/alpine:3.7", "unexpected status from HEAD request to https://gcr.io/v2/authenticated-image-pulling/alpine/manifests/3.7: 403 Forbidden")},
		{name: "AgnhostPrivate", ref: "gcr.io/k8s-authenticated-test/agnhost:2.6", wantCode: CodeUnknown,
			wantMsg: msg("gcr.io/k8s-authenticated-test/agnhost:2.6", "unexpected status from HEAD request to https://gcr.io/v2/k8s-authenticated-test/agnhost/manifests/2.6: 403 Forbidden")},
		{name: "a public gcr.io repository", ref: "gcr.io/distroless/static:nonroot"},

		// Rule 4: Docker Hub's one-component names are the official images.
		{name: "official", ref: "nginx"},
		{name: "official, not catalogued", ref: "postgres:16"},
		{name: "official, library/", ref: "library/redis:7"},
		{name: "not official", ref: "webserver", wantCode: CodeUnknown, wantMsg: msg("docker.io/library/webserver:latest", denied)},
		{name: "not official, library/", ref: "library/nonexistent", wantCode: CodeUnknown, wantMsg: msg("docker.io/library/nonexistent:latest", denied)},
		{name: "not official, fully qualified", ref: "docker.io/library/leaky:1.0", wantCode: CodeUnknown, wantMsg: msg("docker.io/library/leaky:1.0", denied)},
		{name: "a user's repository", ref: "bitnami/redis:7.2"},
		{name: "through Docker Hub's API host", ref: "registry-1.docker.io/library/busybox:1.36"},
		{name: "through Docker Hub's API host, not official", ref: "registry-1.docker.io/library/leaky:1.0", wantCode: CodeUnknown,
			wantMsg: msg("registry-1.docker.io/library/leaky:1.0", denied)},

		// Rule 5: a registry that lists its repositories has no others.
		{name: "e2e non-existing image", ref: "registry.k8s.io/invalid-image:invalid-tag", wantCode: CodeNotFound,
			wantMsg: msg("registry.k8s.io/invalid-image:invalid-tag", "registry.k8s.io/invalid-image:invalid-tag: not found")},
		{name: "a listed registry.k8s.io repository", ref: "registry.k8s.io/kube-proxy:v1.30.0"},
		{name: "an e2e image nobody catalogued", ref: "registry.k8s.io/e2e-test-images/ipc-utils:1.3"},
		{name: "the legacy k8s.gcr.io", ref: "k8s.gcr.io/pause:3.9"},

		// Rule 6: a catalogued repository has only its tags.
		{name: "busybox nonexistent tag", ref: "busybox:nonexistent-tag", wantCode: CodeNotFound,
			wantMsg: msg("docker.io/library/busybox:nonexistent-tag", "docker.io/library/busybox:nonexistent-tag: not found")},
		{name: "busybox 1.36", ref: "busybox:1.36"},
		{name: "busybox glibc variant", ref: "busybox:1.36.1-glibc"},
		{name: "agnhost 2.47", ref: "registry.k8s.io/e2e-test-images/agnhost:2.47"},
		{name: "agnhost without a 2.x tag", ref: "registry.k8s.io/e2e-test-images/agnhost:latest", wantCode: CodeNotFound,
			wantMsg: msg("registry.k8s.io/e2e-test-images/agnhost:latest", "registry.k8s.io/e2e-test-images/agnhost:latest: not found")},
		{name: "e2e nginx", ref: "registry.k8s.io/e2e-test-images/nginx:1.15-4"},
		{name: "e2e httpd", ref: "registry.k8s.io/e2e-test-images/httpd:2.4.38-4"},
		{name: "pause 3.9", ref: "registry.k8s.io/pause:3.9"},
		{name: "a digest always exists", ref: "busybox@sha256:" + hex64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Exists(tt.ref)
			if tt.wantCode == "" {
				if err != nil {
					t.Fatalf("Exists(%q) = %v, want nil", tt.ref, err)
				}
				return
			}
			var pe *PullError
			if !errors.As(err, &pe) {
				t.Fatalf("Exists(%q) = %v, want a *PullError", tt.ref, err)
			}
			if pe.Code != tt.wantCode || pe.Error() != tt.wantMsg {
				t.Errorf("Exists(%q) = %s %q\nwant      %s %q", tt.ref, pe.Code, pe.Error(), tt.wantCode, tt.wantMsg)
			}
		})
	}
}

func TestOfficial(t *testing.T) {
	for name, want := range map[string]bool{"nginx": true, "busybox": true, "python": true, "golang": true, "rocket.chat": true, "envoy": false, "scratch": false, "webserver": false} {
		if got := official(name); got != want {
			t.Errorf("official(%q) = %t, want %t", name, got, want)
		}
	}
	if n := len(theCatalogue.Official); n < 150 {
		t.Errorf("%d official images, want the whole list (about 170)", n)
	}
}

// TestExistsWithAuth: a private repository serves a pull with credentials, and a
// repository that does not exist stays missing with them.
func TestExistsWithAuth(t *testing.T) {
	if err := ExistsWithAuth("gcr.io/authenticated-image-pulling/alpine:3.7", true); err != nil {
		t.Errorf("with credentials: %v", err)
	}
	if err := ExistsWithAuth("gcr.io/authenticated-image-pulling/alpine:3.7", false); err == nil {
		t.Error("without credentials the private repository served")
	}
	if err := ExistsWithAuth("webserver", true); err == nil {
		t.Error("credentials made a non-existent Docker Hub image exist")
	}
}
