package kuberuntime

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testclock "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/pkg/container"
	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/vfs"
)

// TestExpand: $(VAR) expansion as upstream's forked expansion package does it.
func TestExpand(t *testing.T) {
	env := map[string]string{"A": "alpha", "B": "beta", "EMPTY": ""}
	lookup := func(name string) (string, bool) { v, ok := env[name]; return v, ok }
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{"$(A)", "alpha"},
		{"x$(A)y$(B)z", "xalphaybetaz"},
		{"$(EMPTY)", ""},
		{"$(UNKNOWN)", "$(UNKNOWN)"},
		{"$$(A)", "$(A)"},
		{"$$$(A)", "$alpha"},
		{"$$", "$"},
		{"$x$", "$x$"},
		{"$(A", "$(A"},
		{"$()", "$()"},
		{"a$", "a$"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := Expand(tt.in, lookup); got != tt.want {
				t.Errorf("Expand(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// TestExpandCommandAndArgs: command and args expanded against the environment (the last
// definition of a name wins); none stays none, so the image's entrypoint and cmd apply.
func TestExpandCommandAndArgs(t *testing.T) {
	envs := []cri.KeyValue{{Key: "MSG", Value: "first"}, {Key: "MSG", Value: "hello"}, {Key: "N", Value: "3"}}
	tests := []struct {
		name              string
		c                 v1.Container
		wantCmd, wantArgs []string
	}{
		{name: "neither", c: v1.Container{}},
		{name: "args only", c: v1.Container{Args: []string{"echo $(MSG)", "$(N)"}}, wantArgs: []string{"echo hello", "3"}},
		{name: "both", c: v1.Container{Command: []string{"/bin/sh", "-c"}, Args: []string{"echo $(MSG) $$(MSG) $(NOPE)"}},
			wantCmd: []string{"/bin/sh", "-c"}, wantArgs: []string{"echo hello $(MSG) $(NOPE)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd, args := expandCommandAndArgs(&tt.c, envs)
			if diff := cmp.Diff(tt.wantCmd, cmd); diff != "" {
				t.Errorf("command (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantArgs, args); diff != "" {
				t.Errorf("args (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSecurityContext: the container's settings over the pod's; fsGroup then the pod's
// supplemental groups; the pod's supplementalGroupsPolicy.
func TestSecurityContext(t *testing.T) {
	i := func(v int64) *int64 { return &v }
	b := func(v bool) *bool { return &v }
	policy := func(p v1.SupplementalGroupsPolicy) *v1.SupplementalGroupsPolicy { return &p }
	procMount := func(p v1.ProcMountType) *v1.ProcMountType { return &p }
	tests := []struct {
		name    string
		pod     *v1.PodSecurityContext
		c       *v1.SecurityContext
		want    *cri.SecurityContext
		wantErr string
	}{
		{name: "none", want: &cri.SecurityContext{}},
		{name: "the pod's", pod: &v1.PodSecurityContext{RunAsUser: i(1000), RunAsGroup: i(3000), FSGroup: i(2000), SupplementalGroups: []int64{4000, 5000}},
			want: &cri.SecurityContext{RunAsUser: i(1000), RunAsGroup: i(3000), SupplementalGroups: []int64{2000, 4000, 5000}}},
		{name: "the container's win", pod: &v1.PodSecurityContext{RunAsUser: i(1000), RunAsGroup: i(3000)},
			c:    &v1.SecurityContext{RunAsUser: i(0), ReadOnlyRootFilesystem: b(true), Privileged: b(true)},
			want: &cri.SecurityContext{RunAsUser: i(0), RunAsGroup: i(3000), ReadonlyRootfs: true, Privileged: true}},
		{name: "Merge", pod: &v1.PodSecurityContext{SupplementalGroupsPolicy: policy(v1.SupplementalGroupsPolicyMerge)},
			want: &cri.SecurityContext{SupplementalGroupsPolicy: cri.SupplementalGroupsMerge}},
		{name: "Strict", pod: &v1.PodSecurityContext{SupplementalGroups: []int64{60000}, SupplementalGroupsPolicy: policy(v1.SupplementalGroupsPolicyStrict)},
			want: &cri.SecurityContext{SupplementalGroups: []int64{60000}, SupplementalGroupsPolicy: cri.SupplementalGroupsStrict}},
		{name: "a policy the CRI lacks", pod: &v1.PodSecurityContext{SupplementalGroupsPolicy: policy("Loose")},
			wantErr: "unsupported supplementalGroupsPolicy: Loose"},
		{name: "procMount Default", c: &v1.SecurityContext{ProcMount: procMount(v1.DefaultProcMount)}, want: &cri.SecurityContext{}},
		{name: "procMount Unmasked: empty lists", c: &v1.SecurityContext{ProcMount: procMount(v1.UnmaskedProcMount)},
			want: &cri.SecurityContext{MaskedPaths: []string{}, ReadonlyPaths: []string{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: v1.PodSpec{SecurityContext: tt.pod}}
			got, err := securityContext(pod, &v1.Container{SecurityContext: tt.c})
			if tt.wantErr != "" || err != nil {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if tt.want.MaskedPaths == nil {
				// Every container but an unmasked one gets the kubelet's defaults.
				tt.want.MaskedPaths, tt.want.ReadonlyPaths = defaultMaskedPaths, defaultReadonlyPaths
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("security context (-want +got):\n%s", diff)
			}
		})
	}
}

// TestVerifyRunAsNonRoot: runAsNonRoot against an explicit runAsUser, else against the
// image's user, refused with upstream's messages.
func TestVerifyRunAsNonRoot(t *testing.T) {
	i := func(v int64) *int64 { return &v }
	yes := true
	tests := []struct {
		name     string
		pod      *v1.PodSecurityContext
		c        *v1.SecurityContext
		uid      *int64
		username string
		wantErr  string
	}{
		{name: "not asked", uid: i(0)},
		{name: "non-root user", pod: &v1.PodSecurityContext{RunAsNonRoot: &yes, RunAsUser: i(1000)}, uid: i(0)},
		{name: "non-root image", pod: &v1.PodSecurityContext{RunAsNonRoot: &yes}, uid: i(1234)},
		{name: "root image", pod: &v1.PodSecurityContext{RunAsNonRoot: &yes}, uid: i(0),
			wantErr: `container has runAsNonRoot and image will run as root (pod: "p_ns(u)", container: app)`},
		{name: "named image user", c: &v1.SecurityContext{RunAsNonRoot: &yes}, username: "nginx",
			wantErr: `container has runAsNonRoot and image has non-numeric user (nginx), cannot verify user is non-root (pod: "p_ns(u)", container: app)`},
		{name: "runAsUser over a named image user", c: &v1.SecurityContext{RunAsNonRoot: &yes, RunAsUser: i(101)}, username: "nginx"},
		{name: "root", pod: &v1.PodSecurityContext{RunAsNonRoot: &yes}, c: &v1.SecurityContext{RunAsUser: i(0)}, uid: i(1234),
			wantErr: `container's runAsUser breaks non-root policy (pod: "p_ns(u)", container: app)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"}, Spec: v1.PodSpec{SecurityContext: tt.pod}}
			err := verifyRunAsNonRoot(pod, &v1.Container{Name: "app", SecurityContext: tt.c}, tt.uid, tt.username)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || err.Error() != tt.wantErr) {
				t.Errorf("verifyRunAsNonRoot = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

// stubRuntime answers ContainerStatus from a map and counts the calls, and ImageStatus
// with no image (a root user); the other CRI methods are not used by the code under test.
type stubRuntime struct {
	cri.RuntimeService
	cri.ImageService
	RuntimeView
	statuses map[string]*cri.ContainerStatus
	calls    int
}

func (s *stubRuntime) ContainerStatus(_ context.Context, id string) (*cri.ContainerStatus, error) {
	s.calls++
	st, ok := s.statuses[id]
	if !ok {
		return nil, cri.ErrNotFound
	}
	return st, nil
}

func (s *stubRuntime) ImageStatus(context.Context, cri.ImageSpec) (*cri.Image, error) {
	return nil, nil
}

func newStubManager(t *testing.T, rt *stubRuntime, nodeFS *vfs.View, logs map[string][]string, opts func(*v1.Pod, *v1.Container) (*ContainerOptions, error)) *Manager {
	t.Helper()
	clk := testclock.NewFakeClock(epoch)
	cfg := Config{Runtime: rt, Images: rt, View: rt, Clock: clk, NodeFS: nodeFS,
		ContainerLogTail: func(_ context.Context, id string, lines int) ([]string, error) {
			l, ok := logs[id]
			if !ok {
				return nil, errors.New("no log")
			}
			if len(l) > lines {
				l = l[len(l)-lines:]
			}
			out := make([]string, len(l))
			for i, line := range l {
				out[i] = line + "\n"
			}
			return out, nil
		}}
	if opts != nil {
		cfg.RunContainerOptions = func(_ context.Context, pod *v1.Pod, c *v1.Container, _ []string, _ ImageVolumes) (*ContainerOptions, error) {
			return opts(pod, c)
		}
	}
	m, err := NewManager(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestGenerateContainerConfig: the CreateContainer request: the kubelet's environment and
// mounts, command and args expanded, the termination message file made on the node and
// bound at terminationMessagePath, mounts ordered parents first, the terminal settings.
func TestGenerateContainerConfig(t *testing.T) {
	nodeFS := vfs.New(nil)
	mounts := []cri.Mount{
		{ContainerPath: "/etc/app/conf.d", HostPath: "/v/conf.d", Readonly: true},
		{ContainerPath: "/etc/app", HostPath: "/v/app"},
		{ContainerPath: "/etc/hosts", HostPath: "/var/lib/kubelet/pods/u/etc-hosts"},
	}
	opts := func(pod *v1.Pod, c *v1.Container) (*ContainerOptions, error) {
		return &ContainerOptions{Envs: []cri.KeyValue{{Key: "WHO", Value: "world"}}, Mounts: mounts, PodContainerDir: "/var/lib/kubelet/pods/u/containers/" + c.Name}, nil
	}
	m := newStubManager(t, &stubRuntime{}, nodeFS, nil, opts)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"}}
	c := &v1.Container{
		Name: "app", Command: []string{"sh", "-c"}, Args: []string{"echo hello $(WHO)"}, WorkingDir: "/srv",
		Stdin: true, StdinOnce: true, TTY: true,
		TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: v1.TerminationMessageFallbackToLogsOnError,
	}
	config, err := m.generateContainerConfig(context.Background(), c, pod, 2, "busybox:latest", kindApp, []string{"10.88.0.7"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(config.Mounts) != 4 {
		t.Fatalf("mounts %+v, want the kubelet's 3 and the termination message file", config.Mounts)
	}
	term := config.Mounts[2]
	if term.ContainerPath != "/dev/termination-log" || !strings.HasPrefix(term.HostPath, "/var/lib/kubelet/pods/u/containers/app/") || len(strings.TrimPrefix(term.HostPath, "/var/lib/kubelet/pods/u/containers/app/")) != 8 {
		t.Errorf("termination message mount %+v, want /dev/termination-log from containers/app/<8 hex digits>", term)
	}
	if info, err := nodeFS.Stat(term.HostPath); err != nil || info.Mode.String() != "-rw-rw-rw-" || info.Size != 0 {
		t.Errorf("termination message file on the node: %+v %v, want an empty 0666 file", info, err)
	}
	want := &cri.ContainerConfig{
		Metadata: cri.ContainerMetadata{Name: "app", Attempt: 2}, Image: cri.ImageSpec{Image: "busybox:latest"},
		Command: []string{"sh", "-c"}, Args: []string{"echo hello world"}, WorkingDir: "/srv",
		Envs: []cri.KeyValue{{Key: "WHO", Value: "world"}},
		// Parents first (depth), otherwise in the kubelet's order, the file last.
		Mounts: []cri.Mount{mounts[1], mounts[2], term, mounts[0]},
		Stdin:  true, StdinOnce: true, TTY: true,
		Security: &cri.SecurityContext{MaskedPaths: defaultMaskedPaths, ReadonlyPaths: defaultReadonlyPaths},
		// A BestEffort pod's container: the OOM killer's first choice.
		Resources: &cri.ContainerResources{CPUShares: 2, OomScoreAdj: 1000}, // a BestEffort container: the minimum shares
	}
	if diff := cmp.Diff(want, config, cmpIgnoreLabels); diff != "" {
		t.Errorf("container config (-want +got):\n%s", diff)
	}
	if a := config.Annotations; a[ContainerTerminationMessagePathAnn] != "/dev/termination-log" || a[ContainerTerminationMessagePolicyAnn] != "FallbackToLogsOnError" {
		t.Errorf("annotations %v lack the termination message path and policy", a)
	}

	// A second instance gets a file of its own.
	again, err := m.generateContainerConfig(context.Background(), c, pod, 3, "busybox:latest", kindApp, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if again.Mounts[2].HostPath == term.HostPath {
		t.Errorf("the next instance reuses termination file %s", term.HostPath)
	}
}

// cmpIgnoreLabels leaves the labels and annotations (tested elsewhere) out of a comparison.
var cmpIgnoreLabels = cmp.FilterPath(func(p cmp.Path) bool {
	s := p.String()
	return s == "Labels" || s == "Annotations"
}, cmp.Ignore())

// TestGenerateContainerConfigError: the kubelet's error is the container's configuration
// error, as is a runAsNonRoot violation.
func TestGenerateContainerConfigError(t *testing.T) {
	m := newStubManager(t, &stubRuntime{}, vfs.New(nil), nil, func(*v1.Pod, *v1.Container) (*ContainerOptions, error) {
		return nil, errors.New(`configmap "absent" not found`)
	})
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"}}
	if _, err := m.generateContainerConfig(context.Background(), &v1.Container{Name: "app"}, pod, 0, "busybox", kindApp, nil, nil); err == nil || err.Error() != `configmap "absent" not found` {
		t.Errorf("error = %v, want the kubelet's", err)
	}
}

// TestWithTerminationMessages: an exited container's message: the file bound at its
// terminationMessagePath (its last 4096 bytes), or with FallbackToLogsOnError, when that is
// empty and the container failed, its last 80 log lines (last 2048 bytes); after the
// runtime's own message. Each container is read once.
func TestWithTerminationMessages(t *testing.T) {
	long := strings.Repeat("0123456789", 500) // 5000 bytes
	var manyLines []string
	for i := 0; i < 100; i++ {
		manyLines = append(manyLines, "line "+strings.Repeat("x", 40))
	}
	wantLines := strings.Repeat("line "+strings.Repeat("x", 40)+"\n", 80)
	wantLines = wantLines[len(wantLines)-2048:]
	tests := []struct {
		name     string
		policy   v1.TerminationMessagePolicy
		file     *string // nil: no file on the node
		exitCode int32
		reason   string
		runtime  string // the runtime's message
		log      []string
		want     string
	}{
		{name: "file", policy: v1.TerminationMessageReadFile, file: ptr("all done\n"), want: "all done\n"},
		{name: "file's last 4096 bytes", policy: v1.TerminationMessageReadFile, file: &long, want: long[len(long)-4096:]},
		{name: "empty file, File policy", policy: v1.TerminationMessageReadFile, file: ptr(""), exitCode: 1, log: []string{"boom"}, want: ""},
		{name: "fallback to the log", policy: v1.TerminationMessageFallbackToLogsOnError, file: ptr(""), exitCode: 1, log: []string{"starting", "boom"}, want: "starting\nboom\n"},
		{name: "fallback: last 80 lines, last 2048 bytes", policy: v1.TerminationMessageFallbackToLogsOnError, file: ptr(""), exitCode: 2, log: manyLines, want: wantLines},
		{name: "fallback not on success", policy: v1.TerminationMessageFallbackToLogsOnError, file: ptr(""), exitCode: 0, log: []string{"fine"}, want: ""},
		{name: "fallback, no file", policy: v1.TerminationMessageFallbackToLogsOnError, exitCode: 1, log: []string{"boom"}, want: "boom\n"},
		{name: "fallback, the file wins", policy: v1.TerminationMessageFallbackToLogsOnError, file: ptr("why"), exitCode: 1, log: []string{"boom"}, want: "why"},
		{name: "a container that never ran has no log", policy: v1.TerminationMessageFallbackToLogsOnError, file: ptr(""), exitCode: 128, reason: "ContainerCannotRun", log: []string{"x"}, want: ""},
		{name: "after the runtime's message", policy: v1.TerminationMessageReadFile, file: ptr("mine"), exitCode: 137, runtime: "OOMKilled", want: "OOMKilled: mine"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nodeFS := vfs.New(nil)
			const hostPath = "/var/lib/kubelet/pods/u/containers/app/0badcafe"
			if tt.file != nil {
				if err := nodeFS.MkdirAll("/var/lib/kubelet/pods/u/containers/app", 0o750, 0, 0); err != nil {
					t.Fatal(err)
				}
				if err := nodeFS.WriteFile(hostPath, []byte(*tt.file), 0o666, false, 0, 0); err != nil {
					t.Fatal(err)
				}
			}
			rt := &stubRuntime{statuses: map[string]*cri.ContainerStatus{"c1": {
				ID: "c1", State: cri.ContainerExited, ExitCode: tt.exitCode, Reason: tt.reason, Message: tt.runtime,
				Annotations: map[string]string{ContainerTerminationMessagePathAnn: "/dev/termination-log", ContainerTerminationMessagePolicyAnn: string(tt.policy)},
				Mounts:      []cri.Mount{{ContainerPath: "/etc/hosts", HostPath: "/x"}, {ContainerPath: "/dev/termination-log", HostPath: hostPath}},
			}}}
			m := newStubManager(t, rt, nodeFS, map[string][]string{"c1": tt.log}, nil)
			cs := &container.ContainerStatus{ID: container.ContainerID{Type: container.RuntimeType, ID: "c1"}, Name: "app", State: container.ContainerStateExited, ExitCode: int(tt.exitCode), Message: tt.runtime}
			running := &container.ContainerStatus{ID: container.ContainerID{Type: container.RuntimeType, ID: "c2"}, Name: "side", State: container.ContainerStateRunning}
			in := &container.PodStatus{ID: "u", ContainerStatuses: []*container.ContainerStatus{running, cs}}
			out := m.WithTerminationMessages(context.Background(), in)
			if got := out.ContainerStatuses[1].Message; got != tt.want {
				t.Errorf("message = %q, want %q", got, tt.want)
			}
			if cs.Message != tt.runtime || out.ContainerStatuses[0] != running {
				t.Errorf("the input status changed (%q) or the running container's was copied", cs.Message)
			}
			if tt.want == tt.runtime && out != in {
				t.Errorf("a status without a message to add was copied")
			}
			m.WithTerminationMessages(context.Background(), in)
			if rt.calls != 1 {
				t.Errorf("ContainerStatus called %d times over two statuses, want once", rt.calls)
			}
		})
	}
}

func ptr(s string) *string { return &s }
