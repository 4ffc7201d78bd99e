package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// recordFor is how long TestRecordReplay's live run lasts: MINIKUBELET_RECORD_FOR (make
// record-replay sets 10m, the measure), 40s in make test.
func recordFor(t *testing.T) time.Duration {
	if s := os.Getenv("MINIKUBELET_RECORD_FOR"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("MINIKUBELET_RECORD_FOR: %v", err)
		}
		return d
	}
	return 40 * time.Second
}

// podTrack is what the live run's polls of /pods saw of one pod.
type podTrack struct {
	phases   []v1.PodPhase // each phase once, in the order seen
	restarts int32         // at the last poll that listed it
}

func (p *podTrack) see(phase v1.PodPhase) {
	if n := len(p.phases); n == 0 || p.phases[n-1] != phase {
		p.phases = append(p.phases, phase)
	}
}

// TestRecordReplay is the flight recorder's contract: a live daemon run with --record, with
// churn of static pods, a crash loop, a pod that completes and an injected fault added and
// cleared over HTTP, replays with simulate -f into the same pods with the same sequence of
// phases each, and the same final phases and restart counts.
func TestRecordReplay(t *testing.T) {
	total := recordFor(t)
	rec := filepath.Join(t.TempDir(), "recording.yaml")
	d := startDaemon(t, "--enable-debugging-handlers", "--record="+rec)
	const crash = `apiVersion: v1
kind: Pod
metadata: {name: crash}
spec:
  containers: [{name: main, image: busybox:1.36, command: [sh, -c, "sleep 2; exit 1"]}]
`
	const job = `apiVersion: v1
kind: Pod
metadata: {name: job}
spec:
  restartPolicy: Never
  containers: [{name: main, image: busybox:1.36, command: [sh, -c, "echo working; sleep 3"]}]
`
	churn := func(i int) string {
		return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: churn-%d}
spec:
  containers: [{name: app, image: busybox:1.36, command: [sh, -c, "while true; do sleep 1; done"]}]
`, i)
	}
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(d.manifests, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	seen := map[string]*podTrack{}
	poll := func() {
		var list v1.PodList
		d.getJSON("/pods", &list)
		for _, p := range list.Items {
			tr := seen[p.Name]
			if tr == nil {
				tr = &podTrack{}
				seen[p.Name] = tr
			}
			if p.Status.Phase != "" {
				tr.see(p.Status.Phase)
			}
			tr.restarts = 0
			for _, c := range p.Status.ContainerStatuses {
				tr.restarts += c.RestartCount
			}
		}
		for name, tr := range seen {
			if !slices.ContainsFunc(list.Items, func(p v1.Pod) bool { return p.Name == name }) {
				tr.restarts = -1 // gone
			}
		}
	}
	// The script, as offsets of the run: churn every tenth, the fault over the middle third.
	type action struct {
		at time.Duration
		do func()
	}
	var script []action
	script = append(script, action{time.Second, func() { write("crash.yaml", crash); write("job.yaml", job) }})
	for i := 0; i < 8; i++ {
		i := i
		script = append(script, action{total * time.Duration(i+1) / 10, func() {
			write(fmt.Sprintf("churn-%d.yaml", i), churn(i))
			if i >= 2 {
				if err := os.Remove(filepath.Join(d.manifests, fmt.Sprintf("churn-%d.yaml", i-2))); err != nil {
					t.Error(err)
				}
			}
		}})
	}
	var faultID string
	script = append(script,
		action{total / 3, func() {
			code, body := d.request("POST", "/debug/faults", `{"method":"ListPodSandbox","type":"latency","delay":"2s"}`)
			if code != 200 && code != 201 {
				t.Fatalf("POST /debug/faults = %d %s", code, body)
			}
			var f struct{ ID string }
			_ = json.Unmarshal([]byte(body), &f)
			faultID = f.ID
		}},
		action{total / 2, func() {
			if code, body := d.request("DELETE", "/debug/faults/"+faultID, ""); code != 200 {
				t.Fatalf("DELETE /debug/faults/%s = %d %s", faultID, code, body)
			}
		}},
	)
	slices.SortStableFunc(script, func(a, b action) int { return int(a.at - b.at) })

	start := time.Now()
	for len(script) > 0 || time.Since(start) < total {
		for len(script) > 0 && time.Since(start) >= script[0].at {
			script[0].do()
			script = script[1:]
		}
		poll()
		time.Sleep(100 * time.Millisecond)
	}
	if err := d.terminate(); err != nil {
		t.Fatalf("daemon exit: %v\n%s", err, d.log())
	}

	raw, err := os.ReadFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("recording: %d bytes, %d steps", len(raw), strings.Count(string(raw), "\n- at: "))
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
	// The inputs that are not files arrived at the instants they were made live (the script
	// runs them on time; a poll may hold one up by 100ms).
	at := func(subject, prefix string) (time.Duration, bool) {
		for _, e := range res.Timeline {
			if e.Subject == subject && strings.HasPrefix(e.Text, prefix) {
				var h, m, sec, ms int
				if _, err := fmt.Sscanf(e.At, "T+%d:%d:%d.%d", &h, &m, &sec, &ms); err != nil {
					t.Fatalf("timeline time %q: %v", e.At, err)
				}
				return time.Duration(h)*time.Hour + time.Duration(m)*time.Minute + time.Duration(sec)*time.Second + time.Duration(ms)*time.Millisecond, true
			}
		}
		return 0, false
	}
	for _, in := range []struct {
		subject, prefix string
		want            time.Duration
	}{
		{"fault", "added id=" + faultID + " method=ListPodSandbox type=latency delay=2s", total / 3},
		{"fault", "cleared id=" + faultID, total / 2},
		{"kubelet", "shutdown signal", total},
	} {
		got, ok := at(in.subject, in.prefix)
		if !ok {
			t.Errorf("the replay's timeline has no %q %q", in.subject, in.prefix)
		} else if got < in.want || got > in.want+time.Second {
			t.Errorf("%s %q replayed at %v, made live at %v", in.subject, in.prefix, got, in.want)
		}
	}
	// The replay's pods, from its timeline. The timeline follows the status manager, which
	// keeps a pod's status until housekeeping after its termination (and may set it once
	// more if the last sync of the pod comes after that): a pod's sequence is what came
	// before its first removal, what /pods showed.
	replay := map[string]*podTrack{}
	phaseRE := regexp.MustCompile(`(?:^| )phase=(\w+)`)
	restartsRE := regexp.MustCompile(`restarts=(\d+)`)
	removed := map[string]bool{}
	containers := map[string]map[string]int32{} // pod -> container -> restarts
	for _, e := range res.Timeline {
		name, ok := strings.CutPrefix(e.Subject, "pod ")
		if !ok || removed[name] {
			continue
		}
		tr := replay[name]
		if tr == nil {
			tr = &podTrack{}
			replay[name] = tr
			containers[name] = map[string]int32{}
		}
		if e.Text == "removed" {
			removed[name] = true
			continue
		}
		if m := phaseRE.FindStringSubmatch(e.Text); m != nil {
			tr.see(v1.PodPhase(m[1]))
		}
		for _, field := range strings.Fields(strings.TrimPrefix(e.Text, "phase=")) {
			cname, state, ok := strings.Cut(field, "=")
			if !ok {
				continue
			}
			var n int32
			if m := restartsRE.FindStringSubmatch(state); m != nil {
				v, _ := strconv.Atoi(m[1])
				n = int32(v)
			}
			containers[name][cname] = n
		}
	}
	for name, tr := range replay {
		tr.restarts = 0
		for _, n := range containers[name] {
			tr.restarts += n
		}
	}

	var names []string
	for name := range seen {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		live, got := seen[name], replay[name]
		if got == nil {
			t.Errorf("pod %s: seen live (%v), not in the replay", name, live.phases)
			continue
		}
		// The live run polls /pods every 100ms, so it can miss a short phase (a Pending
		// that lasts one sync and the relist after it), never invent one; the replay's
		// timeline has every status the status manager stored. So the live phases must be
		// the replay's in order with some left out, ending in the same phase.
		if len(got.phases) == 0 || len(live.phases) == 0 || !isSubsequence(live.phases, got.phases) || live.phases[len(live.phases)-1] != got.phases[len(got.phases)-1] {
			t.Errorf("pod %s: live phases %v, replayed %v", name, live.phases, got.phases)
		}
		if gone := live.restarts < 0; gone != removed[name] {
			t.Errorf("pod %s: live gone=%v, replay removed=%v", name, gone, removed[name])
		} else if !gone && (got.restarts < live.restarts-1 || got.restarts > live.restarts+1) {
			// One loop period of slack: a restart due within it of the end may fall either side.
			t.Errorf("pod %s: %d restarts live at the end, %d replayed", name, live.restarts, got.restarts)
		}
		t.Logf("pod %-12s live %v restarts=%d | replay %v restarts=%d", name, live.phases, live.restarts, got.phases, got.restarts)
	}
	for name := range replay {
		if seen[name] == nil {
			t.Errorf("pod %s: in the replay, never seen live", name)
		}
	}
	if t.Failed() {
		t.Logf("recording:\n%s", raw)
	}
}

// isSubsequence says whether sub is seq with some elements left out (order kept).
func isSubsequence[T comparable](sub, seq []T) bool {
	i := 0
	for _, v := range seq {
		if i < len(sub) && sub[i] == v {
			i++
		}
	}
	return i == len(sub)
}
