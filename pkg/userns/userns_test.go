package userns

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/vfs"
)

const podsDir = "/var/lib/kubelet/pods"

func podDir(uid types.UID) string { return podsDir + "/" + string(uid) }

func supported(string) (bool, error) { return true, nil }

// newManager is a manager over fs (a new one if nil) whose pods' directories exist.
func newManager(t *testing.T, fs *vfs.View, cfg Config, uids ...types.UID) (*Manager, *vfs.View) {
	t.Helper()
	if fs == nil {
		fs = vfs.New(nil)
	}
	for _, uid := range uids {
		if err := fs.MkdirAll(podDir(uid), 0o750, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	cfg.NodeFS, cfg.PodDir, cfg.PodsDir = fs, podDir, podsDir
	if cfg.Supports == nil {
		cfg.Supports = supported
	}
	if cfg.MaxPods == 0 {
		cfg.MaxPods = 110
	}
	m, err := New(klog.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m, fs
}

func userPod(uid types.UID, hostUsers *bool) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: uid, Name: string(uid)}, Spec: v1.PodSpec{HostUsers: hostUsers}}
}

var no, yes = new(bool), func() *bool { b := true; return &b }()

// TestNewChecksTheRanges: upstream's MakeUserNsManager's checks and messages.
func TestNewChecksTheRanges(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{name: "defaults: every ID but the first range", cfg: Config{MaxPods: 110}},
		{name: "a length not a multiple of 65536", cfg: Config{IDsPerPod: 100000, MaxPods: 110}, wantErr: "kubelet user namespace length 100000 is not a multiple of 65536"},
		{name: "a first ID off the unit", cfg: Config{FirstID: 70000, Length: 65536 * 200, MaxPods: 110}, wantErr: "kubelet user assigned ID 70000 is not a multiple of 65536"},
		{name: "the node's own range", cfg: Config{FirstID: 0, Length: 65536 * 200, MaxPods: 110}, wantErr: "kubelet user assigned ID 0 must be greater or equal to 65536"},
		{name: "a length off the unit", cfg: Config{FirstID: 65536, Length: 65536*200 + 1, MaxPods: 110}, wantErr: "kubelet user assigned IDs length 13107201 is not a multiple of 65536"},
		{name: "not enough for maxPods", cfg: Config{FirstID: 65536, Length: 65536 * 100, MaxPods: 110}, wantErr: "kubelet user assigned IDs are not enough to support 110 pods"},
		{name: "idsPerPod 131072 halves the ranges", cfg: Config{IDsPerPod: 131072, MaxPods: 40000}, wantErr: "kubelet user assigned IDs are not enough to support 40000 pods"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.NodeFS, tt.cfg.PodDir, tt.cfg.Supports = vfs.New(nil), podDir, supported
			_, err := New(klog.Background(), tt.cfg)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || err.Error() != tt.wantErr) {
				t.Errorf("New: %v, want %q", err, tt.wantErr)
			}
		})
	}
}

// TestUserNamespace: pods in the node's namespace get none; a pod with hostUsers: false a
// range of its own, within the kubelet's IDs, mapping 0 for 65536 IDs alike for UIDs and
// GIDs, the same one every time it is asked (from its directory's file), another than any
// other pod's; without a free range, upstream's error.
func TestUserNamespace(t *testing.T) {
	lg := klog.Background()
	m, fs := newManager(t, nil, Config{}, "a", "b", "host")
	for _, p := range []*v1.Pod{userPod("host", nil), userPod("host", yes)} {
		if ns, err := m.UserNamespace(lg, p, ""); ns != nil || err != nil {
			t.Errorf("hostUsers %v: %+v, %v; want none", p.Spec.HostUsers, ns, err)
		}
	}
	a, err := m.UserNamespace(lg, userPod("a", no), "")
	if err != nil {
		t.Fatal(err)
	}
	if a.Mode != cri.NamespaceModePod || len(a.UIDs) != 1 || len(a.GIDs) != 1 || a.UIDs[0] != a.GIDs[0] {
		t.Fatalf("namespace %+v, want one mapping, the same for UIDs and GIDs", a)
	}
	got := a.UIDs[0]
	if got.ContainerID != 0 || got.Length != 65536 || got.HostID%65536 != 0 || got.HostID < 65536 {
		t.Errorf("mapping %+v: want 0 mapped for 65536 IDs from a multiple of 65536 past the node's own", got)
	}
	file, _ := fs.ReadFile(path.Join(podDir("a"), MappingsFile))
	if want := fmt.Sprintf(`{"uidMappings":[{"hostId":%d,"containerId":0,"length":65536}],"gidMappings":[{"hostId":%d,"containerId":0,"length":65536}]}`, got.HostID, got.HostID); string(file) != want {
		t.Errorf("mappings file %s, want %s", file, want)
	}
	again, err := m.UserNamespace(lg, userPod("a", no), "")
	if err != nil || again.UIDs[0] != got {
		t.Errorf("asked again: %+v, %v; want %+v", again, err, got)
	}
	b, err := m.UserNamespace(lg, userPod("b", no), "")
	if err != nil || b.UIDs[0].HostID == got.HostID {
		t.Errorf("another pod: %+v, %v; want another range than %d", b, err, got.HostID)
	}
	if m.InUse() != 2 {
		t.Errorf("%d ranges in use, want 2", m.InUse())
	}

	t.Run("no free range", func(t *testing.T) {
		m, _ := newManager(t, nil, Config{FirstID: 65536, Length: 2 * 65536, MaxPods: 2}, "a", "b", "c")
		for _, uid := range []types.UID{"a", "b"} {
			if _, err := m.UserNamespace(lg, userPod(uid, no), ""); err != nil {
				t.Fatal(err)
			}
		}
		_, err := m.UserNamespace(lg, userPod("c", no), "")
		if err == nil || err.Error() != "create user namespace: could not find an empty slot to allocate a user namespace" || !errors.Is(err, ErrNoRange) {
			t.Fatalf("third pod: %v, want no range", err)
		}
		m.Release(lg, "a")
		if _, err := m.UserNamespace(lg, userPod("c", no), ""); err != nil {
			t.Errorf("after a release: %v", err)
		}
	})
	t.Run("a runtime without user namespaces", func(t *testing.T) {
		m, _ := newManager(t, nil, Config{Supports: func(string) (bool, error) { return false, nil }}, "a")
		_, err := m.UserNamespace(lg, userPod("a", no), "")
		if err == nil || err.Error() != "can't set `spec.hostUsers: false`, runtime does not support user namespaces" {
			t.Errorf("error %v", err)
		}
		m2, _ := newManager(t, nil, Config{Supports: func(string) (bool, error) { return false, errors.New(`the handler "kata" is not known`) }}, "a")
		_, err = m2.UserNamespace(lg, userPod("a", no), "kata")
		if err == nil || err.Error() != "can't set `spec.hostUsers: false`, RuntimeClass handler \"kata\" does not support user namespaces: the handler \"kata\" is not known" {
			t.Errorf("error %v", err)
		}
	})
}

// TestRangesSurviveARestart: a new manager over the same node reads the pods' files (a
// kubelet restart), gives each pod its range again and no other pod that range; a file it
// did not write is refused with upstream's messages.
func TestRangesSurviveARestart(t *testing.T) {
	lg := klog.Background()
	m, fs := newManager(t, nil, Config{FirstID: 65536, Length: 2 * 65536, MaxPods: 2}, "a", "b")
	a, err := m.UserNamespace(lg, userPod("a", no), "")
	if err != nil {
		t.Fatal(err)
	}
	restarted, _ := newManager(t, fs, Config{FirstID: 65536, Length: 2 * 65536, MaxPods: 2})
	if restarted.InUse() != 1 {
		t.Fatalf("%d ranges recorded after a restart, want 1", restarted.InUse())
	}
	if again, err := restarted.UserNamespace(lg, userPod("a", no), ""); err != nil || again.UIDs[0] != a.UIDs[0] {
		t.Errorf("pod a after a restart: %+v, %v; want %+v", again, err, a.UIDs[0])
	}
	b, err := restarted.UserNamespace(lg, userPod("b", no), "")
	if err != nil || b.UIDs[0].HostID == a.UIDs[0].HostID {
		t.Errorf("pod b after a restart: %+v, %v; want the other range", b, err)
	}

	for _, tt := range []struct{ name, file, wantErr string }{
		{"not JSON", "{", "invalid user namespace mappings file: unexpected end of JSON input"},
		{"two mappings", `{"uidMappings":[{"hostId":65536,"containerId":0,"length":65536},{"hostId":131072,"containerId":65536,"length":65536}],"gidMappings":[]}`, "invalid user namespace configuration: no more than one mapping allowed."},
		{"root not mapped", `{"uidMappings":[{"hostId":65536,"containerId":1,"length":65536}],"gidMappings":[{"hostId":65536,"containerId":1,"length":65536}]}`, "invalid user namespace configuration: UID 0 must be mapped"},
		{"another length", `{"uidMappings":[{"hostId":65536,"containerId":0,"length":1000}],"gidMappings":[{"hostId":65536,"containerId":0,"length":1000}]}`, "wrong user namespace length 1000"},
		{"out of the kubelet's IDs", `{"uidMappings":[{"hostId":655360,"containerId":0,"length":65536}],"gidMappings":[{"hostId":655360,"containerId":0,"length":65536}]}`, "id 655360 is out of range"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m, fs := newManager(t, nil, Config{FirstID: 65536, Length: 2 * 65536, MaxPods: 2}, "x")
			if err := fs.WriteFile(path.Join(podDir("x"), MappingsFile), []byte(tt.file), 0o644, false, 0, 0); err != nil {
				t.Fatal(err)
			}
			if _, err := m.UserNamespace(lg, userPod("x", no), ""); err == nil || err.Error() != "user namespace: "+tt.wantErr {
				t.Errorf("a pod's bad file: %v, want %q", err, "user namespace: "+tt.wantErr)
			}
			cfg := Config{FirstID: 65536, Length: 2 * 65536, MaxPods: 2, NodeFS: fs, PodDir: podDir, PodsDir: podsDir, Supports: supported}
			if _, err := New(lg, cfg); err == nil || !strings.Contains(err.Error(), `record pod mappings for existing pod "x": `+tt.wantErr) {
				t.Errorf("New over a bad file: %v", err)
			}
		})
	}
}

// TestReleaseAndCleanup: a terminated pod's range goes back with its file; housekeeping
// releases the ranges of pods the node no longer has, and only those.
func TestReleaseAndCleanup(t *testing.T) {
	lg := klog.Background()
	m, fs := newManager(t, nil, Config{}, "a", "b", "c")
	for _, uid := range []types.UID{"a", "b", "c"} {
		if _, err := m.UserNamespace(lg, userPod(uid, no), ""); err != nil {
			t.Fatal(err)
		}
	}
	m.Release(lg, "a")
	if _, err := fs.Stat(path.Join(podDir("a"), MappingsFile)); err == nil {
		t.Error("a released pod's file is still there")
	}
	m.Release(lg, "a") // twice: nothing
	m.CleanupOrphans(lg, func(uid types.UID) bool { return uid == "b" })
	if m.InUse() != 1 {
		t.Errorf("%d in use after cleanup, want b's only", m.InUse())
	}
	if _, ok := m.byPod["b"]; !ok {
		t.Error("b's range was released")
	}
	m.Release(lg, "b")
	if m.used != nil || m.byPod != nil {
		t.Error("the last pod gone, the manager still holds its tables")
	}
}
