package localcluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
// with what to install.
func TestFindBinaries(t *testing.T) {
	exe := func(dir, name string) string {
		t.Helper()
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	work := t.TempDir()
	t.Chdir(work)
	binDir, pathDir, output := filepath.Join(work, "bin"), filepath.Join(work, "path"), filepath.Join(work, "_output", "bin")
	t.Setenv("PATH", pathDir)
	inBin := exe(binDir, "kube-apiserver")
	exe(pathDir, "kube-apiserver")
	inPath := exe(pathDir, "kube-scheduler")
	exe(output, "kube-scheduler")
	inOutput := exe(output, "kube-controller-manager")
	etcd := exe(pathDir, "etcd")

	got, err := findBinaries(binDir)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"kube-apiserver": inBin, "kube-scheduler": inPath, "kube-controller-manager": inOutput, "etcd": etcd}
	for name, p := range want {
		if got[name] != p {
			t.Errorf("%s: %s, want %s", name, got[name], p)
		}
	}

	t.Setenv("PATH", t.TempDir())
	_, err = findBinaries("")
	if err == nil || !strings.Contains(err.Error(), "apt-get install etcd-server") || strings.Contains(err.Error(), "kube-controller-manager:") {
		t.Errorf("without etcd: %v, want etcd named with its package, and the programs of ./_output/bin found", err)
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
