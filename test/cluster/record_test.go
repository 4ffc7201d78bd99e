package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minikubelet/minikubelet/internal/eventually"
)

// TestRecordedClusterRunReplays: a node of a real cluster run with --record replays in
// simulate against its in-process API. The API server gave its pods what a cluster gives
// every pod (the kube-api-access projected volume: a service account token and the
// kube-root-ca.crt ConfigMap); the pods also read a ConfigMap and a Secret. The recording
// holds the pods, those objects (the Secret's values redacted) and the deletion, and in
// the replay the pods reach the phases they reached live.
func TestRecordedClusterRunReplays(t *testing.T) {
	const node = "mk-rec"
	cp := startControlPlane(t, node)
	bin := buildDaemon(t)
	ctx := context.Background()
	rec := filepath.Join(t.TempDir(), "cluster-recording.yaml")
	kubeconfig := cp.kubeconfig(t, node, nodeToken+"-0")
	p := startProc(t, cp.dir, node, bin, "--kubeconfig", kubeconfig, "--hostname-override", node,
		"--read-only-port", strconv.Itoa(freePort(t)), "--port", "0", "--pod-manifest-path", t.TempDir(), "--record", rec)
	waitNodeReady(t, cp, node, 0)
	waitServiceAccount(t, cp)

	if _, err := cp.admin.CoreV1().ConfigMaps("default").Create(ctx, &v1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "web-config"}, Data: map[string]string{"greeting": "hello"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cp.admin.CoreV1().Secrets("default").Create(ctx, &v1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "web-secret"}, Data: map[string][]byte{"password": []byte("s3cret")}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mkPod := func(name, script string, restart v1.RestartPolicy) *v1.Pod {
		return &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec: v1.PodSpec{NodeName: node, RestartPolicy: restart,
				Containers: []v1.Container{{Name: "main", Image: "busybox:1.36", Command: []string{"sh", "-c", script},
					Env: []v1.EnvVar{{Name: "PASSWORD", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{
						LocalObjectReference: v1.LocalObjectReference{Name: "web-secret"}, Key: "password"}}}},
					VolumeMounts: []v1.VolumeMount{{Name: "config", MountPath: "/config"}}}},
				Volumes: []v1.Volume{{Name: "config", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
					LocalObjectReference: v1.LocalObjectReference{Name: "web-config"}}}}}},
		}
	}
	for _, pod := range []*v1.Pod{
		mkPod("server", "cat /config/greeting; while true; do sleep 1; done", v1.RestartPolicyAlways),
		mkPod("job", "cat /config/greeting; sleep 2", v1.RestartPolicyNever),
	} {
		if _, err := cp.admin.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	phase := func(name string) v1.PodPhase {
		pod, err := cp.admin.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return ""
		}
		return pod.Status.Phase
	}
	eventually.Within(t, 60*time.Second, "server Running and job Succeeded", func() (bool, string) {
		return phase("server") == v1.PodRunning && phase("job") == v1.PodSucceeded, fmt.Sprintf("server %s, job %s", phase("server"), phase("job"))
	})
	if err := cp.admin.CoreV1().Pods("default").Delete(ctx, "server", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	eventually.Within(t, 60*time.Second, "server gone", func() (bool, string) {
		_, err := cp.admin.CoreV1().Pods("default").Get(ctx, "server", metav1.GetOptions{})
		return err != nil, fmt.Sprint(err)
	})
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatal("the node did not stop within 30s of SIGINT")
	}

	raw, err := os.ReadFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	for _, want := range []string{"cluster: true", "kind: ConfigMap", "name: web-config", "name: kube-root-ca.crt", "kind: Secret", "name: web-secret", "name: server", "name: job", "delete:", "duration:"} {
		if !strings.Contains(text, want) {
			t.Errorf("the recording has no %q", want)
		}
	}
	if strings.Contains(text, "s3cret") || strings.Contains(text, "czNjcmV0") {
		t.Error("the recording holds the Secret's value")
	}
	out, err := exec.Command(bin, "simulate", "-f", rec, "-o", "json").Output()
	if err != nil {
		t.Fatalf("simulate -f recording: %v\n%s\nrecording:\n%s", err, out, raw)
	}
	var res struct {
		Timeline []struct{ At, Subject, Text string }
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatal(err)
	}
	phases := map[string][]string{}
	for _, e := range res.Timeline {
		name, ok := strings.CutPrefix(e.Subject, "pod ")
		if !ok {
			continue
		}
		for _, f := range strings.Fields(e.Text) {
			if ph, ok := strings.CutPrefix(f, "phase="); ok {
				if n := len(phases[name]); n == 0 || phases[name][n-1] != ph {
					phases[name] = append(phases[name], ph)
				}
			}
		}
	}
	for name, want := range map[string]string{"server": "Pending Running", "job": "Pending Running Succeeded"} {
		if got := strings.Join(phases[name], " "); !strings.HasPrefix(got, want) {
			t.Errorf("pod %s replayed through %q, want %q as live", name, got, want)
		}
	}
	if t.Failed() {
		t.Logf("recording:\n%s\nreplay:\n%s", raw, out)
	}
}
