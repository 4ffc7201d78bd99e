package view

import (
	"context"
	"errors"
	"fmt"
	testingclock "k8s.io/utils/clock/testing"
	"reflect"
	"strings"
	"testing"
	"time"

	testclock "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/pkg/container"
	"github.com/minikubelet/minikubelet/pkg/cri"
)

// stub is a canned CRI runtime; methods the view does not call are left nil and panic.
type stub struct {
	cri.RuntimeService
	sandboxes  []cri.PodSandbox
	containers []cri.Container
	sbStatus   map[string]*cri.PodSandboxStatus
	cStatus    map[string]*cri.ContainerStatus
	errs       map[string]error // by method
	sbFilter   *cri.PodSandboxFilter
	cFilter    *cri.ContainerFilter
}

func (s *stub) ListPodSandbox(_ context.Context, f *cri.PodSandboxFilter) ([]cri.PodSandbox, error) {
	s.sbFilter = f
	if err := s.errs["ListPodSandbox"]; err != nil {
		return nil, err
	}
	var out []cri.PodSandbox
	for _, sb := range s.sandboxes {
		if f != nil && f.LabelSelector != nil && sb.Labels[cri.PodUIDLabel] != f.LabelSelector[cri.PodUIDLabel] {
			continue
		}
		out = append(out, sb)
	}
	return out, nil
}

func (s *stub) ListContainers(_ context.Context, f *cri.ContainerFilter) ([]cri.Container, error) {
	s.cFilter = f
	if err := s.errs["ListContainers"]; err != nil {
		return nil, err
	}
	var out []cri.Container
	for _, c := range s.containers {
		if f != nil && f.LabelSelector != nil && c.Labels[cri.PodUIDLabel] != f.LabelSelector[cri.PodUIDLabel] {
			continue
		}
		out = append(out, c)
	}
	return out, nil
}

func (s *stub) PodSandboxStatus(_ context.Context, id string) (*cri.PodSandboxStatus, error) {
	if err := s.errs["PodSandboxStatus"]; err != nil {
		return nil, err
	}
	st, ok := s.sbStatus[id]
	if !ok {
		return nil, fmt.Errorf("sandbox %q: %w", id, cri.ErrNotFound)
	}
	return st, nil
}

func (s *stub) ContainerStatus(_ context.Context, id string) (*cri.ContainerStatus, error) {
	if err := s.errs["ContainerStatus"]; err != nil {
		return nil, err
	}
	st, ok := s.cStatus[id]
	if !ok {
		return nil, fmt.Errorf("container %q: %w", id, cri.ErrNotFound)
	}
	return st, nil
}

func sb(id, uid string, created int64, state cri.PodSandboxState) cri.PodSandbox {
	return cri.PodSandbox{
		ID:        id,
		Metadata:  cri.PodSandboxMetadata{Name: "pod-" + uid, Namespace: "ns", UID: uid},
		State:     state,
		CreatedAt: created,
		Labels:    map[string]string{cri.PodUIDLabel: uid},
	}
}

func ctr(id, uid, name string, created int64, state cri.ContainerState, attempt uint32) cri.Container {
	return cri.Container{
		ID:        id,
		Metadata:  cri.ContainerMetadata{Name: name, Attempt: attempt},
		Image:     cri.ImageSpec{Image: "img"},
		ImageRef:  "sha256:1",
		State:     state,
		CreatedAt: created,
		Labels:    map[string]string{cri.PodUIDLabel: uid, cri.PodNameLabel: "pod-" + uid, cri.PodNamespaceLabel: "ns", cri.ContainerNameLabel: name},
	}
}

func ids(cs []*container.Container) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.ID.ID+"="+string(c.State))
	}
	return out
}

func TestNew(t *testing.T) {
	if _, err := New(Config{}); err == nil || !strings.Contains(err.Error(), `"Runtime" is required`) {
		t.Errorf("New without a runtime: %v", err)
	}
}

func TestBuildPods(t *testing.T) {
	sandboxes := []cri.PodSandbox{
		sb("s1", "a", 10, cri.SandboxNotReady),
		sb("s2", "b", 20, cri.SandboxReady),
		sb("s3", "a", 30, cri.SandboxReady), // a's second sandbox, not adjacent to its first
	}
	containers := []cri.Container{
		ctr("c1", "a", "x", 11, cri.ContainerExited, 0),
		ctr("c2", "b", "y", 21, cri.ContainerRunning, 0),
		ctr("c3", "c", "z", 40, cri.ContainerCreated, 0), // a pod with no listed sandbox
		{ID: "foreign", State: cri.ContainerRunning},     // not made by a kubelet
		ctr("c4", "a", "x", 31, cri.ContainerRunning, 1),
	}
	pods := BuildPods(sandboxes, containers)
	type want struct {
		id, name   string
		created    int64
		sandboxes  []string
		containers []string
	}
	wants := []want{
		{"a", "pod-a", 30, []string{"s1=exited", "s3=running"}, []string{"c1=exited", "c4=running"}},
		{"b", "pod-b", 20, []string{"s2=running"}, []string{"c2=running"}},
		{"c", "pod-c", 0, nil, []string{"c3=created"}},
	}
	if len(pods) != len(wants) {
		t.Fatalf("%d pods, want %d", len(pods), len(wants))
	}
	for i, w := range wants {
		p := pods[i]
		got := want{string(p.ID), p.Name, p.CreatedAt, ids(p.Sandboxes), ids(p.Containers)}
		if !reflect.DeepEqual(got, w) {
			t.Errorf("pod %d = %+v, want %+v", i, got, w)
		}
	}
	c := pods[0].Containers[1]
	if c.Name != "x" || c.Image != "img" || c.ImageID != "sha256:1" || c.Attempt != 1 || c.ID.Type != container.RuntimeType {
		t.Errorf("container conversion = %+v", c)
	}
	if got := BuildPods(nil, nil); len(got) != 0 {
		t.Errorf("BuildPods of nothing = %v", got)
	}
}

func TestGetPods(t *testing.T) {
	s := &stub{sandboxes: []cri.PodSandbox{sb("s1", "a", 1, cri.SandboxReady)}}
	v, _ := New(Config{Runtime: s, Clock: testingclock.NewFakeClock(time.Unix(0, 0))})
	ctx := context.Background()
	if _, err := v.GetPods(ctx, false); err != nil {
		t.Fatal(err)
	}
	if s.sbFilter.State == nil || *s.sbFilter.State != cri.SandboxReady || s.cFilter.State == nil || *s.cFilter.State != cri.ContainerRunning {
		t.Errorf("all=false filters = %+v, %+v; want ready sandboxes and running containers", s.sbFilter, s.cFilter)
	}
	if _, err := v.GetPods(ctx, true); err != nil {
		t.Fatal(err)
	}
	if s.sbFilter.State != nil || s.cFilter.State != nil {
		t.Errorf("all=true filtered by state")
	}
	boom := errors.New("boom")
	for method, prefix := range map[string]string{"ListPodSandbox": "list pod sandboxes: boom", "ListContainers": "list containers: boom"} {
		s.errs = map[string]error{method: boom}
		if _, err := v.GetPods(ctx, true); !errors.Is(err, boom) || err.Error() != prefix {
			t.Errorf("%s failing: GetPods error %v, want %q", method, err, prefix)
		}
	}
}

func TestGetPodStatus(t *testing.T) {
	clk := testclock.NewFakeClock(time.Unix(1000, 0))
	base := &stub{
		sandboxes: []cri.PodSandbox{
			sb("old", "a", 10, cri.SandboxReady),
			sb("new", "a", 20, cri.SandboxNotReady),
			sb("gone", "a", 5, cri.SandboxNotReady), // listed, then removed
			sb("other", "b", 30, cri.SandboxReady),
		},
		containers: []cri.Container{
			ctr("c-old", "a", "x", 11, cri.ContainerExited, 0),
			ctr("c-new", "a", "x", 21, cri.ContainerRunning, 1),
			ctr("c-gone", "a", "y", 22, cri.ContainerRunning, 0),
			ctr("c-other", "b", "x", 31, cri.ContainerRunning, 0),
		},
		sbStatus: map[string]*cri.PodSandboxStatus{
			"old":   {ID: "old", State: cri.SandboxReady, CreatedAt: 10, IP: "10.0.0.1"},
			"new":   {ID: "new", State: cri.SandboxNotReady, CreatedAt: 20, IP: "10.0.0.2"},
			"other": {ID: "other", State: cri.SandboxReady, CreatedAt: 30, IP: "10.0.0.3"},
		},
		cStatus: map[string]*cri.ContainerStatus{
			"c-old": {ID: "c-old", Metadata: cri.ContainerMetadata{Name: "x"}, State: cri.ContainerExited, CreatedAt: 11, StartedAt: 12, FinishedAt: 13, ExitCode: 1, Reason: "Error"},
			"c-new": {ID: "c-new", Metadata: cri.ContainerMetadata{Name: "x", Attempt: 1}, State: cri.ContainerRunning, CreatedAt: 21, StartedAt: 22},
		},
	}
	v, _ := New(Config{Runtime: base, Clock: clk})
	st, err := v.GetPodStatus(context.Background(), "a", "pod-a", "ns")
	if err != nil {
		t.Fatal(err)
	}
	if st.ID != "a" || st.Name != "pod-a" || st.Namespace != "ns" || !st.TimeStamp.Equal(clk.Now()) {
		t.Errorf("status header = %+v", st)
	}
	var sbIDs []string
	for _, s := range st.SandboxStatuses {
		sbIDs = append(sbIDs, s.ID)
	}
	if strings.Join(sbIDs, ",") != "new,old" {
		t.Errorf("sandbox statuses = %v, want newest first, the removed one skipped", sbIDs)
	}
	if len(st.IPs) != 0 {
		t.Errorf("IPs = %v, want none: the newest sandbox is not ready", st.IPs)
	}
	if len(st.ContainerStatuses) != 2 || st.ContainerStatuses[0].ID.ID != "c-new" || st.ContainerStatuses[1].ID.ID != "c-old" {
		t.Fatalf("container statuses = %+v, want c-new then c-old", st.ContainerStatuses)
	}
	old := st.ContainerStatuses[1]
	if old.ExitCode != 1 || old.Reason != "Error" || !old.FinishedAt.Equal(time.Unix(0, 13)) || old.State != container.ContainerStateExited {
		t.Errorf("c-old status = %+v", old)
	}
	if !st.ContainerStatuses[0].FinishedAt.IsZero() || st.ContainerStatuses[0].RestartCount != 1 {
		t.Errorf("running container: FinishedAt %v (want zero), RestartCount %d", st.ContainerStatuses[0].FinishedAt, st.ContainerStatuses[0].RestartCount)
	}
	if found := st.FindContainerStatusByName("x"); found == nil || found.ID.ID != "c-new" {
		t.Errorf("FindContainerStatusByName(x) = %+v, want the newest", found)
	}

	st, _ = v.GetPodStatus(context.Background(), "b", "pod-b", "ns")
	if len(st.IPs) != 1 || st.IPs[0] != "10.0.0.3" {
		t.Errorf("IPs of b = %v, want the ready newest sandbox's", st.IPs)
	}

	boom := errors.New("boom")
	for _, method := range []string{"ListPodSandbox", "PodSandboxStatus", "ListContainers", "ContainerStatus"} {
		base.errs = map[string]error{method: boom}
		if _, err := v.GetPodStatus(context.Background(), "a", "pod-a", "ns"); !errors.Is(err, boom) || !strings.Contains(err.Error(), `pod "a"`) {
			t.Errorf("%s failing: GetPodStatus error %v, want it wrapped with the pod", method, err)
		}
	}
}

func TestNewestFirst(t *testing.T) {
	at := func(s int64) time.Time { return time.Unix(s, 0) }
	tests := []struct {
		name string
		in   []container.ContainerStatus
		want []string
	}{
		{"by creation time", []container.ContainerStatus{
			{Name: "old", CreatedAt: at(1)}, {Name: "new", CreatedAt: at(3)}, {Name: "mid", CreatedAt: at(2)},
		}, []string{"new", "mid", "old"}},
		{"equal times: the higher attempt first", []container.ContainerStatus{
			{Name: "a0", CreatedAt: at(1), RestartCount: 0}, {Name: "a1", CreatedAt: at(1), RestartCount: 1},
		}, []string{"a1", "a0"}},
		{"full ties keep the given order", []container.ContainerStatus{
			{Name: "x", CreatedAt: at(1)}, {Name: "y", CreatedAt: at(1)},
		}, []string{"x", "y"}},
		{"empty", nil, []string{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := NewestFirst(tc.in)
			names := []string{}
			for _, s := range got {
				names = append(names, s.Name)
			}
			if !reflect.DeepEqual(names, tc.want) {
				t.Errorf("NewestFirst = %v, want %v", names, tc.want)
			}
		})
	}
}
