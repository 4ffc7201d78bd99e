package fake

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/images"
	"github.com/minikubelet/minikubelet/pkg/vfs"
)

// TestPullFollowsRegistry: a pull succeeds only if the registry has the image, and fails
// with containerd's message and gRPC code otherwise, without recording the image.
func TestPullFollowsRegistry(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		image string
		want  string // the error's text; "" : the pull succeeds
	}{
		{image: "busybox:1.36"},
		{image: "nginx:latest"},
		{image: "registry.k8s.io/e2e-test-images/agnhost:2.47"},
		{image: "bitnami/redis:7.2"},
		{image: "busybox:nonexistent-tag",
			want: `rpc error: code = NotFound desc = failed to pull and unpack image "docker.io/library/busybox:nonexistent-tag": failed to resolve reference "docker.io/library/busybox:nonexistent-tag": docker.io/library/busybox:nonexistent-tag: not found`},
		{image: "webserver:latest",
			want: `rpc error: code = Unknown desc = failed to pull and unpack image "docker.io/library/webserver:latest": failed to resolve reference "docker.io/library/webserver:latest": pull access denied, repository does not exist or may require authorization: server message: insufficient_scope: authorization failed`},
		{image: "invalid.registry.k8s.io/invalid/alpine:3.1",
			want: `rpc error: code = Unknown desc = failed to pull and unpack image "invalid.registry.k8s.io/invalid/alpine:3.1": failed to resolve reference "invalid.registry.k8s.io/invalid/alpine:3.1": failed to do request: Head "https://invalid.registry.k8s.io/v2/invalid/alpine/manifests/3.1": dial tcp: lookup invalid.registry.k8s.io: no such host`},
		{image: "gcr.io/authenticated-image-pulling/alpine:3.7",
			want: `rpc error: code = Unknown desc = failed to pull and unpack image "gcr.io/authenticated-image-pulling/alpine:3.7": failed to resolve reference "gcr.io/authenticated-image-pulling/alpine:3.7": unexpected status from HEAD request to https://gcr.io/v2/authenticated-image-pulling/alpine/manifests/3.7: 403 Forbidden`},
	}
	for _, tt := range tests {
		t.Run(tt.image, func(t *testing.T) {
			r, _ := newRuntime(t, Config{})
			spec := cri.ImageSpec{Image: tt.image, Annotations: map[string]string{cri.ContainerNameLabel: "app"}}
			id, err := r.PullImage(ctx, spec, sandboxConfig("u1", nil))
			img, _ := r.ImageStatus(ctx, cri.ImageSpec{Image: tt.image})
			if tt.want == "" {
				if err != nil || id == "" || img == nil || img.ID != id {
					t.Fatalf("PullImage(%q) = %q, %v (status %+v); want it pulled", tt.image, id, err, img)
				}
				return
			}
			var re *RegistryError
			var pe *images.PullError
			if !errors.As(err, &re) || !errors.As(err, &pe) || err.Error() != tt.want {
				t.Fatalf("PullImage(%q) error:\n%v\nwant a *RegistryError:\n%s", tt.image, err, tt.want)
			}
			if img != nil {
				t.Errorf("a refused pull recorded the image: %+v", img)
			}
		})
	}
}

// TestPullScriptsAndRegistry: a scripted pullError still fails the pull with its reason
// (whatever the registry would say), and a refusal comes before the scripted pullDelay.
func TestPullScriptsAndRegistry(t *testing.T) {
	ctx := context.Background()
	t.Run("pullError wins over the registry", func(t *testing.T) {
		r, _ := newRuntime(t, Config{})
		spec := cri.ImageSpec{Image: "nonexistent:latest", Annotations: map[string]string{cri.ContainerNameLabel: "web"}}
		_, err := r.PullImage(ctx, spec, sandboxConfig("u1", annotate("web", "pullError=ErrRegistryUnavailable")))
		var pe *PullError
		if !errors.As(err, &pe) || pe.Reason != "ErrRegistryUnavailable" {
			t.Fatalf("PullImage error = %v, want the scripted PullError", err)
		}
	})
	t.Run("a refusal does not wait for the pullDelay", func(t *testing.T) {
		r, _ := newRuntime(t, Config{})
		spec := cri.ImageSpec{Image: "webserver:latest", Annotations: map[string]string{cri.ContainerNameLabel: "web"}}
		call := start(func(ctx context.Context) error {
			_, err := r.PullImage(ctx, spec, sandboxConfig("u1", annotate("web", "pullDelay=1m")))
			return err
		})
		var re *RegistryError
		if !call.Poll() || !errors.As(call.Err(), &re) {
			t.Fatalf("pull of a missing image: returned %t, err %v; want a RegistryError at once", call.Done(), call.Err())
		}
	})
	t.Run("an image that exists takes the pullDelay", func(t *testing.T) {
		r, clk := newRuntime(t, Config{})
		spec := cri.ImageSpec{Image: "busybox:1.36", Annotations: map[string]string{cri.ContainerNameLabel: "web"}}
		call := start(func(ctx context.Context) error {
			_, err := r.PullImage(ctx, spec, sandboxConfig("u1", annotate("web", "pullDelay=5s")))
			return err
		})
		if call.Poll() {
			t.Fatal("the pull returned before its delay")
		}
		run(t, r, clk, 5*time.Second)
		if !call.Poll() || call.Err() != nil {
			t.Fatalf("pull after 5s: returned %t, err %v", call.Done(), call.Err())
		}
	})
}

// TestImageConfig: a pulled image's config and tree come from the catalogue; an image it
// does not describe gets the generic userland and no entrypoint of its own.
func TestImageConfig(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		image   string
		want    images.Config
		known   bool
		program map[string]string // path -> the program its file runs
	}{
		{
			image: "nginx:1.25",
			want: images.Config{
				Entrypoint: []string{"/docker-entrypoint.sh"},
				Cmd:        []string{"nginx", "-g", "daemon off;"},
				Env:        []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "NGINX_VERSION=1.25.4", "NJS_VERSION=0.8.3", "PKG_RELEASE=1~bookworm"},
				StopSignal: "SIGQUIT",
			},
			known:   true,
			program: map[string]string{"/usr/sbin/nginx": "nginx", "/bin/sh": "dash"},
		},
		{
			image:   "registry.k8s.io/e2e-test-images/agnhost:2.47",
			want:    images.Config{Entrypoint: []string{"/agnhost"}, Cmd: []string{"pause"}, Env: []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}},
			known:   true,
			program: map[string]string{"/agnhost": "agnhost", "/agnhost-2": "agnhost", "/bin/sh": "sh"},
		},
		{
			image:   "registry.k8s.io/pause:3.9",
			want:    images.Config{Entrypoint: []string{"/pause"}, User: "65535:65535"},
			known:   true,
			program: map[string]string{"/pause": "pause"},
		},
		{
			image:   "bitnami/redis:7.2",
			want:    images.Config{Env: []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}},
			program: map[string]string{"/bin/sh": "sh"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.image, func(t *testing.T) {
			r, _ := newRuntime(t, Config{})
			id, err := r.PullImage(ctx, cri.ImageSpec{Image: tt.image}, nil)
			if err != nil {
				t.Fatal(err)
			}
			img, _ := r.ImageStatus(ctx, cri.ImageSpec{Image: id})
			cfg, tree, known := imageConfig(img)
			if diff := cmp.Diff(tt.want, cfg); diff != "" || known != tt.known {
				t.Errorf("imageConfig: known %t, want %t; config (-want +got):\n%s", known, tt.known, diff)
			}
			fs := vfs.NewView(vfs.New(nil), tree, false)
			for p, prog := range tt.program {
				if info, err := fs.Stat(p); err != nil || info.Program != prog {
					t.Errorf("%s: %+v, %v; want a file running %s", p, info, err, prog)
				}
			}
			// The config is the caller's: changing it leaves the catalogue as it was.
			if len(cfg.Env) > 0 {
				cfg.Env[0] = "PATH=/changed"
				if again, _, _ := imageConfig(img); again.Env[0] == "PATH=/changed" {
					t.Error("imageConfig shares its slices with the catalogue")
				}
			}
		})
	}
}

// TestLoadImage: an image loaded onto the node is present without a registry, but a pull
// of it still asks the registry.
func TestLoadImage(t *testing.T) {
	ctx := context.Background()
	r, _ := newRuntime(t, Config{})
	id := r.LoadImage("leaky:1.0")
	img, err := r.ImageStatus(ctx, cri.ImageSpec{Image: "leaky:1.0"})
	if err != nil || img == nil || img.ID != id {
		t.Fatalf("ImageStatus after LoadImage = %+v, %v; want the loaded image %s", img, err, id)
	}
	if again := r.LoadImage("leaky:1.0"); again != id {
		t.Errorf("loading twice gave %s then %s", id, again)
	}
	var re *RegistryError
	if _, err := r.PullImage(ctx, cri.ImageSpec{Image: "leaky:1.0"}, nil); !errors.As(err, &re) {
		t.Errorf("pulling a loaded image that no registry has: %v, want a RegistryError", err)
	}
	if imgs, _ := r.ListImages(ctx); len(imgs) != 1 {
		t.Errorf("ListImages = %+v, want the loaded image once", imgs)
	}
}
