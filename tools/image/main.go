// Command image builds minikubelet's OCI image without Docker, as ko does: a static
// linux binary (CGO_ENABLED=0) as the only layer of an empty base, run as a non-root user,
// written as an OCI image layout and as a tarball of that layout, which containerd imports
// (`ctr images import`, `kind load image-archive`) and registries accept (`crane push`).
// It uses go-containerregistry rather than a hand-written tar and manifest writer: digests,
// media types and the layout's index are what every consumer checks.
//
//	go run . -binary ../../_output/image/minikubelet -tag ghcr.io/minikubelet/minikubelet:dev -o ../../_output/image
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

func main() {
	binary := flag.String("binary", "", "the static linux minikubelet binary")
	tag := flag.String("tag", "ghcr.io/minikubelet/minikubelet:dev", "the image's reference, recorded in the layout's index (org.opencontainers.image.ref.name)")
	out := flag.String("o", "", "output directory: oci/ (the layout) and minikubelet-oci.tar")
	arch := flag.String("arch", "amd64", "the binary's architecture")
	flag.Parse()
	if *binary == "" || *out == "" {
		fmt.Fprintln(os.Stderr, "image: -binary and -o are required")
		os.Exit(2)
	}
	if err := build(*binary, *tag, *out, *arch); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func build(binary, tag, out, arch string) error {
	data, err := os.ReadFile(binary)
	if err != nil {
		return err
	}
	// One layer: /minikubelet, and the directories a non-root user may write to.
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0)
	for _, d := range []string{"tmp/", "var/", "var/lib/", "var/lib/minikubelet/"} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: 0o1777, ModTime: epoch}); err != nil {
			return err
		}
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "minikubelet", Mode: 0o755, Size: int64(len(data)), ModTime: epoch}); err != nil {
		return err
	}
	if _, err := tw.Write(data); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil },
		tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return err
	}
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), layer)
	if err != nil {
		return err
	}
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	cfg, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", arch
	cfg.Created = v1.Time{Time: epoch}
	cfg.Config.Entrypoint = []string{"/minikubelet"}
	cfg.Config.User = "65532:65532"
	cfg.Config.WorkingDir = "/var/lib/minikubelet"
	cfg.Config.Labels = map[string]string{"org.opencontainers.image.source": "https://github.com/minikubelet/minikubelet"}
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return err
	}
	dir := filepath.Join(out, "oci")
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": tag})); err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	tarPath := filepath.Join(out, "minikubelet-oci.tar")
	if err := tarDir(dir, tarPath); err != nil {
		return err
	}
	fmt.Printf("%s %s\n  layout:  %s\n  tarball: %s\n", tag, digest, dir, tarPath)
	return nil
}

// tarDir writes the layout directory as a tarball (the OCI image layout's archive form).
func tarDir(dir, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		info, err := d.Info()
		if err != nil {
			return err
		}
		hdr, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return err
		}
		hdr.Name, hdr.ModTime = filepath.ToSlash(rel), time.Unix(0, 0)
		if d.IsDir() {
			hdr.Name += "/"
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		_, err = tw.Write(data)
		return err
	})
	if err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return f.Close()
}
