package localcluster

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/minikubelet/minikubelet/pkg/release"
)

func TestValidName(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"minikubelet", true},
		{"ci-2", true},
		{"", false},
		{"Big", false},
		{"-x", false},
		{"x-", false},
		{"a/b", false},
		{strings.Repeat("a", 41), false},
	}
	for _, tt := range tests {
		if err := validName(tt.name); (err == nil) != tt.ok {
			t.Errorf("validName(%q) = %v, want ok %v", tt.name, err, tt.ok)
		}
	}
}

// TestFindBinaries: --bin-dir first, then PATH, then ./_output/bin; what is missing is named
// with what to install. With a release wanted, ./_output/<release>/bin is searched too and
// a program of another release is passed over.
func TestFindBinaries(t *testing.T) {
	exe := func(dir, name, version string) string {
		t.Helper()
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\necho 'Kubernetes "+version+"'\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	work := t.TempDir()
	t.Chdir(work)
	binDir, pathDir, output := filepath.Join(work, "bin"), filepath.Join(work, "path"), filepath.Join(work, "_output", "bin")
	older := filepath.Join(work, "_output", "v1.35", "bin")
	t.Setenv("PATH", pathDir+":/usr/bin:/bin")
	inBin := exe(binDir, "kube-apiserver", "v1.37.2")
	exe(pathDir, "kube-apiserver", "v1.37.2")
	inPath := exe(pathDir, "kube-scheduler", "v1.37.2")
	exe(output, "kube-scheduler", "v1.37.2")
	inOutput := exe(output, "kube-controller-manager", "v1.37.2")
	etcd := exe(pathDir, "etcd", "")
	var older35 []string
	for _, name := range controlPlanePrograms {
		older35 = append(older35, exe(older, name, "v1.35.4"))
	}
	unstamped, mixed := filepath.Join(work, "unstamped"), filepath.Join(work, "mixed")
	for _, name := range controlPlanePrograms {
		exe(unstamped, name, "v0.0.0-master+$Format:%H$")
	}
	exe(mixed, "kube-apiserver", "v1.36.3")
	exe(mixed, "kube-controller-manager", "v1.37.2")
	exe(mixed, "kube-scheduler", "v1.37.2")
	v135, _ := release.Parse("1.35")
	v136, _ := release.Parse("1.36")

	tests := []struct {
		name    string
		binDir  string
		want    release.Release
		got     map[string]string
		version string
		err     []string
	}{
		{name: "any release", binDir: binDir, version: "v1.37.2",
			got: map[string]string{"kube-apiserver": inBin, "kube-scheduler": inPath, "kube-controller-manager": inOutput, "etcd": etcd}},
		{name: "the newest", binDir: binDir, want: release.Newest(), version: "v1.37.2",
			got: map[string]string{"kube-apiserver": inBin, "kube-scheduler": inPath, "kube-controller-manager": inOutput, "etcd": etcd}},
		{name: "an older release from its own directory", binDir: binDir, want: v135, version: "v1.35.4",
			got: map[string]string{"kube-apiserver": older35[0], "kube-controller-manager": older35[1], "kube-scheduler": older35[2], "etcd": etcd}},
		{name: "an unstamped build is of no release", binDir: unstamped, want: release.Newest(), version: "v1.37.2",
			got: map[string]string{"kube-apiserver": filepath.Join(pathDir, "kube-apiserver"), "kube-controller-manager": inOutput}},
		{name: "an unstamped build when none is asked for", binDir: unstamped, version: "v0.0.0-master+$Format:%H$",
			got: map[string]string{"kube-apiserver": filepath.Join(unstamped, "kube-apiserver"), "etcd": etcd}},
		{name: "programs of two releases", binDir: mixed, err: []string{
			"the control plane's programs are of different releases: kube-apiserver v1.36.3 (" + filepath.Join(mixed, "kube-apiserver") + "), kube-controller-manager v1.37.2"}},
		{name: "a release not built", binDir: binDir, want: v136, err: []string{
			"kube-apiserver of Kubernetes 1.36: not in --bin-dir, PATH, ./_output/v1.36/bin or ./_output/bin; build it with `make controlplane KUBE_VERSION=v1.36` or pass --bin-dir",
			"of other releases: " + inBin + " is v1.37.2;"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, version, err := findBinaries(context.Background(), tt.binDir, tt.want)
			if tt.err != nil {
				for _, w := range tt.err {
					if err == nil || !strings.Contains(err.Error(), w) {
						t.Errorf("error %v, want it to contain %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for name, p := range tt.got {
				if got[name] != p {
					t.Errorf("%s: %s, want %s", name, got[name], p)
				}
			}
			if version != tt.version {
				t.Errorf("version %q, want %q", version, tt.version)
			}
		})
	}

	t.Setenv("PATH", t.TempDir())
	_, _, err := findBinaries(context.Background(), "", release.Release{})
	if err == nil || !strings.Contains(err.Error(), "apt-get install etcd-server") || strings.Contains(err.Error(), "kube-controller-manager:") {
		t.Errorf("without etcd: %v, want etcd named with its package, and the programs of ./_output/bin found", err)
	}
}

// TestNodeRelease: the nodes are the release asked for, else the control plane's, never
// newer than it.
func TestNodeRelease(t *testing.T) {
	tests := []struct {
		cp, want, nodes, note, err string
	}{
		{cp: "v1.37.2", nodes: "1.37"},
		{cp: "v1.35.4", nodes: "1.35"},
		{cp: "v1.37.2", want: "1.34", nodes: "1.34"},
		{cp: "v1.38.0", nodes: "1.37", note: "kubelets may be older than the API server"},
		{cp: "v0.0.0-master+$Format:%H$", nodes: "1.37", note: "reports no release"},
		{cp: "v1.33.7", err: "control plane v1.33.7: a kubelet may not be newer than its API server, and minikubelet emulates kubelets 1.34 to 1.37"},
	}
	for _, tt := range tests {
		var want release.Release
		if tt.want != "" {
			want, _ = release.Parse(tt.want)
		}
		r, note, err := nodeRelease(tt.cp, want)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: %v, want %q", tt.cp, err, tt.err)
			}
			continue
		}
		if err != nil || r.String() != tt.nodes || !strings.Contains(note, tt.note) || (tt.note == "") != (note == "") {
			t.Errorf("%s want %q: %s %q %v; want %s %q", tt.cp, tt.want, r, note, err, tt.nodes, tt.note)
		}
	}
}

func TestParseKubernetesVersion(t *testing.T) {
	for _, tt := range []struct{ in, out, err string }{
		{in: "v1.35", out: "1.35"},
		{in: "1.36", out: "1.36"},
		{in: "v1.34.4", out: "1.34"},
		{in: "v1.33", err: `invalid --kubernetes-version "v1.33": "1.33": the simulator emulates the kubelet releases 1.34, 1.35, 1.36 and 1.37`},
		{in: "latest", err: `invalid --kubernetes-version "latest": want a release as v1.35 or v1.35.4`},
	} {
		r, err := parseKubernetesVersion(tt.in)
		if (tt.err == "") != (err == nil) || (err != nil && !strings.HasPrefix(err.Error(), tt.err)) || (err == nil && r.String() != tt.out) {
			t.Errorf("%s: %s, %v; want %s, %q", tt.in, r, err, tt.out, tt.err)
		}
	}
}

func TestFreePortsExcept(t *testing.T) {
	ports, err := freePorts(3, 0)
	if err != nil {
		t.Fatal(err)
	}
	again, err := freePorts(5, ports[0])
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range again {
		if p == ports[0] || seen[p] {
			t.Errorf("ports %v: %d given twice or the excluded one", again, p)
		}
		seen[p] = true
	}
	if len(again) != 5 {
		t.Errorf("%d ports, want 5", len(again))
	}
}
