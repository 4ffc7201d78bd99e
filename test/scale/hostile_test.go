//go:build scale && linux

package scale

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// hostile are the programs of issue 46's first target, each in a pod of its own beside a
// quiet pod: what one container can do to the process that simulates it.
var hostile = map[string]string{
	"hog":     `{name: main, image: busybox, command: [sh, -c, 's=x; while true; do s="$s$s"; done'], resources: {limits: {memory: 64Mi}}}`,
	"dd":      `{name: main, image: busybox, command: [sh, -c, 'dd if=/dev/zero of=/tmp/big bs=1M count=4000; sleep infinity'], resources: {limits: {ephemeral-storage: 1Gi}}}`,
	"bomb":    `{name: main, image: busybox, command: [sh, -c, ':(){ :|:& };:; sleep infinity']}`,
	"recurse": `{name: main, image: busybox, command: [sh, -c, 'f() { f; }; f']}`,
	"flood":   `{name: main, image: busybox, command: [sh, -c, 'while :; do echo flooding the log with a line of text; done']}`,
	"yes":     `{name: main, image: busybox, command: [sh, -c, 'yes > /dev/null']}`,
	"quiet":   `{name: main, image: busybox, command: [sh, -c, 'while true; do echo tick; sleep 1; done']}`,
}

func manifest(name, restartPolicy, container string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata: {name: %s}\nspec:\n  restartPolicy: %s\n  terminationGracePeriodSeconds: 1\n  containers:\n  - %s\n", name, restartPolicy, container)
}

// podView is what the tests read of GET /pods.
type podView struct {
	Metadata struct{ Name string } `json:"metadata"`
	Status   struct {
		Phase             string `json:"phase"`
		Reason            string `json:"reason"`
		ContainerStatuses []struct {
			RestartCount int `json:"restartCount"`
			State        struct {
				Running    *struct{} `json:"running"`
				Terminated *struct {
					ExitCode int    `json:"exitCode"`
					Reason   string `json:"reason"`
				} `json:"terminated"`
			} `json:"state"`
		} `json:"containerStatuses"`
	} `json:"status"`
}

func (d *daemon) pods() map[string]podView {
	d.t.Helper()
	var list struct{ Items []podView }
	if err := json.Unmarshal(d.get("/pods"), &list); err != nil {
		d.t.Fatal(err)
	}
	out := map[string]podView{}
	for _, p := range list.Items {
		out[strings.TrimSuffix(p.Metadata.Name, "-hostile")] = p
	}
	return out
}

// ephemeral is pod's ephemeral storage in /stats/summary, 0 when it is not there.
func (d *daemon) ephemeral(pod string) uint64 {
	d.t.Helper()
	var summary struct {
		Pods []struct {
			PodRef           struct{ Name string } `json:"podRef"`
			EphemeralStorage *struct {
				UsedBytes uint64 `json:"usedBytes"`
			} `json:"ephemeral-storage"`
		} `json:"pods"`
	}
	if err := json.Unmarshal(d.get("/stats/summary"), &summary); err != nil {
		d.t.Fatal(err)
	}
	for _, p := range summary.Pods {
		if p.PodRef.Name == pod && p.EphemeralStorage != nil {
			return p.EphemeralStorage.UsedBytes
		}
	}
	return 0
}

func running(p podView) bool {
	return p.Status.Phase == "Running" && len(p.Status.ContainerStatuses) > 0 && p.Status.ContainerStatuses[0].State.Running != nil
}

// TestHostilePrograms: issue 46's first target. All at once beside a quiet pod: a memory
// hog limited to 64Mi, a 4 GB dd limited to 1Gi of ephemeral storage, a fork bomb,
// unbounded recursion, a log flood, yes > /dev/null and 200 busy loops. The daemon stays
// under 1 GB, answers GET /pods in under 100 ms (median of 10), runs a pod added then
// within 5 s; the quiet pod keeps running; the hog ends OOMKilled with 137, and the dd
// pod's 4000 MiB show as its ephemeral storage. These are static pods, which the kubelet
// never evicts (critical pods); configs/scenarios/ephemeral-storage.yaml evicts an API
// pod for the same file.
func TestHostilePrograms(t *testing.T) {
	dir := t.TempDir()
	pods := filepath.Join(dir, "pods")
	if err := os.Mkdir(pods, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nstaticPodPath: pods\nmaxPods: 300\n" + standaloneAuth +
		"---\napiVersion: minikubelet.io/v1alpha1\nkind: SimulatorConfiguration\nnodeName: hostile\n"
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	write := func(name, policy, container string) {
		if err := os.WriteFile(filepath.Join(pods, name+".yaml"), []byte(manifest(name, policy, container)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, c := range hostile {
		policy := "Always"
		if name == "hog" || name == "dd" {
			policy = "Never"
		}
		write(name, policy, c)
	}
	for i := 0; i < 200; i++ {
		write(fmt.Sprintf("busy-%03d", i), "Always", `{name: main, image: busybox, command: [sh, -c, 'while :; do :; done']}`)
	}
	d := startDaemon(t, []string{"--config", filepath.Join(dir, "config.yaml"), "--read-only-port=0", "--port=0"})
	if !d.poll(2*time.Minute, func() bool {
		n := 0
		for _, p := range d.pods() {
			if running(p) || p.Status.Phase == "Failed" {
				n++
			}
		}
		return n >= 200
	}) {
		t.Fatal("the pods did not start within 2m")
	}

	var peak int64
	sample := func() {
		rss, _ := d.memory()
		peak = max(peak, rss)
	}
	// The hog is OOM-killed; the dd pod's file is on its writable layer.
	var hog podView
	var ddBytes uint64
	ok := d.poll(time.Minute, func() bool {
		sample()
		hog = d.pods()["hog"]
		ddBytes = d.ephemeral("dd-hostile")
		return hog.Status.Phase == "Failed" && ddBytes >= 4000<<20
	})
	if !ok {
		t.Errorf("after a minute: hog %s, dd's ephemeral storage %d MiB", hog.Status.Phase, ddBytes>>20)
	}
	if cs := hog.Status.ContainerStatuses; len(cs) == 0 || cs[0].State.Terminated == nil || cs[0].State.Terminated.ExitCode != 137 || cs[0].State.Terminated.Reason != "OOMKilled" {
		t.Errorf("hog: %+v, want terminated 137 OOMKilled", hog.Status)
	}

	// GET /pods, median of 10.
	var ms []float64
	for i := 0; i < 10; i++ {
		start := time.Now()
		d.drain("/pods")
		ms = append(ms, msSince(start))
		sample()
	}
	sort.Float64s(ms)
	get := (ms[4] + ms[5]) / 2

	// A pod added now.
	added := time.Now()
	write("late", "Always", `{name: main, image: busybox, command: [sh, -c, 'echo here; sleep infinity']}`)
	if !d.poll(30*time.Second, func() bool { sample(); return running(d.pods()["late"]) }) {
		t.Errorf("a pod added under load is not Running after 30s")
	}
	late := time.Since(added)

	for i := 0; i < 10; i++ {
		sample()
		time.Sleep(time.Second)
	}
	quiet := d.pods()["quiet"]
	if !running(quiet) || quiet.Status.ContainerStatuses[0].RestartCount != 0 {
		t.Errorf("quiet: %+v, want Running without restarts", quiet.Status)
	}
	_, hwm := d.memory()
	t.Logf("\n| RSS peak (sampled) | VmHWM | GET /pods median of 10 | a pod added, Running after | hog | dd's ephemeral storage |\n|---|---|---|---|---|---|\n| %d MiB | %d MiB | %.1f ms | %v | %s | %d MiB |",
		peak>>10, hwm>>10, get, late.Round(10*time.Millisecond), hog.Status.ContainerStatuses[0].State.Terminated.Reason, ddBytes>>20)
	if hwm > 1<<20 {
		t.Errorf("the daemon's peak RSS %d MiB is over 1 GiB", hwm>>10)
	}
	if get > 100 {
		t.Errorf("GET /pods took %.1f ms (median of 10), over 100 ms", get)
	}
	if late > 5*time.Second {
		t.Errorf("a pod added under load ran after %v, over 5s", late)
	}
}

// TestBusyAtTheirLimit: issue 46's second target. 1,000 pods each running a busy loop
// under limits.cpu 100m each show about 100m of use in /stats/summary, while the daemon's
// own CPU stays within runtime.programCPU (250m here) and what its kubelet loops take,
// and GET /pods answers in under 100 ms.
func TestBusyAtTheirLimit(t *testing.T) {
	const n = 1000
	dir := t.TempDir()
	pods := filepath.Join(dir, "pods")
	if err := os.Mkdir(pods, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nstaticPodPath: pods\nmaxPods: %d\n%s---\napiVersion: minikubelet.io/v1alpha1\nkind: SimulatorConfiguration\nnodeName: busy\nmachine: {cpu: \"128\", memory: 256Gi}\nruntime: {programCPU: 250m}\n", n+10, standaloneAuth)
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		m := manifest(fmt.Sprintf("busy-%04d", i), "Always", `{name: main, image: busybox, command: [sh, -c, 'while :; do :; done'], resources: {limits: {cpu: 100m}}}`)
		if err := os.WriteFile(filepath.Join(pods, fmt.Sprintf("busy-%04d.yaml", i)), []byte(m), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	d := startDaemon(t, []string{"--config", filepath.Join(dir, "config.yaml"), "--read-only-port=0", "--port=0", "--metrics-prefix=kubelet_"})
	if !d.poll(3*time.Minute, func() bool { return d.metric("kubelet_pod_start_duration_seconds_count") >= n }) {
		t.Fatalf("%.0f of %d pods Running after 3m", d.metric("kubelet_pod_start_duration_seconds_count"), n)
	}
	time.Sleep(30 * time.Second) // past the start's burst of syncs
	cpu0, wall0 := d.cpuSeconds(), time.Now()
	time.Sleep(30 * time.Second)
	daemonCPU := (d.cpuSeconds() - cpu0) / time.Since(wall0).Seconds()

	var summary struct {
		Pods []struct {
			PodRef     struct{ Name string } `json:"podRef"`
			Containers []struct {
				CPU struct {
					UsageNanoCores uint64 `json:"usageNanoCores"`
				} `json:"cpu"`
			} `json:"containers"`
		} `json:"pods"`
	}
	if err := json.Unmarshal(d.get("/stats/summary"), &summary); err != nil {
		t.Fatal(err)
	}
	var milli []float64
	for _, p := range summary.Pods {
		for _, c := range p.Containers {
			milli = append(milli, float64(c.CPU.UsageNanoCores)/1e6)
		}
	}
	sort.Float64s(milli)
	if len(milli) != n {
		t.Fatalf("%d containers in the summary, want %d", len(milli), n)
	}
	lo, med, hi := milli[0], milli[n/2], milli[n-1]
	get := d.medianGet("/pods")
	t.Logf("\n| containers | CPU use min / median / max | daemon CPU (steady 30s) | GET /pods median of 7 |\n|---|---|---|---|\n| %d | %.0fm / %.0fm / %.0fm | %.0fm | %.1f ms |",
		n, lo, med, hi, daemonCPU*1000, get)
	if lo < 90 || hi > 110 {
		t.Errorf("containers' CPU use from %.0fm to %.0fm, want about 100m each", lo, hi)
	}
	if daemonCPU > 0.5 {
		t.Errorf("the daemon used %.0fm of CPU, over the 250m program budget plus 250m for its own loops", daemonCPU*1000)
	}
	if get > 100 {
		t.Errorf("GET /pods took %.1f ms, over 100 ms", get)
	}
}
