//go:build scale && linux

package scale

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/minikubelet/minikubelet/internal/childproc"
)

var (
	podCounts  = flag.String("pods", "1000", "comma-separated pod counts to run")
	plegs      = flag.String("pleg", "generic,evented", "comma-separated PLEGs to run: generic, evented")
	capacity   = flag.Int("channel-capacity", 0, "pleg.channelCapacity; 0 keeps the default (1000)")
	emulated   = flag.String("emulated-version", "", "the daemon's --emulated-version (1.34 to 1.37): the cost of a node of an older release; empty keeps the newest")
	programCPU = flag.String("program-cpu", "", "the daemon's --program-cpu (the CPU the containers' programs get together); empty keeps its default")
	settle     = flag.Duration("settle", 100*time.Second, "wait after every pod runs before measuring the steady state: past the first resync of the pods (syncFrequency 1m + up to 30s jitter), which all come at once")
	steady     = flag.Duration("steady", time.Minute, "how long the steady-state CPU use is measured (a multiple of fileCheckFrequency, 20s)")
	startMax   = flag.Duration("start-timeout", 3*time.Minute, "how long the pods may take to all run")
	containers = flag.Int("containers", 2, "containers per pod")
	command    = flag.String("command", "while true; do echo tick; sleep 5; done", "the shell script every container runs (sh -c): the workload whose cost is measured; empty: the image's own command")
	image      = flag.String("image", "busybox:1.36", "the containers' image, or a comma-separated list: container j of a pod gets image j mod the list's length (\"nginx:1.27,redis:7.2\" with -command '' runs both images' own entrypoints; one the catalogue does not know, with -command '', runs until stopped without a simulated program)")
	addLater   = flag.Bool("add-while-running", false, "write the manifests once the daemon runs (fsnotify picks them up) instead of before it starts")
	report     = flag.String("report", "", "also write the results to this file as JSON (make bench reads it)")
	profile    = flag.String("profile", "", "write the daemon's CPU profile over the steady window and its heap profile after it (pprof) into this directory")
)

// bin is the minikubelet binary TestMain builds.
var bin string

func TestMain(m *testing.M) {
	flag.Parse()
	dir, err := os.MkdirTemp("", "minikubelet-scale-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "minikubelet")
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	build := exec.Command(goTool, "build", "-o", bin, "../../cmd/minikubelet")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building minikubelet:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// TestDaemonScale runs the real daemon with N static pods for each PLEG and logs what it
// costs: wall time until every pod is Running, CPU used until then, CPU use in the steady
// state, the mean relist time, memory, GET /pods, the time to remove every pod, and the
// PLEG events dropped on the way.
func TestDaemonScale(t *testing.T) {
	var results []result
	for _, p := range strings.Split(*plegs, ",") {
		for _, ns := range strings.Split(*podCounts, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(ns))
			if err != nil || n <= 0 {
				t.Fatalf("-pods: %q is not a positive number", ns)
			}
			p := strings.TrimSpace(p)
			if p != "generic" && p != "evented" {
				t.Fatalf("-pleg: %q is neither generic nor evented", p)
			}
			t.Run(fmt.Sprintf("pleg=%s/pods=%d", p, n), func(t *testing.T) {
				results = append(results, measure(t, n, p == "evented"))
			})
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n| PLEG | pods | all Running after | mean pod start | CPU until then | steady CPU | relist mean | RSS (peak) | GET /pods first, then | GET /metrics | GET /node | all removed after | PLEG events dropped |\n")
	fmt.Fprintf(&b, "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range results {
		fmt.Fprintf(&b, "| %s | %d | %s | %.1fs | %.2fs | %.2f%% | %s | %d MiB (%d MiB) | %.0f ms, %.1f ms (%.1f MB) | %.1f ms | %.1f ms | %s | %.0f |\n",
			r.PLEG, r.Pods, r.ToRunning, r.MeanStart, r.CPUToRunning, r.SteadyCPU, r.RelistMean, r.RSS>>10, r.HWM>>10,
			r.PodsGetFirst, r.PodsGet, float64(r.PodsBytes)/1e6, r.MetricsGet, r.NodeGet, r.Removed, r.Discards)
	}
	if *report != "" {
		j, err := json.MarshalIndent(results, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(*report, j, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Log(b.String())
}

type result struct {
	PLEG          string  `json:"pleg"`
	Pods          int     `json:"pods"`
	Containers    int     `json:"containersPerPod"`
	ToRunning     string  `json:"toRunning"`
	Removed       string  `json:"removed"`
	CPUToRunning  float64 `json:"cpuToRunningSeconds"`
	SteadyCPU     float64 `json:"steadyCPUPercent"`
	MeanStart     float64 `json:"meanPodStartSeconds"` // pod_start_duration_seconds' mean
	RelistMean    string  `json:"relistMean"`
	RSS           int64   `json:"rssKiB"`
	HWM           int64   `json:"peakRSSKiB"`
	PodsGetFirst  float64 `json:"podsGetFirstMs"` // the first GET /pods encodes every pod
	PodsGet       float64 `json:"podsGetMs"`      // the median of the next ones
	MetricsGet    float64 `json:"metricsGetMs"`
	NodeGet       float64 `json:"nodeGetMs"`
	PodsBytes     int     `json:"podsBytes"`
	Discards      float64 `json:"plegEventsDropped"`
	SteadySeconds float64 `json:"steadySeconds"`
}

// podManifest is pod i with c containers, each with requests, as a scale test of a node
// would write them.
func podManifest(i, c int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: pod-%05d\n  namespace: default\nspec:\n  terminationGracePeriodSeconds: 1\n  containers:\n", i)
	for j := 0; j < c; j++ {
		name := "app"
		if j > 0 {
			name = fmt.Sprintf("side-%d", j)
		}
		images := strings.Split(*image, ",")
		fmt.Fprintf(&b, "  - name: %s\n    image: %s\n", name, strings.TrimSpace(images[j%len(images)]))
		if *command != "" {
			fmt.Fprintf(&b, "    command: [sh, -c, %q]\n", *command)
		}
		b.WriteString("    resources:\n      requests:\n        cpu: 10m\n        memory: 16Mi\n")
	}
	return b.String()
}

func measure(t *testing.T, n int, evented bool) result {
	dir := t.TempDir()
	pods := filepath.Join(dir, "pods")
	if err := os.Mkdir(pods, 0o755); err != nil {
		t.Fatal(err)
	}
	// A machine large enough for every pod, and maxPods above n.
	sim := fmt.Sprintf("nodeName: scale\nmachine:\n  cpu: \"%d\"\n  memory: %dGi\n", n/10+4, n/10+8)
	if *capacity > 0 {
		sim += fmt.Sprintf("pleg:\n  channelCapacity: %d\n", *capacity)
	}
	prof := ""
	if *profile != "" {
		prof = "enableDebuggingHandlers: true\nenableProfilingHandler: true\n"
	}
	cfg := fmt.Sprintf("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nstaticPodPath: pods\nmaxPods: %d\n%s%s---\napiVersion: minikubelet.io/v1alpha1\nkind: SimulatorConfiguration\n%s", n+10, standaloneAuth, prof, sim)
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	writeManifests := func() {
		for i := 0; i < n; i++ {
			if err := os.WriteFile(filepath.Join(pods, fmt.Sprintf("pod-%05d.yaml", i)), []byte(podManifest(i, *containers)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !*addLater {
		writeManifests()
	}
	args := []string{"--config", filepath.Join(dir, "config.yaml"), "--read-only-port=0", "--port=0", "--metrics-prefix=kubelet_"}
	if evented {
		args = append(args, "--feature-gates=EventedPLEG=true")
	}
	if *emulated != "" {
		args = append(args, "--emulated-version="+*emulated)
	}
	if *programCPU != "" {
		args = append(args, "--program-cpu="+*programCPU)
	}
	r := result{PLEG: "generic", Pods: n, Containers: *containers, SteadySeconds: steady.Seconds()}
	if evented {
		r.PLEG = "evented"
	}

	start := time.Now()
	d := startDaemon(t, args)
	if *addLater {
		// Into the watched directory, one file after the other, as cp would.
		start = time.Now()
		writeManifests()
	}
	startProfile := make(chan struct{})
	if *profile != "" {
		// The start as well as the steady window: the start is where the pods' programs
		// and the kubelet's first syncs cost the most.
		go func() {
			defer close(startProfile)
			d.saveProfile(fmt.Sprintf("/debug/pprof/profile?seconds=%d", int(startMax.Seconds()/12)), fmt.Sprintf("cpu-start-%s-%d.pprof", r.PLEG, n))
		}()
	} else {
		close(startProfile)
	}
	running := func() float64 { return d.metric("kubelet_pod_start_duration_seconds_count") }
	if !d.poll(*startMax, func() bool { return running() >= float64(n) }) {
		t.Errorf("%.0f of %d pods Running after %v (dropped PLEG events: %.0f; Ready: %s)", running(), n, *startMax,
			d.metric("kubelet_pleg_discard_events"), d.readyMessage())
		r.ToRunning = fmt.Sprintf("> %v (%.0f)", *startMax, running())
	} else {
		r.ToRunning = time.Since(start).Round(100 * time.Millisecond).String()
	}
	r.CPUToRunning = d.cpuSeconds()
	<-startProfile
	if c := running(); c > 0 {
		r.MeanStart = d.metric("kubelet_pod_start_duration_seconds_sum") / c
	}

	// The one place a test waits out real time: this measures a real daemon process's CPU
	// over a wall-clock window, so the window is the measurement, not a wait for a condition.
	time.Sleep(*settle)
	if *profile != "" {
		// Heap profiles before and after the window, each after a collection (gc=1), so
		// that pprof -base shows what the window allocated and not the start's tail. Taken
		// before the window's CPU is counted: the collection is not the steady state's.
		d.saveProfile("/debug/pprof/heap?gc=1", fmt.Sprintf("heap-start-%s-%d.pprof", r.PLEG, n))
	}
	relists0, relistSum0 := d.metric("kubelet_pleg_relist_duration_seconds_count"), d.metric("kubelet_pleg_relist_duration_seconds_sum")
	cpu0, wall0 := d.cpuSeconds(), time.Now()
	if *profile != "" {
		// The CPU profile covers the steady window: pprof's handler returns after it.
		d.saveProfile(fmt.Sprintf("/debug/pprof/profile?seconds=%d", int(steady.Seconds())), fmt.Sprintf("cpu-%s-%d.pprof", r.PLEG, n))
	} else {
		time.Sleep(*steady)
	}
	r.SteadyCPU = 100 * (d.cpuSeconds() - cpu0) / time.Since(wall0).Seconds()
	if relists := d.metric("kubelet_pleg_relist_duration_seconds_count") - relists0; relists > 0 {
		mean := (d.metric("kubelet_pleg_relist_duration_seconds_sum") - relistSum0) / relists
		r.RelistMean = fmt.Sprintf("%.2f ms", 1000*mean)
	} else {
		r.RelistMean = "no relist"
	}
	r.RSS, r.HWM = d.memory()
	// Where the resident memory is, as Go's runtime counts it.
	mib := func(name string) float64 { return d.metric(name) / (1 << 20) }
	_, _, anon, file := d.residentParts()
	t.Logf("memory: heap in use %.0f MiB, idle %.0f MiB (released %.0f), stacks %.0f MiB, next GC at %.0f MiB, runtime total %.0f MiB; resident %d MiB anonymous, %d MiB of files (the binary)",
		mib("go_memstats_heap_inuse_bytes"), mib("go_memstats_heap_idle_bytes"), mib("go_memstats_heap_released_bytes"),
		mib("go_memstats_stack_inuse_bytes"), mib("go_memstats_next_gc_bytes"), mib("go_memstats_sys_bytes"), anon>>10, file>>10)
	if *profile != "" {
		d.saveProfile("/debug/pprof/heap?gc=1", fmt.Sprintf("heap-%s-%d.pprof", r.PLEG, n))
	}

	// The first GET /pods encodes every pod; the ones after it re-encode only what changed.
	getStart := time.Now()
	body := d.get("/pods")
	r.PodsGetFirst, r.PodsBytes = msSince(getStart), len(body)
	r.PodsGet, r.MetricsGet, r.NodeGet = d.medianGet("/pods"), d.medianGet("/metrics"), d.medianGet("/node")

	entries, err := os.ReadDir(pods)
	if err != nil {
		t.Fatal(err)
	}
	removeStart := time.Now()
	for _, e := range entries {
		if err := os.Remove(filepath.Join(pods, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	gone := func() bool {
		var list struct {
			Items []json.RawMessage `json:"items"`
		}
		if err := json.Unmarshal(d.get("/pods"), &list); err != nil {
			t.Fatal(err)
		}
		return len(list.Items) == 0 && d.metric("kubelet_running_pods") == 0 &&
			d.metric(`kubelet_running_containers{container_state="running"}`) == 0
	}
	if d.poll(*startMax, gone) {
		r.Removed = time.Since(removeStart).Round(100 * time.Millisecond).String()
	} else {
		r.Removed = fmt.Sprintf("> %v", *startMax)
		t.Errorf("pods still there %v after their manifests were removed", *startMax)
	}
	r.Discards = d.metric("kubelet_pleg_discard_events")
	d.stop()
	return r
}

func msSince(t time.Time) float64 { return float64(time.Since(t)) / float64(time.Millisecond) }

// medianGet is the median time of 7 GETs of path, in milliseconds: from the request to the
// answer's last byte, read as curl -o /dev/null reads it (into a fixed buffer, not a 25 MB
// one grown by doubling, which measured the client's copies).
func (d *daemon) medianGet(path string) float64 {
	var ms []float64
	for i := 0; i < 7; i++ {
		start := time.Now()
		d.drain(path)
		ms = append(ms, msSince(start))
	}
	sort.Float64s(ms)
	return ms[len(ms)/2]
}

// daemon is a running minikubelet.
type daemon struct {
	t      *testing.T
	cmd    *exec.Cmd
	url    string
	mu     sync.Mutex
	stderr bytes.Buffer
	exited chan error
}

// standaloneAuth lets a config file's daemon run without an API server: a file's secure
// defaults need one for their webhooks.
const standaloneAuth = "authentication: {anonymous: {enabled: true}, webhook: {enabled: false}}\nauthorization: {mode: AlwaysAllow}\n"

var servingRE = regexp.MustCompile(`"Serving HTTP" address="([^"]+)"`)

func startDaemon(t *testing.T, args []string) *daemon {
	t.Helper()
	d := &daemon{t: t, cmd: exec.Command(bin, args...), exited: make(chan error, 1)}
	childproc.DieWithParent(d.cmd)
	pipe, err := d.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pipe)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			d.mu.Lock()
			if d.stderr.Len() < 16<<10 { // the start of the log, for a failure report
				d.stderr.WriteString(line + "\n")
			}
			d.mu.Unlock()
			if m := servingRE.FindStringSubmatch(line); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
		d.exited <- d.cmd.Wait()
	}()
	t.Cleanup(d.stop)
	select {
	case a := <-addr:
		d.url = "http://" + a
	case err := <-d.exited:
		d.exited <- err
		t.Fatalf("daemon exited before serving: %v\n%s", err, d.log())
	case <-time.After(30 * time.Second):
		t.Fatalf("no Serving HTTP line within 30s:\n%s", d.log())
	}
	return d
}

func (d *daemon) log() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stderr.String()
}

// stop sends SIGTERM and waits for the exit (killing it after a minute). Safe twice.
func (d *daemon) stop() {
	if d.cmd.ProcessState != nil {
		return
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
	case <-time.After(time.Minute):
		_ = d.cmd.Process.Kill()
		<-d.exited
	}
	if d.t.Failed() {
		d.t.Logf("daemon log (its start):\n%s", d.log())
	}
}

var client = &http.Client{Timeout: time.Minute}

func (d *daemon) get(path string) []byte {
	d.t.Helper()
	return d.getWith(client, path)
}

// getWith GETs path with c and returns the body of its 200 answer.
func (d *daemon) getWith(c *http.Client, path string) []byte {
	d.t.Helper()
	resp, err := c.Get(d.url + path)
	if err != nil {
		d.t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		d.t.Fatalf("GET %s = %d, %v", path, resp.StatusCode, err)
	}
	return body
}

// saveProfile GETs a pprof profile into -profile's directory.
func (d *daemon) saveProfile(path, name string) {
	d.t.Helper()
	if err := os.MkdirAll(*profile, 0o755); err != nil {
		d.t.Fatal(err)
	}
	// Its own client: a CPU profile takes the whole steady window to answer.
	body := d.getWith(&http.Client{Timeout: *steady + time.Minute}, path)
	if err := os.WriteFile(filepath.Join(*profile, name), body, 0o644); err != nil {
		d.t.Fatal(err)
	}
	d.t.Logf("profile written: %s", filepath.Join(*profile, name))
}

// drain GETs path and reads the answer to its end without keeping it.
func (d *daemon) drain(path string) {
	d.t.Helper()
	resp, err := client.Get(d.url + path)
	if err != nil {
		d.t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil || resp.StatusCode != http.StatusOK {
		d.t.Fatalf("GET %s = %d, %v", path, resp.StatusCode, err)
	}
}

// metric is the value of a series on /metrics: a full series (`name{label="value"}`) or a
// metric name, which sums every series of that name.
func (d *daemon) metric(series string) float64 {
	d.t.Helper()
	var sum float64
	for _, line := range strings.Split(string(d.get("/metrics")), "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		key, name := line[:i], line[:i]
		if j := strings.IndexByte(key, '{'); j >= 0 {
			name = key[:j]
		}
		if key != series && name != series {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			sum += v
		}
	}
	return sum
}

func (d *daemon) readyMessage() string {
	var node struct {
		Status struct {
			Conditions []struct{ Type, Status, Message string } `json:"conditions"`
		} `json:"status"`
	}
	if err := json.Unmarshal(d.get("/node"), &node); err != nil {
		return err.Error()
	}
	for _, c := range node.Status.Conditions {
		if c.Type == "Ready" {
			return c.Status + " " + c.Message
		}
	}
	return "no Ready condition"
}

// poll checks cond every 200ms until it holds (true) or timeout passes (false).
func (d *daemon) poll(timeout time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(timeout); ; time.Sleep(200 * time.Millisecond) {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// cpuSeconds is the daemon's user+system CPU time so far (/proc/PID/stat).
func (d *daemon) cpuSeconds() float64 {
	d.t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", d.cmd.Process.Pid))
	if err != nil {
		d.t.Fatal(err)
	}
	// The fields after the command name, which is in parentheses and may hold spaces.
	fields := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
	utime, _ := strconv.ParseFloat(fields[11], 64)
	stime, _ := strconv.ParseFloat(fields[12], 64)
	const clockTicks = 100 // USER_HZ on Linux
	return (utime + stime) / clockTicks
}

// memory is the daemon's resident set and its peak, in KiB (/proc/PID/status).
func (d *daemon) memory() (rss, hwm int64) {
	rss, hwm, _, _ = d.residentParts()
	return rss, hwm
}

// residentParts is memory with the resident set's anonymous part (the heap, stacks, the
// runtime's own) and its file part (the binary's pages that were read), in KiB.
func (d *daemon) residentParts() (rss, hwm, anon, file int64) {
	d.t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", d.cmd.Process.Pid))
	if err != nil {
		d.t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(val), " kB"), 10, 64)
		switch key {
		case "VmRSS":
			rss = kb
		case "VmHWM":
			hwm = kb
		case "RssAnon":
			anon = kb
		case "RssFile":
			file = kb
		}
	}
	return rss, hwm, anon, file
}
