package fake

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/minikubelet/minikubelet/pkg/cri"
)

// TestContainerUser: who a container's process runs as is containerd's answer, reported
// alike by ContainerStatus.User (before and after the process first runs) and by `id` in
// the container: the primary group, the image's /etc/group memberships unless the policy
// is Strict, the kubelet's groups, sorted and each once. A runtime without the policy
// feature merges anyway and reports no user.
func TestContainerUser(t *testing.T) {
	const agnhost = "registry.k8s.io/e2e-test-images/agnhost:2.66.1"
	const busybox = "registry.k8s.io/e2e-test-images/busybox:1.37.0-2"
	const alpine = "alpine:3.19"
	i := func(v int64) *int64 { return &v }
	unsupported := &cri.RuntimeFeatures{}
	tests := []struct {
		name     string
		image    string
		sec      *cri.SecurityContext
		features *cri.RuntimeFeatures
		want     *cri.ContainerUser
		wantID   string // id -G
	}{
		{name: "root of busybox, no security context", image: busybox,
			want: &cri.ContainerUser{UID: 0, GID: 0, SupplementalGroups: []int64{0, 10}}, wantID: "0 10"},
		{name: "root of alpine is in many groups", image: alpine, sec: &cri.SecurityContext{},
			want: &cri.ContainerUser{SupplementalGroups: []int64{0, 1, 2, 3, 4, 6, 10, 11, 20, 26, 27}}, wantID: "0 1 2 3 4 6 10 11 20 26 27"},
		{name: "Merge (the e2e spec's pod)", image: agnhost,
			sec:  &cri.SecurityContext{RunAsUser: i(1000), SupplementalGroups: []int64{60000}},
			want: &cri.ContainerUser{UID: 1000, GID: 1000, SupplementalGroups: []int64{1000, 50000, 60000}}, wantID: "1000 50000 60000"},
		{name: "Strict leaves the image's groups out", image: agnhost,
			sec:  &cri.SecurityContext{RunAsUser: i(1000), SupplementalGroups: []int64{60000}, SupplementalGroupsPolicy: cri.SupplementalGroupsStrict},
			want: &cri.ContainerUser{UID: 1000, GID: 1000, SupplementalGroups: []int64{1000, 60000}}, wantID: "1000 60000"},
		{name: "Strict on a runtime without the feature merges, reports no user", image: agnhost, features: unsupported,
			sec:    &cri.SecurityContext{RunAsUser: i(1000), SupplementalGroups: []int64{60000}, SupplementalGroupsPolicy: cri.SupplementalGroupsStrict},
			wantID: "1000 50000 60000"},
		{name: "runAsGroup, fsGroup first, duplicates once", image: agnhost,
			sec:  &cri.SecurityContext{RunAsUser: i(1000), RunAsGroup: i(3000), SupplementalGroups: []int64{4000, 3000, 50000}},
			want: &cri.ContainerUser{UID: 1000, GID: 3000, SupplementalGroups: []int64{3000, 4000, 50000}}, wantID: "3000 4000 50000"},
		{name: "a user the image does not know: root's group", image: busybox,
			sec:  &cri.SecurityContext{RunAsUser: i(1234), SupplementalGroups: []int64{1234, 5678}},
			want: &cri.ContainerUser{UID: 1234, GID: 0, SupplementalGroups: []int64{0, 1234, 5678}}, wantID: "0 1234 5678"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, clk := newRuntime(t, Config{Features: tt.features})
			ctx := context.Background()
			sbID, sbCfg := runPod(t, r, "uid-user", nil)
			if _, err := r.PullImage(ctx, cri.ImageSpec{Image: tt.image}, nil); err != nil {
				t.Fatal(err)
			}
			cc := containerConfig("app", "", tt.image)
			cc.Command = []string{"sleep", "infinity"}
			cc.Security = tt.sec
			id, err := r.CreateContainer(ctx, sbID, cc, sbCfg)
			if err != nil {
				t.Fatal(err)
			}
			check := func(when string) {
				st, err := r.ContainerStatus(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tt.want, st.User); diff != "" {
					t.Errorf("%s: ContainerStatus.User (-want +got):\n%s", when, diff)
				}
			}
			check("created")
			if err := r.StartContainer(ctx, id); err != nil {
				t.Fatal(err)
			}
			check("running")
			var resp *cri.ExecSyncResponse
			if err := await(t, r, clk, time.Minute, func(ctx context.Context) error {
				resp, err = r.ExecSync(ctx, id, []string{"id", "-G"}, 0)
				return err
			}); err != nil {
				t.Fatal(err)
			}
			if got := strings.TrimSpace(string(resp.Stdout)); got != tt.wantID {
				t.Errorf("id -G = %q (stderr %q), want %q", got, resp.Stderr, tt.wantID)
			}
		})
	}
}

// TestContainerUsersShared: containers with equal security contexts keep one of them and
// report one user value.
func TestContainerUsersShared(t *testing.T) {
	r, _ := newRuntime(t, Config{})
	ctx := context.Background()
	const image = "registry.k8s.io/e2e-test-images/busybox:1.37.0-2"
	if _, err := r.PullImage(ctx, cri.ImageSpec{Image: image}, nil); err != nil {
		t.Fatal(err)
	}
	var users []*cri.ContainerUser
	var secs []*cri.SecurityContext
	for _, uid := range []string{"a", "b"} {
		sbID, sbCfg := runPod(t, r, uid, nil)
		cc := containerConfig("app", "", image)
		cc.Command = []string{"sleep", "infinity"}
		cc.Security = &cri.SecurityContext{SupplementalGroups: []int64{1234}}
		id, err := r.CreateContainer(ctx, sbID, cc, sbCfg)
		if err != nil {
			t.Fatal(err)
		}
		st, err := r.ContainerStatus(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		users = append(users, st.User)
		secs = append(secs, r.containers[id].spec.sec)
	}
	if users[0] == nil || users[0] != users[1] {
		t.Errorf("users %p and %p, want one shared value", users[0], users[1])
	}
	if secs[0] != secs[1] {
		t.Errorf("security contexts %p and %p, want one shared value", secs[0], secs[1])
	}
}

// TestInternSecurityDistinguishesEveryField: two security contexts that differ in any one
// field are kept apart (a field left out of the key would give a container another's), and
// a nil list (the runtime's defaults) is not an empty one (procMount: Unmasked).
func TestInternSecurityDistinguishesEveryField(t *testing.T) {
	r, _ := newRuntime(t, Config{})
	base := r.internSecurityLocked(&cri.SecurityContext{})
	typ := reflect.TypeOf(cri.SecurityContext{})
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		t.Run(f.Name, func(t *testing.T) {
			sc := &cri.SecurityContext{}
			v := reflect.ValueOf(sc).Elem().Field(i)
			switch v.Kind() {
			case reflect.Pointer:
				v.Set(reflect.New(f.Type.Elem()))
			case reflect.Slice:
				if f.Type.Elem().Kind() == reflect.String {
					v.Set(reflect.MakeSlice(f.Type, 0, 0)) // a path list: empty is not nil
				} else {
					v.Set(reflect.MakeSlice(f.Type, 1, 1)) // a group list: one group, 0
				}
			case reflect.Bool:
				v.SetBool(true)
			case reflect.Uint8:
				v.SetUint(1)
			default:
				t.Fatalf("field %s of kind %s: teach this test its non-zero value", f.Name, v.Kind())
			}
			if got := r.internSecurityLocked(sc); got == base {
				t.Errorf("a context with %s set is interned as the empty one", f.Name)
			}
		})
	}
}
