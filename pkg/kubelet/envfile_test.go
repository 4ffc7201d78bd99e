package kubelet

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/featuregate"
	"github.com/minikubelet/minikubelet/pkg/features"
)

// TestParseEnvFile: v1.37's env file format: single-quoted values taken literally, over
// several lines if need be, comments and blank lines skipped, the first definition winning,
// and an error naming the line for anything else before the key.
func TestParseEnvFile(t *testing.T) {
	tests := []struct {
		name, file, key string
		want, wantErr   string
	}{
		{name: "a value", file: "A='one'\nB='two'\n", key: "B", want: "two"},
		{name: "what the e2e init container writes", file: "CONFIG_1='value1'\nCONFIG_2='value2'\n", key: "CONFIG_2", want: "value2"},
		{name: "literal: no escapes, no expansion", file: `A='$HOME \n "x"'`, key: "A", want: `$HOME \n "x"`},
		{name: "leading blanks, comments, blank lines", file: "# settings\n\n   \t\n  A='1' # the first\n", key: "A", want: "1"},
		{name: "several lines", file: "A='line 1\n  line 2\n'\nB='b'", key: "A", want: "line 1\n  line 2\n"},
		{name: "the first definition wins", file: "A='first'\nA='second'\n", key: "A", want: "first"},
		{name: "lines after the key are not read", file: "A='a'\nthis is not a line\n", key: "A", want: "a"},
		{name: "a missing key", file: "A='a'\n", key: "B", want: ""},
		{name: "an empty file", file: "", key: "A", want: ""},
		{name: "blanks after '=' set it empty", file: "A= 'x'\n", key: "A", want: ""},
		{name: "blanks after '=' elsewhere are skipped", file: "A= x y z\nB='b'\n", key: "B", want: "b"},
		{name: "an empty value", file: "A=''\n", key: "A", want: ""},
		{name: "CRLF line ends", file: "A='a'\r\nB='b'\r\n", key: "B", want: "b"},
		{name: "no '='", file: "A='a'\nexport B\n", key: "B", wantErr: "invalid environment variable format at line 2: missing '='"},
		{name: "no name", file: "='a'\n", key: "A", wantErr: "invalid environment variable format at line 1: empty variable name"},
		{name: "blanks before '='", file: "A ='a'\n", key: "A", wantErr: "invalid environment variable format at line 1: whitespace before '=' is not allowed"},
		{name: "unquoted", file: "A=a\n", key: "A", wantErr: "invalid environment variable format at line 1: value must be enclosed in single quotes"},
		{name: "double quotes", file: `A="a"`, key: "A", wantErr: "invalid environment variable format at line 1: value must be enclosed in single quotes"},
		{name: "after the closing quote", file: "\nA='a'b\n", key: "A", wantErr: "invalid environment variable format at line 2: unexpected content after closing quote"},
		{name: "after a quote closed lines later", file: "A='a\nb' c\n", key: "A", wantErr: "invalid environment variable format at line 2: unexpected content after closing quote"},
		{name: "never closed", file: "X='x'\nA='a\nb\n", key: "A", wantErr: "invalid environment variable format starting at line 2: unclosed single quote"},
		{name: "a bad line before the key", file: "oops\nA='a'\n", key: "A", wantErr: "invalid environment variable format at line 1: missing '='"},
		{name: "a line over 64 KiB", file: "A='" + strings.Repeat("x", 70000) + "'\n", key: "A", wantErr: "bufio.Scanner: token too long"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseEnvFile([]byte(tt.file), tt.key)
			if tt.wantErr != "" || err != nil {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if got != tt.want {
				t.Errorf("value = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestSecureJoin: a path inside a volume, its links followed as if the volume were "/".
func TestSecureJoin(t *testing.T) {
	u := newUnitKubelet(t, true)
	const root = "/var/lib/kubelet/pods/u/volumes/kubernetes.io~empty-dir/config"
	fs := u.nodeFS
	for _, d := range []string{root + "/sub", "/etc"} {
		if err := fs.MkdirAll(d, 0o755, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range []struct{ target, at string }{
		{"sub", root + "/rel"},
		{"/etc", root + "/abs"},
		{"../../../../../../..", root + "/up"},
		{"loop", root + "/loop"},
	} {
		if err := fs.Symlink(l.target, l.at); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct{ in, want, wantErr string }{
		{in: "config.env", want: root + "/config.env"},
		{in: "sub/a.env", want: root + "/sub/a.env"},
		{in: "rel/a.env", want: root + "/sub/a.env"},
		{in: "abs/passwd", want: root + "/etc/passwd"},
		{in: "up/etc/passwd", want: root + "/etc/passwd"},
		{in: "../../../etc/passwd", want: root + "/etc/passwd"},
		{in: "/sub//./a.env", want: root + "/sub/a.env"},
		{in: "loop/x", wantErr: "Symbolic link loop"}, // vfs.ELOOP
	}
	for _, tt := range tests {
		got, err := secureJoin(fs, root, tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("secureJoin(%q) error = %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("secureJoin(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

// TestFileKeyRef: env vars from a key of a file in an emptyDir the kubelet set up, with
// upstream's errors (the container then waits with CreateContainerConfigError) and the
// optional references skipped; with the EnvFiles gate off the variable is set, empty.
func TestFileKeyRef(t *testing.T) {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "u-env"},
		Spec: v1.PodSpec{Volumes: []v1.Volume{
			{Name: "config", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
			{Name: "unused", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		}},
	}
	dir := podVolumeDir(pod.UID, pluginEmptyDir, "config")
	ref := func(file, key string, optional bool) *v1.EnvVarSource {
		return &v1.EnvVarSource{FileKeyRef: &v1.FileKeySelector{VolumeName: "config", Path: file, Key: key, Optional: &optional}}
	}
	tests := []struct {
		name    string
		gateOff bool
		env     []v1.EnvVar
		want    []cri.KeyValue
		wantErr string
	}{
		{name: "keys of the file", env: []v1.EnvVar{{Name: "ONE", ValueFrom: ref("config.env", "CONFIG_1", false)}, {Name: "TWO", ValueFrom: ref("config.env", "CONFIG_2", false)}},
			want: []cri.KeyValue{{Key: "ONE", Value: "value1"}, {Key: "TWO", Value: "value2"}}},
		{name: "an optional missing key is left out", env: []v1.EnvVar{{Name: "X", ValueFrom: ref("config.env", "MISSING", true)}, {Name: "ONE", ValueFrom: ref("config.env", "CONFIG_1", true)}},
			want: []cri.KeyValue{{Key: "ONE", Value: "value1"}}},
		{name: "a missing key", env: []v1.EnvVar{{Name: "X", ValueFrom: ref("config.env", "MISSING", false)}},
			wantErr: `environment variable key "MISSING" not found in file "` + dir + `/config.env"`},
		{name: "an empty value is missing", env: []v1.EnvVar{{Name: "X", ValueFrom: ref("config.env", "EMPTY", false)}},
			wantErr: `environment variable key "EMPTY" not found in file "` + dir + `/config.env"`},
		{name: "a missing file", env: []v1.EnvVar{{Name: "X", ValueFrom: ref("absent.env", "A", false)}}, wantErr: "couldn't parse env file"},
		{name: "a missing file, optional", env: []v1.EnvVar{{Name: "X", ValueFrom: ref("absent.env", "A", true)}}, wantErr: "couldn't parse env file"},
		{name: "a bad file", env: []v1.EnvVar{{Name: "X", ValueFrom: ref("bad.env", "A", false)}}, wantErr: "couldn't parse env file"},
		{name: "a volume no container mounts", env: []v1.EnvVar{{Name: "X", ValueFrom: &v1.EnvVarSource{FileKeyRef: &v1.FileKeySelector{VolumeName: "unused", Path: "a", Key: "A"}}}},
			wantErr: `cannot find the volume "unused" referenced by FileKeyRef`},
		{name: "the gate off: set, empty", gateOff: true, env: []v1.EnvVar{{Name: "ONE", ValueFrom: ref("config.env", "CONFIG_1", false)}},
			want: []cri.KeyValue{{Key: "ONE", Value: ""}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := newUnitKubelet(t, true)
			if tt.gateOff {
				g := features.NewFeatureGate()
				if err := g.SetFromMap(map[string]bool{string(features.EnvFiles): false}); err != nil {
					t.Fatal(err)
				}
				u.gate = featuregate.FeatureGate(g)
			}
			if err := u.nodeFS.MkdirAll(dir, 0o777, 0, 0); err != nil {
				t.Fatal(err)
			}
			u.volumes.add(pod.UID, "config")
			for name, content := range map[string]string{
				"config.env": "CONFIG_1='value1'\nCONFIG_2='value2'\nEMPTY=''\n",
				"bad.env":    "A=unquoted\n",
			} {
				if err := u.nodeFS.WriteFile(dir+"/"+name, []byte(content), 0o644, false, 0, 0); err != nil {
					t.Fatal(err)
				}
			}
			got, err := u.makeEnvironmentVariables(context.Background(), pod, &v1.Container{Name: "c", Env: tt.env}, nil)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("environment (-want +got):\n%s", diff)
			}
		})
	}
}

// TestEnvFilesThroughTheKubelet follows the upstream e2e specs (FileKeyRef): an init
// container writes KEY='value' lines into an emptyDir, and the app container's fileKeyRef
// variables hold them; a key that is not in the file keeps the container waiting with
// CreateContainerConfigError and upstream's message, and a Failed event says it.
func TestEnvFilesThroughTheKubelet(t *testing.T) {
	pod := func(key string, optional bool) string {
		return `apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  restartPolicy: Never
  volumes: [{name: config, emptyDir: {}}]
  initContainers:
  - name: setup-envfile
    image: busybox
    command: [sh, -c, "echo CONFIG_1=\\'value1\\' > /data/config.env && echo CONFIG_2=\\'value 2\\' >> /data/config.env"]
    volumeMounts: [{name: config, mountPath: /data}]
  containers:
  - name: main
    image: busybox
    command: [sh, -c, 'env | grep CONFIG_ | sort']
    env:
    - {name: CONFIG_1, valueFrom: {fileKeyRef: {volumeName: config, path: config.env, key: CONFIG_1}}}
    - {name: CONFIG_2, valueFrom: {fileKeyRef: {volumeName: config, path: config.env, key: ` + key + `, optional: ` + strconv.FormatBool(optional) + `}}}
`
	}
	full := "p-" + testNode
	t.Run("the file's values", func(t *testing.T) {
		h := newHarness(t)
		h.write("p.yaml", pod("CONFIG_2", false))
		h.until(60, "Succeeded", func() bool { return h.phase(full) == v1.PodSucceeded }, h.describe)
		if got, want := h.containerLog(full), "CONFIG_1=value1\nCONFIG_2=value 2\n"; got != want {
			t.Errorf("the container printed %q, want %q", got, want)
		}
	})
	t.Run("an optional missing key", func(t *testing.T) {
		h := newHarness(t)
		h.write("p.yaml", pod("MISSING", true))
		h.until(60, "Succeeded", func() bool { return h.phase(full) == v1.PodSucceeded }, h.describe)
		if got, want := h.containerLog(full), "CONFIG_1=value1\n"; got != want {
			t.Errorf("the container printed %q, want %q", got, want)
		}
	})
	t.Run("a missing key", func(t *testing.T) {
		h := newHarness(t)
		h.write("p.yaml", pod("MISSING", false))
		var waiting *v1.ContainerStateWaiting
		h.until(60, "CreateContainerConfigError", func() bool {
			p := h.pod(full)
			if p == nil || len(p.Status.ContainerStatuses) == 0 {
				return false
			}
			waiting = p.Status.ContainerStatuses[0].State.Waiting
			return waiting != nil && waiting.Reason == "CreateContainerConfigError"
		}, h.describe)
		dir := podVolumeDir(h.pod(full).UID, pluginEmptyDir, "config")
		want := `environment variable key "MISSING" not found in file "` + dir + `/config.env"`
		if waiting.Message != want {
			t.Errorf("waiting message %q, want %q", waiting.Message, want)
		}
		if e := findEvent(h, "Failed", full); e == nil || e.Message != "Error: "+want {
			t.Errorf("Failed event %+v, want message %q", e, "Error: "+want)
		}
	})
}
