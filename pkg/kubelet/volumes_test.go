package kubelet

import (
	"context"
	"errors"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"

	"github.com/minikubelet/minikubelet/pkg/vfs"
)

// tsDirPattern is the name of an atomic writer's timestamped directory.
var tsDirPattern = regexp.MustCompile(`^\.\.\d{4}_\d{2}_\d{2}_\d{2}_\d{2}_\d{2}\.\d+$`)

// nodeFile is one entry of a tree read back from the node's filesystem.
type nodeFile struct {
	Mode    string // fs.FileMode's String
	GID     int64
	Content string // a file's content, a link's target
}

// readTree reads everything under dir (relative paths; timestamped directories named
// "..TS" so trees compare across clocks).
func readTree(t *testing.T, nodeFS *vfs.View, dir string) map[string]nodeFile {
	t.Helper()
	out := map[string]nodeFile{}
	err := walkTree(nodeFS, dir, func(p string, info vfs.Info) error {
		rel := strings.TrimPrefix(p, dir+"/")
		parts := strings.Split(rel, "/")
		for i, part := range parts {
			if tsDirPattern.MatchString(part) {
				parts[i] = "..TS"
			}
		}
		rel = strings.Join(parts, "/")
		f := nodeFile{Mode: info.Mode.String(), GID: info.GID}
		switch {
		case info.Mode&fs.ModeSymlink != 0:
			f.Content = tsDirPattern.ReplaceAllString(info.Target, "..TS")
		case info.Mode.IsRegular():
			data, err := nodeFS.ReadFile(p)
			if err != nil {
				return err
			}
			f.Content = string(data)
		}
		out[rel] = f
		return nil
	})
	if err != nil {
		t.Fatalf("read %s: %v", dir, err)
	}
	return out
}

func int32p(v int32) *int32 { return &v }
func int64p(v int64) *int64 { return &v }
func boolp(v bool) *bool    { return &v }

// volumePod is a pod whose container mounts every volume given.
func volumePod(vols ...v1.Volume) *v1.Pod {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "uid-web", Labels: map[string]string{"app": "web", "tier": "front"}, Annotations: map[string]string{"build": "42"}},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: "busybox"}}},
	}
	for _, v := range vols {
		pod.Spec.Volumes = append(pod.Spec.Volumes, v)
		pod.Spec.Containers[0].VolumeMounts = append(pod.Spec.Containers[0].VolumeMounts, v1.VolumeMount{Name: v.Name, MountPath: "/mnt/" + v.Name})
	}
	return pod
}

const (
	regularFile = "-rw-r--r--"
	linkMode    = "Lrwxrwxrwx"
	tsDirMode   = "drwxr-xr-x"
)

// TestMountVolumes: each plugin's layout on the node, as a real kubelet writes it under
// /var/lib/kubelet/pods/<uid>/volumes: the atomic writer's ..data link, timestamped
// directory and top-level links; items, nested paths and modes; fsGroup's group and bits.
func TestMountVolumes(t *testing.T) {
	objs := []runtime.Object{
		configMap("shop", "settings", map[string]string{"mode": "blue", "level": "3"}),
		secret("shop", "creds", map[string]string{"user": "admin"}),
	}
	cmVol := func(name string, src v1.ConfigMapVolumeSource) v1.Volume {
		if src.Name == "" {
			src.Name = "settings"
		}
		return v1.Volume{Name: name, VolumeSource: v1.VolumeSource{ConfigMap: &src}}
	}
	tests := []struct {
		name    string
		vol     v1.Volume
		fsGroup *int64
		dir     string // under the pod's volumes directory
		want    map[string]nodeFile
	}{{
		name: "configMap: every key, default mode 0644",
		vol:  cmVol("conf", v1.ConfigMapVolumeSource{}),
		dir:  "kubernetes.io~configmap/conf",
		want: map[string]nodeFile{
			"..data":     {Mode: linkMode, Content: "..TS"},
			"..TS":       {Mode: tsDirMode},
			"..TS/level": {Mode: regularFile, Content: "3"},
			"..TS/mode":  {Mode: regularFile, Content: "blue"},
			"level":      {Mode: linkMode, Content: "..data/level"},
			"mode":       {Mode: linkMode, Content: "..data/mode"},
		},
	}, {
		name: "configMap: items at nested paths, defaultMode and an item's mode",
		vol: cmVol("conf", v1.ConfigMapVolumeSource{DefaultMode: int32p(0o400), Items: []v1.KeyToPath{
			{Key: "mode", Path: "colours/current"},
			{Key: "level", Path: "level.txt", Mode: int32p(0o600)},
		}}),
		dir: "kubernetes.io~configmap/conf",
		want: map[string]nodeFile{
			"..data":               {Mode: linkMode, Content: "..TS"},
			"..TS":                 {Mode: tsDirMode},
			"..TS/colours":         {Mode: tsDirMode},
			"..TS/colours/current": {Mode: "-r--------", Content: "blue"},
			"..TS/level.txt":       {Mode: "-rw-------", Content: "3"},
			"colours":              {Mode: linkMode, Content: "..data/colours"},
			"level.txt":            {Mode: linkMode, Content: "..data/level.txt"},
		},
	}, {
		name:    "configMap with fsGroup: group-owned, group-readable, setgid directories",
		vol:     cmVol("conf", v1.ConfigMapVolumeSource{DefaultMode: int32p(0o400), Items: []v1.KeyToPath{{Key: "mode", Path: "mode"}}}),
		fsGroup: int64p(2000),
		dir:     "kubernetes.io~configmap/conf",
		want: map[string]nodeFile{
			"..data":    {Mode: linkMode, Content: "..TS"},
			"..TS":      {Mode: "dgrwxr-xr-x", GID: 2000},
			"..TS/mode": {Mode: "-r--r-----", GID: 2000, Content: "blue"},
			"mode":      {Mode: linkMode, Content: "..data/mode"},
		},
	}, {
		name: "optional configMap that does not exist: an empty volume",
		vol:  cmVol("conf", v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "absent"}, Optional: boolp(true)}),
		dir:  "kubernetes.io~configmap/conf",
		want: map[string]nodeFile{
			"..data": {Mode: linkMode, Content: "..TS"},
			"..TS":   {Mode: tsDirMode},
		},
	}, {
		name: "secret: the bytes of each key",
		vol:  v1.Volume{Name: "creds", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "creds"}}},
		dir:  "kubernetes.io~secret/creds",
		want: map[string]nodeFile{
			"..data":    {Mode: linkMode, Content: "..TS"},
			"..TS":      {Mode: tsDirMode},
			"..TS/user": {Mode: regularFile, Content: "admin"},
			"user":      {Mode: linkMode, Content: "..data/user"},
		},
	}, {
		name: "downwardAPI: labels and annotations as key=\"value\" lines, names, resources",
		vol: v1.Volume{Name: "info", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: []v1.DownwardAPIVolumeFile{
			{Path: "labels", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
			{Path: "annotations", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.annotations"}},
			{Path: "podname", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}},
			{Path: "cpu_limit", ResourceFieldRef: &v1.ResourceFieldSelector{ContainerName: "app", Resource: "limits.cpu", Divisor: resource.MustParse("1m")}},
		}}}},
		dir: "kubernetes.io~downward-api/info",
		want: map[string]nodeFile{
			"..data":           {Mode: linkMode, Content: "..TS"},
			"..TS":             {Mode: tsDirMode},
			"..TS/annotations": {Mode: regularFile, Content: `build="42"`},
			"..TS/cpu_limit":   {Mode: regularFile, Content: "4000"},
			"..TS/labels":      {Mode: regularFile, Content: "app=\"web\"\ntier=\"front\""},
			"..TS/podname":     {Mode: regularFile, Content: "web"},
			"annotations":      {Mode: linkMode, Content: "..data/annotations"},
			"cpu_limit":        {Mode: linkMode, Content: "..data/cpu_limit"},
			"labels":           {Mode: linkMode, Content: "..data/labels"},
			"podname":          {Mode: linkMode, Content: "..data/podname"},
		},
	}, {
		name: "projected: configMap, secret, downwardAPI and a service account token together",
		vol: v1.Volume{Name: "kube-api-access", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
			{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token", Audience: "vault", ExpirationSeconds: int64p(3607)}},
			{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "settings"}, Items: []v1.KeyToPath{{Key: "mode", Path: "mode"}}}},
			{Secret: &v1.SecretProjection{LocalObjectReference: v1.LocalObjectReference{Name: "creds"}}},
			{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{{Path: "namespace", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}},
		}}}},
		dir: "kubernetes.io~projected/kube-api-access",
		want: map[string]nodeFile{
			"..data":         {Mode: linkMode, Content: "..TS"},
			"..TS":           {Mode: tsDirMode},
			"..TS/mode":      {Mode: regularFile, Content: "blue"},
			"..TS/namespace": {Mode: regularFile, Content: "shop"},
			"..TS/token":     {Mode: regularFile, Content: "token-1"},
			"..TS/user":      {Mode: regularFile, Content: "admin"},
			"mode":           {Mode: linkMode, Content: "..data/mode"},
			"namespace":      {Mode: linkMode, Content: "..data/namespace"},
			"token":          {Mode: linkMode, Content: "..data/token"},
			"user":           {Mode: linkMode, Content: "..data/user"},
		},
	}, {
		name:    "projected token with fsGroup: 0600 made group-readable",
		vol:     v1.Volume{Name: "tok", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token"}}}}}},
		fsGroup: int64p(3000),
		dir:     "kubernetes.io~projected/tok",
		want: map[string]nodeFile{
			"..data":     {Mode: linkMode, Content: "..TS"},
			"..TS":       {Mode: "dgrwxr-xr-x", GID: 3000},
			"..TS/token": {Mode: "-rw-r-----", GID: 3000, Content: "token-1"},
			"token":      {Mode: linkMode, Content: "..data/token"},
		},
	}, {
		name: "emptyDir: an empty directory anyone may write",
		vol:  v1.Volume{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		dir:  "kubernetes.io~empty-dir",
		want: map[string]nodeFile{"scratch": {Mode: "drwxrwxrwx"}},
	}, {
		name:    "tmpfs emptyDir with fsGroup: setgid, sticky, the group's",
		vol:     v1.Volume{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory}}},
		fsGroup: int64p(2000),
		dir:     "kubernetes.io~empty-dir",
		want:    map[string]nodeFile{"scratch": {Mode: "dgtrwxrwxrwx", GID: 2000}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := newUnitKubelet(t, false, objs...)
			tokens := 0
			u.client.PrependReactor("create", "serviceaccounts", func(a k8stesting.Action) (bool, runtime.Object, error) {
				tokens++
				tr := a.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenRequest).DeepCopy()
				tr.Status.Token = "token-" + string(rune('0'+tokens))
				return true, tr, nil
			})
			pod := volumePod(tt.vol)
			pod.Spec.SecurityContext = &v1.PodSecurityContext{FSGroup: tt.fsGroup}
			if err := u.preparePod(context.Background(), pod); err != nil {
				t.Fatalf("preparePod: %v", err)
			}
			got := readTree(t, u.nodeFS, podVolumesDir(pod.UID)+"/"+tt.dir)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("volume on the node (-want +got):\n%s", diff)
			}
		})
	}
}

// TestMountVolumesRefusesBadInput: a volume that cannot be set up gives a FailedMount event
// naming it with upstream's wording, the sync fails (the containers wait) and nothing is
// written for it.
func TestMountVolumesRefusesBadInput(t *testing.T) {
	hostPathType := func(t v1.HostPathType) *v1.HostPathType { return &t }
	tests := []struct {
		name       string
		standalone bool
		vol        v1.Volume
		wantEvent  string
	}{{
		name:      "configMap that does not exist",
		vol:       v1.Volume{Name: "conf", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "absent"}}}},
		wantEvent: `MountVolume.SetUp failed for volume "conf" : configmap "absent" not found`,
	}, {
		name:      "secret that does not exist",
		vol:       v1.Volume{Name: "creds", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "absent"}}},
		wantEvent: `MountVolume.SetUp failed for volume "creds" : secret "absent" not found`,
	}, {
		name: "an item's key the configMap does not have",
		vol: v1.Volume{Name: "conf", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
			LocalObjectReference: v1.LocalObjectReference{Name: "settings"}, Items: []v1.KeyToPath{{Key: "nope", Path: "x"}}}}},
		wantEvent: `MountVolume.SetUp failed for volume "conf" : configmap references non-existent config key: nope`,
	}, {
		name: "an item's path that goes up",
		vol: v1.Volume{Name: "conf", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
			LocalObjectReference: v1.LocalObjectReference{Name: "settings"}, Items: []v1.KeyToPath{{Key: "mode", Path: "../escape"}}}}},
		wantEvent: `MountVolume.SetUp failed for volume "conf" : invalid path: must not contain '..': ../escape`,
	}, {
		name: "downward API field that does not exist",
		vol: v1.Volume{Name: "info", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: []v1.DownwardAPIVolumeFile{
			{Path: "x", FieldRef: &v1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}}}}},
		wantEvent: `MountVolume.SetUp failed for volume "info" : unsupported fieldPath: spec.nodeName`,
	}, {
		name:      "hostPath Directory that does not exist",
		vol:       v1.Volume{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/srv/data", Type: hostPathType(v1.HostPathDirectory)}}},
		wantEvent: `MountVolume.SetUp failed for volume "host" : hostPath type check failed: /srv/data is not a directory`,
	}, {
		name:      "hostPath File that is a directory",
		vol:       v1.Volume{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/etc", Type: hostPathType(v1.HostPathFile)}}},
		wantEvent: `MountVolume.SetUp failed for volume "host" : hostPath type check failed: /etc is not a file`,
	}, {
		name:      "hostPath Socket",
		vol:       v1.Volume{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/run/x.sock", Type: hostPathType(v1.HostPathSocket)}}},
		wantEvent: `MountVolume.SetUp failed for volume "host" : hostPath type check failed: /run/x.sock is not a socket file`,
	}, {
		name:      "hostPath with ..",
		vol:       v1.Volume{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/srv/../etc"}}},
		wantEvent: "MountVolume.SetUp failed for volume \"host\" : invalid HostPath `/srv/../etc`: must not contain '..'",
	}, {
		name:       "standalone: a token needs the API server",
		standalone: true,
		vol:        v1.Volume{Name: "tok", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token"}}}}}},
		wantEvent:  `MountVolume.SetUp failed for volume "tok" : failed to fetch token: cannot use TokenManager when kubelet is in standalone mode`,
	}, {
		name:       "standalone: a configMap needs the API server",
		standalone: true,
		vol:        v1.Volume{Name: "conf", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "settings"}}}},
		wantEvent:  `MountVolume.SetUp failed for volume "conf" : not supported due to running kubelet in standalone mode`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := newUnitKubelet(t, tt.standalone, configMap("shop", "settings", map[string]string{"mode": "blue"}))
			pod := volumePod(tt.vol)
			err := u.preparePod(context.Background(), pod)
			if err == nil || !strings.Contains(err.Error(), "unmounted volumes=["+tt.vol.Name+"]") {
				t.Fatalf("preparePod error = %v, want one naming the unmounted volume %q", err, tt.vol.Name)
			}
			if got := u.eventMessages("FailedMount"); len(got) != 1 || got[0] != tt.wantEvent {
				t.Errorf("FailedMount events = %q, want %q", got, tt.wantEvent)
			}
			if tt.vol.HostPath == nil {
				if _, err := u.nodeFS.Lstat(volumeHostPath(pod, &tt.vol) + "/" + dataDirName); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("volume written despite the failure (%v)", err)
				}
			}
		})
	}
}

// TestHostPathVolumes: hostPath volumes are the node's own paths; the OrCreate types make
// what is missing.
func TestHostPathVolumes(t *testing.T) {
	typ := func(t v1.HostPathType) *v1.HostPathType { return &t }
	tests := []struct {
		name     string
		src      v1.HostPathVolumeSource
		wantMode string
	}{
		{name: "DirectoryOrCreate makes a 0755 directory", src: v1.HostPathVolumeSource{Path: "/srv/data/cache", Type: typ(v1.HostPathDirectoryOrCreate)}, wantMode: "drwxr-xr-x"},
		{name: "FileOrCreate makes an empty 0644 file", src: v1.HostPathVolumeSource{Path: "/etc/app.conf", Type: typ(v1.HostPathFileOrCreate)}, wantMode: "-rw-r--r--"},
		{name: "Directory that exists", src: v1.HostPathVolumeSource{Path: "/etc", Type: typ(v1.HostPathDirectory)}, wantMode: "drwxr-xr-x"},
		{name: "File that exists", src: v1.HostPathVolumeSource{Path: "/etc/hosts", Type: typ(v1.HostPathFile)}, wantMode: "-rw-r--r--"},
		{name: "no type: nothing checked nor made", src: v1.HostPathVolumeSource{Path: "/srv/none"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := newUnitKubelet(t, true)
			vol := v1.Volume{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &tt.src}}
			pod := volumePod(vol)
			if err := u.preparePod(context.Background(), pod); err != nil {
				t.Fatalf("preparePod: %v", err)
			}
			if got := volumeHostPath(pod, &vol); got != tt.src.Path {
				t.Errorf("host path = %q, want the node's %q", got, tt.src.Path)
			}
			info, err := u.nodeFS.Stat(tt.src.Path)
			if tt.wantMode == "" {
				if !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("%s made (%v), want nothing", tt.src.Path, err)
				}
				return
			}
			if err != nil || info.Mode.String() != tt.wantMode {
				t.Errorf("%s: %v %v, want mode %s", tt.src.Path, info.Mode, err, tt.wantMode)
			}
		})
	}
}

// TestVolumeUpdates: a sync after the ConfigMap (or the pod's labels) changed rewrites the
// volume atomically: a new timestamped directory, ..data swapped to it, links for new keys,
// none for removed ones, the old directory gone. A sync without a change writes nothing,
// and the API is read again only once the copy is older than the TTL.
func TestVolumeUpdates(t *testing.T) {
	u := newUnitKubelet(t, false, configMap("shop", "settings", map[string]string{"mode": "blue", "old": "x"}))
	pod := volumePod(
		v1.Volume{Name: "conf", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "settings"}}}},
		v1.Volume{Name: "info", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: []v1.DownwardAPIVolumeFile{{Path: "labels", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}}},
	)
	ctx := context.Background()
	conf := volumeHostPath(pod, &pod.Spec.Volumes[0])
	info := volumeHostPath(pod, &pod.Spec.Volumes[1])
	dataTarget := func(dir string) string {
		t.Helper()
		l, err := u.nodeFS.Lstat(dir + "/..data")
		if err != nil {
			t.Fatalf("..data of %s: %v", dir, err)
		}
		return l.Target
	}
	read := func(p string) string {
		t.Helper()
		b, err := u.nodeFS.ReadFile(p)
		if err != nil {
			t.Fatalf("read %s: %v", p, err)
		}
		return string(b)
	}
	gets := func() int {
		n := 0
		for _, a := range u.client.Actions() {
			if a.GetVerb() == "get" && a.GetResource().Resource == "configmaps" {
				n++
			}
		}
		return n
	}
	if err := u.preparePod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	first := dataTarget(conf)

	// Unchanged: nothing written, and within the TTL the API is not read again.
	u.clk.Step(10 * time.Second)
	if err := u.preparePod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if got := dataTarget(conf); got != first || gets() != 1 {
		t.Fatalf("after an unchanged sync ..data -> %s (was %s), %d reads of the ConfigMap; want no change, 1 read", got, first, gets())
	}

	cm := configMap("shop", "settings", map[string]string{"mode": "green", "new": "y"})
	if _, err := u.client.CoreV1().ConfigMaps("shop").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	u.clk.Step(30 * time.Second) // the copy is now older than the TTL
	if err := u.preparePod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	second := dataTarget(conf)
	if second == first || !tsDirPattern.MatchString(second) {
		t.Fatalf("..data -> %q after the update, want a new timestamped directory (was %q)", second, first)
	}
	if got := read(conf + "/mode"); got != "green" {
		t.Errorf("mode = %q after the update, want green", got)
	}
	if got := read(conf + "/new"); got != "y" {
		t.Errorf("new key = %q, want y", got)
	}
	for _, gone := range []string{conf + "/old", conf + "/" + first} {
		if _, err := u.nodeFS.Lstat(gone); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s still there after the update (%v)", path.Base(gone), err)
		}
	}

	// The pod's labels changed (an API update of the pod): the downward API follows.
	pod = pod.DeepCopy()
	pod.Labels["tier"] = "back"
	if err := u.preparePod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if got := read(info + "/labels"); got != "app=\"web\"\ntier=\"back\"" {
		t.Errorf("labels file = %q after the label change", got)
	}
}

// TestAtomicWriterPaths: payload paths are checked as upstream's validatePath checks them.
func TestAtomicWriterPaths(t *testing.T) {
	tests := []struct{ path, wantErr string }{
		{path: "ok/nested/file"},
		{path: "x/../y", wantErr: "invalid path: must not contain '..': x/../y"},
		{path: "/abs", wantErr: "invalid path: must be relative path: /abs"},
		{path: "..hidden", wantErr: "invalid path: must not start with '..': ..hidden"},
		{path: "", wantErr: `invalid path: must not be empty: ""`},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			nodeFS := vfs.New(nil)
			if err := nodeFS.MkdirAll("/v", 0o755, 0, 0); err != nil {
				t.Fatal(err)
			}
			w := &atomicWriter{fs: nodeFS, targetDir: "/v", now: func() time.Time { return epoch }}
			_, err := w.write(map[string]fileProjection{tt.path: {data: []byte("x"), mode: 0o644}})
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || err.Error() != tt.wantErr) {
				t.Errorf("write(%q) error = %v, want %q", tt.path, err, tt.wantErr)
			}
		})
	}
}

// TestUnmountAndCleanup: a terminated pod's volumes go (not its hostPath), and housekeeping
// removes the directories of pods the kubelet no longer has.
func TestUnmountAndCleanup(t *testing.T) {
	u := newUnitKubelet(t, true)
	dirType := v1.HostPathDirectoryOrCreate
	keep := volumePod(
		v1.Volume{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		v1.Volume{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/srv/keep", Type: &dirType}}},
	)
	gone := keep.DeepCopy()
	gone.UID, gone.Name = "uid-gone", "gone"
	ctx := context.Background()
	for _, p := range []*v1.Pod{keep, gone} {
		if err := u.preparePod(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	u.unmountVolumes(ctx, keep.UID)
	if _, err := u.nodeFS.Stat(podVolumesDir(keep.UID)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("volumes of the terminated pod still there (%v)", err)
	}
	if _, err := u.nodeFS.Stat("/srv/keep"); err != nil {
		t.Errorf("the hostPath went with the pod: %v", err)
	}
	u.cleanupOrphanedPodDirs(ctx, func(uid types.UID) bool { return uid == keep.UID })
	entries, err := u.nodeFS.ReadDir(podsDir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	if diff := cmp.Diff([]string{string(keep.UID)}, names); diff != "" {
		t.Errorf("pod directories after cleanup (-want +got):\n%s", diff)
	}
}
