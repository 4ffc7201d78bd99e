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
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

	// deploy/ as shipped, and an overlay that makes the nodes kubelets of 1.35: every flag
	// parses (--version stops before the node starts), and the release is the setting's.
	deploy, err := filepath.Abs("../../deploy")
	if err != nil {
		t.Fatal(err)
	}
	overlay := t.TempDir()
	base, err := filepath.Rel(overlay, deploy) // kustomize takes a base by a relative path only
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte("resources:\n- "+base+"\n"+
		"configMapGenerator:\n- name: minikubelet-settings\n  namespace: minikubelet\n  behavior: merge\n  literals:\n  - emulated-version=1.35\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ dir, want string }{
		{deploy, "kubelet compatibility: v1.37.2\n"},
		{overlay, "kubelet compatibility: v1.35.4 (--emulated-version 1.35)\n"},
	} {
		rendered, err := exec.Command(filepath.Join(binDir(t), "kubectl"), "kustomize", tt.dir).CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl kustomize %s: %v\n%s", tt.dir, err, rendered)
		}
		args := renderedArgs(t, rendered)
		if out, err := exec.Command(bin, append(args, "--version")...).CombinedOutput(); err != nil || !strings.Contains(string(out), tt.want) {
			t.Errorf("the image's binary with %s's command line %v: %v\n%s\nwant %q", tt.dir, args, err, out, tt.want)
		}
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

// renderedArgs returns the arguments of the Deployment a kustomization renders, with the
// $(VAR) references to its ConfigMaps' keys expanded as the kubelet expands them.
func renderedArgs(t *testing.T, rendered []byte) []string {
	t.Helper()
	var d *appsv1.Deployment
	maps := map[string]map[string]string{}
	for _, doc := range strings.Split(string(rendered), "\n---\n") {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatal(err)
		}
		switch meta.Kind {
		case "Deployment":
			d = new(appsv1.Deployment)
			if err := yaml.Unmarshal([]byte(doc), d); err != nil {
				t.Fatal(err)
			}
		case "ConfigMap":
			var cm v1.ConfigMap
			if err := yaml.Unmarshal([]byte(doc), &cm); err != nil {
				t.Fatal(err)
			}
			maps[cm.Name] = cm.Data
		}
	}
	if d == nil || len(d.Spec.Template.Spec.Containers[0].Args) == 0 {
		t.Fatalf("no Deployment with arguments rendered:\n%s", rendered)
	}
	c := d.Spec.Template.Spec.Containers[0]
	var pairs []string
	for _, e := range c.Env {
		if ref := e.ValueFrom; ref != nil && ref.ConfigMapKeyRef != nil {
			v, ok := maps[ref.ConfigMapKeyRef.Name][ref.ConfigMapKeyRef.Key]
			if !ok {
				t.Fatalf("env %s: no key %s in a ConfigMap %s rendered", e.Name, ref.ConfigMapKeyRef.Key, ref.ConfigMapKeyRef.Name)
			}
			pairs = append(pairs, "$("+e.Name+")", v)
		}
	}
	args := make([]string, len(c.Args))
	for i, a := range c.Args {
		args[i] = strings.NewReplacer(pairs...).Replace(a)
	}
	return args
}
