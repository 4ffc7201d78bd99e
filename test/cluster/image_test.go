package cluster

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"
)

// imageTar is the image tarball `make image` writes; `make e2e-cluster` builds it and names
// it in MINIKUBELET_IMAGE_TAR.
func imageTar(t *testing.T) string {
	t.Helper()
	path := os.Getenv("MINIKUBELET_IMAGE_TAR")
	if path == "" {
		t.Skip("MINIKUBELET_IMAGE_TAR is not set: run make image, or make e2e-cluster, which builds it")
	}
	return path
}

// ociBlobs reads an OCI image layout tarball into its files by name.
func ociBlobs(t *testing.T, path string) map[string][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	files := map[string][]byte{}
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if hdr.Typeflag == tar.TypeReg {
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			files[hdr.Name] = data
		}
	}
	return files
}

// binaryFromImage takes /minikubelet out of the image's layer, following the layout's
// index, the manifest and its layers as a runtime does, and checks the image's config.
func binaryFromImage(t *testing.T, path string) string {
	t.Helper()
	files := ociBlobs(t, path)
	blob := func(digest string) []byte {
		data, ok := files["blobs/"+strings.Replace(digest, ":", "/", 1)]
		if !ok {
			t.Fatalf("the image has no blob %s", digest)
		}
		return data
	}
	type descriptor struct {
		MediaType   string            `json:"mediaType"`
		Digest      string            `json:"digest"`
		Annotations map[string]string `json:"annotations"`
	}
	var index struct{ Manifests []descriptor }
	if err := json.Unmarshal(files["index.json"], &index); err != nil || len(index.Manifests) != 1 {
		t.Fatalf("index.json: %v (%d manifests)", err, len(index.Manifests))
	}
	if index.Manifests[0].Annotations["org.opencontainers.image.ref.name"] == "" {
		t.Error("the image's index names no reference")
	}
	var manifest struct {
		Config descriptor
		Layers []descriptor
	}
	if err := json.Unmarshal(blob(index.Manifests[0].Digest), &manifest); err != nil || len(manifest.Layers) != 1 {
		t.Fatalf("manifest: %v (%d layers, want 1: a static binary on an empty base)", err, len(manifest.Layers))
	}
	var config struct {
		OS, Architecture string
		Config           struct {
			Entrypoint []string
			User       string
		}
	}
	if err := json.Unmarshal(blob(manifest.Config.Digest), &config); err != nil {
		t.Fatal(err)
	}
	if config.OS != "linux" || strings.Join(config.Config.Entrypoint, " ") != "/minikubelet" || config.Config.User != "65532:65532" {
		t.Errorf("image config %+v: want linux, entrypoint /minikubelet, a non-root user", config)
	}
	gz, err := gzip.NewReader(strings.NewReader(string(blob(manifest.Layers[0].Digest))))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	for {
		hdr, err := tr.Next()
		if err != nil {
			t.Fatalf("the layer has no minikubelet: %v", err)
		}
		if hdr.Name == "minikubelet" {
			out := filepath.Join(t.TempDir(), "minikubelet")
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(out, data, 0o755); err != nil {
				t.Fatal(err)
			}
			return out
		}
	}
}

// TestImageAndDeploy: the binary taken out of the image runs, and takes the command line
// deploy/ gives it; deploy/ applies to a real v1.37 API server (server-side dry run) and its
// pods meet the restricted Pod Security Standard its namespace enforces.
func TestImageAndDeploy(t *testing.T) {
	bin := binaryFromImage(t, imageTar(t))
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "kubelet compatibility: v1.37.2") {
		t.Fatalf("minikubelet version from the image: %v\n%s", err, out)
	}

	rendered, err := exec.Command(filepath.Join(binDir(t), "kubectl"), "kustomize", "../../deploy").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl kustomize deploy: %v\n%s", err, rendered)
	}
	var args []string
	for _, doc := range strings.Split(string(rendered), "\n---\n") {
		var d appsv1.Deployment
		if err := yaml.Unmarshal([]byte(doc), &d); err == nil && d.Kind == "Deployment" {
			args = d.Spec.Template.Spec.Containers[0].Args
		}
	}
	if len(args) == 0 {
		t.Fatalf("deploy/ renders no Deployment with arguments:\n%s", rendered)
	}
	// Every flag parses (--version stops before the node starts).
	if out, err := exec.Command(bin, append(args, "--version")...).CombinedOutput(); err != nil {
		t.Errorf("the image's binary refuses deploy/'s command line %v: %v\n%s", args, err, out)
	}

	cp := startControlPlane(t)
	if out, err := kubectl(t, cp, "", "apply", "-f", "../../deploy/namespace.yaml"); err != nil {
		t.Fatalf("create the namespace: %v\n%s", err, out)
	}
	out2, err := kubectl(t, cp, "", "apply", "-k", "../../deploy", "--dry-run=server")
	if err != nil {
		t.Fatalf("kubectl apply -k deploy --dry-run=server: %v\n%s", err, out2)
	}
	if !strings.Contains(out2, "deployment.apps/hollow-nodes created (server dry run)") || strings.Contains(out2, "would violate PodSecurity") {
		t.Errorf("server-side dry run of deploy/:\n%s", out2)
	}
}
