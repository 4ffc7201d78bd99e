package simulate

import (
	"context"
	"flag"
	"fmt"
	"math/rand"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minikubelet/minikubelet/pkg/config"
	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/kubelet"
	"github.com/minikubelet/minikubelet/pkg/kuberuntime"
	"github.com/minikubelet/minikubelet/pkg/podworkers"
	"github.com/minikubelet/minikubelet/pkg/runtime/fault"
)

// The fault soak's knobs (docs/reliability.md, "Fault soak"). -soak.seed runs one seed (a
// failing seed's replay); otherwise -soak.seeds consecutive seeds from 1 run. The default of
// 2 seeds (one with each PLEG) keeps make test's -race run of this test under a minute on 2
// cores; make soak runs more.
var (
	soakSeed    = flag.Int64("soak.seed", 0, "fault soak: run this one seed (0: run -soak.seeds seeds from 1)")
	soakSeeds   = flag.Int("soak.seeds", 2, "fault soak: how many consecutive seeds to run, from 1")
	soakPods    = flag.Int("soak.pods", 500, "fault soak: static pods on the node")
	soakMinutes = flag.Int("soak.minutes", 10, "fault soak: virtual minutes of random runtime faults")
)

// TestFaultSoak runs a node of -soak.pods static pods under random runtime faults (latency,
// errors, hangs, event-stream breaks, a not-ready runtime) and manifest churn for
// -soak.minutes virtual minutes, clears the faults, lets it run long enough for every
// back-off and threshold to expire (soakSettle), and checks that it converged: each desired
// pod has exactly one ready sandbox with its containers running (restartPolicy Always) or
// has completed (OnFailure jobs), the runtime holds nothing of a pod no longer desired, the
// PLEG is healthy and the node Ready. All randomness derives from the seed, so a failing
// seed replays exactly with the command its message starts with.
func TestFaultSoak(t *testing.T) {
	if *soakPods < 1 || *soakMinutes < 1 {
		t.Fatalf("-soak.pods=%d and -soak.minutes=%d must be at least 1", *soakPods, *soakMinutes)
	}
	seeds := []int64{*soakSeed}
	if *soakSeed == 0 {
		seeds = seeds[:0]
		for i := 1; i <= *soakSeeds; i++ {
			seeds = append(seeds, int64(i))
		}
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			runSoak(t, soakPlan{seed: seed, pods: *soakPods, faultTime: time.Duration(*soakMinutes) * time.Minute})
		})
	}
}

type soakPlan struct {
	seed      int64
	pods      int
	faultTime time.Duration
}

func (p soakPlan) replay() string {
	return fmt.Sprintf("go test ./pkg/simulate -run 'TestFaultSoak' -soak.seed=%d -soak.pods=%d -soak.minutes=%d -v",
		p.seed, p.pods, int(p.faultTime/time.Minute))
}

func runSoak(t *testing.T, p soakPlan) {
	rng := rand.New(rand.NewSource(p.seed))
	sc, want := soakScenario(rng, p)
	ctx := context.Background()
	s, err := newSimulation(ctx, sc, t.TempDir(), Epoch)
	if err != nil {
		t.Fatalf("seed %d: %v", p.seed, err)
	}
	defer s.stopKubelet()
	settle := soakSettle(s.cfg, s.k.LegacyEventedPLEG() != nil)
	sc.Duration = Duration{p.faultTime + settle}
	start := time.Now()
	if err := s.run(ctx); err != nil {
		t.Fatalf("seed %d: replay with: %s\n%v", p.seed, p.replay(), err)
	}
	fired, notReady := 0, 0
	for _, l := range s.obs.lines {
		switch {
		case l.Subject == "fault" && strings.HasPrefix(l.Text, "fired "):
			fired++
		case l.Subject == "node" && strings.HasPrefix(l.Text, "Ready=False"):
			notReady++
		}
	}
	t.Logf("seed %d: %d pods, %v of faults (%d faults, %d fired; node NotReady %d times; evented PLEG %v), %v to settle: %v of wall time",
		p.seed, p.pods, p.faultTime, countFaults(sc), fired, notReady, s.k.EventedPLEG() != nil, settle, time.Since(start).Round(time.Millisecond))
	if problems := soakProblems(ctx, s, want); len(problems) > 0 {
		var b strings.Builder
		fmt.Fprintf(&b, "seed %d did not converge %v after the faults cleared; replay with:\n  %s\n", p.seed, settle, p.replay())
		for i, pr := range problems {
			if i == 8 {
				fmt.Fprintf(&b, "... and %d more\n", len(problems)-i)
				break
			}
			b.WriteString(pr.text)
			b.WriteByte('\n')
			if pr.pod != "" {
				for _, l := range lastLines(s.obs.lines, "pod "+pr.pod, 6) {
					fmt.Fprintf(&b, "    %s %s\n", l.Time, l.Text)
				}
			}
		}
		t.Fatal(b.String())
	}
}

// soakSettle is how long after the faults clear the node needs, at most, to converge: each
// bound below is the longest one delay can last, and they are added up because one pod may
// meet them in turn (a timed-out call, then a back-off, then the resync that notices its end,
// then the relist that sees the result, then the node status that reports it).
func soakSettle(cfg *config.Config, evented bool) time.Duration {
	kc := cfg.Kubelet
	d := kc.RuntimeRequestTimeout.Duration // a call that started under a latency fault ends by then
	// A container or image back-off set by the last failure before the clear (no jitter).
	d += max(kuberuntime.DefaultMaxContainerBackOff, kuberuntime.DefaultMaxImageBackOff)
	// The pod worker's next sync: a resync (syncFrequency with 0.5 jitter) or, after an
	// error, the worker back-off (10s with 0.5 jitter), whichever is longer.
	d += max(kc.SyncFrequency.Duration*3/2, podworkers.DefaultBackOffPeriod*3/2)
	// The PLEG sees the result: the next relist (while v1.30's event stream is in charge,
	// the slow one, which is what finds the events a stream break lost; v1.37 keeps 1s).
	relist := cfg.Simulator.PLEG.RelistPeriod.Duration
	if evented {
		relist = cfg.Simulator.EventedPLEG.RelistPeriod.Duration
	}
	d += relist
	// Orphans: housekeeping kills them, then two garbage collections remove their containers
	// and then their sandboxes.
	d += 2 * kubelet.ContainerGCPeriod
	// The runtime status poll and the node status update that report it all.
	d += cfg.Simulator.Runtime.StatusPollPeriod.Duration + kc.NodeStatusUpdateFrequency.Duration
	return d
}

// soakManifest is a pod of one of the soak's kinds: 0, a two-container service; 1, a service
// behind an init container; 2, a job that runs 20s and succeeds. version changes the image
// (a new pod, as an edited manifest).
func soakManifest(name string, kind, version int) string {
	image := soakImage(kind, version)
	switch kind {
	case 1:
		return fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata: {name: %s}\nspec:\n  initContainers: [{name: init, image: busybox}]\n  containers: [{name: app, image: %s}]\n", name, image)
	case 2:
		return fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata: {name: %s, annotations: {minikubelet.io/behavior.main: \"runFor=20s\"}}\nspec: {restartPolicy: OnFailure, containers: [{name: main, image: %s}]}\n", name, image)
	default:
		return fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata: {name: %s}\nspec: {containers: [{name: app, image: %s}, {name: side, image: envoyproxy/envoy:v1.30.1}]}\n", name, image)
	}
}

// soakImage is the first container's image of a soak pod.
func soakImage(kind, version int) string {
	if kind == 2 {
		return fmt.Sprintf("busybox:1.%d", version)
	}
	return fmt.Sprintf("nginx:1.%d", version)
}

// soakScenario builds the scenario: the pods, the random faults (each removed after its own
// duration, all cleared when the fault time ends), and manifest churn in the fault time
// (pods removed, added and changed, so orphans can arise). Everything is drawn from rng. want
// is what the manifests say at the end: each pod's full name and first container's image.
func soakScenario(rng *rand.Rand, p soakPlan) (sc *Scenario, want map[string]string) {
	seed := p.seed
	evented := rng.Intn(2) == 0
	sc = &Scenario{
		Name:      fmt.Sprintf("fault-soak-%d", seed),
		Seed:      &seed,
		Manifests: map[string]string{},
		Args: []string{
			fmt.Sprintf("--max-pods=%d", 2*p.pods+10), // room for the churn
			fmt.Sprintf("--feature-gates=EventedPLEG=%v", evented),
		},
	}
	kinds := map[string]int{}
	want = map[string]string{}
	var names []string
	next := 0
	add := func() string {
		name := fmt.Sprintf("pod%04d", next)
		next++
		kind := 0
		switch next % 10 {
		case 1:
			kind = 1
		case 2:
			kind = 2
		}
		kinds[name] = kind
		names = append(names, name)
		want[name+"-"+DefaultNodeName] = soakImage(kind, 0)
		return name
	}
	for range p.pods {
		name := add()
		sc.Manifests[name+".yaml"] = soakManifest(name, kinds[name], 0)
	}

	var steps []Step
	at := func(d time.Duration) Duration { return Duration{d} }
	// Faults: a new one every 1-30s.
	n := 0
	for t := time.Duration(rng.Int63n(int64(30 * time.Second))); t < p.faultTime; t += time.Second + time.Duration(rng.Int63n(int64(29*time.Second))) {
		n++
		spec := randomFault(rng)
		spec.ID = fmt.Sprintf("soak-%d", n)
		steps = append(steps, Step{At: at(t), Fault: &spec})
		end := t + time.Second + time.Duration(rng.Int63n(int64(3*time.Minute)))
		// A counted fault retires by itself once spent (an id then unknown): it lasts until
		// its count is spent or the fault time ends.
		if end < p.faultTime && spec.Count == 0 && spec.Type != fault.StreamError {
			steps = append(steps, Step{At: at(end), ClearFault: spec.ID})
		}
	}
	// Churn: every 30s, remove, add and change a few pods.
	version := 0
	for t := 30 * time.Second; t < p.faultTime; t += 30 * time.Second {
		var remove []string
		for range min(rng.Intn(4), len(names)-1) {
			i := rng.Intn(len(names))
			remove = append(remove, names[i]+".yaml")
			delete(want, names[i]+"-"+DefaultNodeName)
			names = slices.Delete(names, i, i+1)
		}
		write := map[string]string{}
		for range rng.Intn(4) {
			name := add()
			write[name+".yaml"] = soakManifest(name, kinds[name], 0)
		}
		for range rng.Intn(3) {
			name := names[rng.Intn(len(names))]
			version++
			write[name+".yaml"] = soakManifest(name, kinds[name], version)
			want[name+"-"+DefaultNodeName] = soakImage(kinds[name], version)
		}
		if len(remove) > 0 {
			steps = append(steps, Step{At: at(t), Remove: remove})
		}
		if len(write) > 0 {
			steps = append(steps, Step{At: at(t), Write: write})
		}
	}
	steps = append(steps, Step{At: at(p.faultTime), ClearFaults: true})
	sort.SliceStable(steps, func(i, j int) bool { return steps[i].At.Duration < steps[j].At.Duration })
	sc.Steps = steps
	return sc, want
}

// soakHotMethods are the runtime calls that starting, stopping and watching pods make.
var soakHotMethods = []string{
	"RunPodSandbox", "StopPodSandbox", "RemovePodSandbox", "PodSandboxStatus", "ListPodSandbox",
	"CreateContainer", "StartContainer", "StopContainer", "RemoveContainer", "ListContainers",
	"ContainerStatus", "PullImage", "ImageStatus", "Status",
}

// randomFault draws a fault: a type, the methods it hits and its strength.
func randomFault(rng *rand.Rand) fault.Spec {
	method := func() string {
		switch n := rng.Intn(10); {
		case n == 0:
			return fault.AnyMethod
		case n <= 7:
			// Mostly the calls a pod's life and the PLEG make, so that most faults fire.
			return soakHotMethods[rng.Intn(len(soakHotMethods))]
		default:
			return fault.Methods[rng.Intn(len(fault.Methods))]
		}
	}
	dur := func(lo, hi time.Duration) metav1.Duration {
		return metav1.Duration{Duration: lo + time.Duration(rng.Int63n(int64(hi-lo)))}
	}
	switch rng.Intn(5) {
	case 0:
		s := fault.Spec{Method: method(), Type: fault.Latency, Delay: dur(time.Millisecond, 30*time.Second)}
		if rng.Intn(3) == 0 {
			s.PerContainer = dur(time.Microsecond, 10*time.Millisecond)
		}
		return s
	case 1:
		s := fault.Spec{Method: method(), Type: fault.Error, Message: "soak"}
		if rng.Intn(2) == 0 {
			s.Rate = 0.05 + 0.95*rng.Float64()
		} else {
			s.Count = 1 + rng.Intn(50)
		}
		return s
	case 2:
		s := fault.Spec{Method: method(), Type: fault.Hang}
		if rng.Intn(2) == 0 {
			s.For = dur(time.Second, 3*time.Minute)
		}
		return s
	case 3:
		return fault.Spec{Method: "GetContainerEvents", Type: fault.StreamError, Count: 1 + rng.Intn(6)}
	default:
		cond := cri.RuntimeReady
		if rng.Intn(2) == 0 {
			cond = cri.NetworkReady
		}
		return fault.Spec{Method: "Status", Type: fault.NotReady, Condition: cond}
	}
}

func countFaults(sc *Scenario) int {
	n := 0
	for _, st := range sc.Steps {
		if st.Fault != nil {
			n++
		}
	}
	return n
}

type soakProblem struct {
	pod  string // the pod's full name, "" for the node or an orphan
	text string
}

// soakProblems lists what is not converged: the kubelet's pods against the manifests (want),
// each desired pod, orphans, then the PLEG and the node.
func soakProblems(ctx context.Context, s *simulation, want map[string]string) []soakProblem {
	var out []soakProblem
	sandboxes, err := s.runtime.ListPodSandbox(ctx, nil)
	if err != nil {
		return []soakProblem{{text: "ListPodSandbox: " + err.Error()}}
	}
	containers, err := s.runtime.ListContainers(ctx, nil)
	if err != nil {
		return []soakProblem{{text: "ListContainers: " + err.Error()}}
	}
	sbByUID := map[string][]cri.PodSandbox{}
	sbUID := map[string]string{}
	for _, sb := range sandboxes {
		uid := sb.Labels[cri.PodUIDLabel]
		sbByUID[uid] = append(sbByUID[uid], sb)
		sbUID[sb.ID] = uid
	}
	ctrsBySandbox := map[string][]cri.Container{}
	for _, c := range containers {
		ctrsBySandbox[c.PodSandboxID] = append(ctrsBySandbox[c.PodSandboxID], c)
	}
	desired := map[string]bool{}
	seen := map[string]bool{}
	for _, pod := range s.k.GetPods() {
		uid := string(pod.UID)
		desired[uid] = true
		seen[pod.Name] = true
		if image, ok := want[pod.Name]; !ok {
			out = append(out, soakProblem{pod: pod.Name, text: fmt.Sprintf("pod %s (uid %s): the kubelet has it, no manifest does", pod.Name, uid)})
		} else if got := pod.Spec.Containers[0].Image; got != image {
			out = append(out, soakProblem{pod: pod.Name, text: fmt.Sprintf("pod %s (uid %s): image %s, the manifest says %s", pod.Name, uid, got, image)})
		}
		if msg := podProblem(pod, sbByUID[uid], ctrsBySandbox); msg != "" {
			out = append(out, soakProblem{pod: pod.Name, text: fmt.Sprintf("pod %s (uid %s): %s", pod.Name, uid, msg)})
		}
	}
	for _, name := range sortedKeys(want) {
		if !seen[name] {
			out = append(out, soakProblem{text: fmt.Sprintf("pod %s: in the manifests, not in the kubelet's pods", name)})
		}
	}
	for _, sb := range sandboxes {
		if uid := sb.Labels[cri.PodUIDLabel]; !desired[uid] {
			out = append(out, soakProblem{text: fmt.Sprintf("orphan sandbox %s of pod %s (uid %s): %s, %d containers",
				sb.ID, sb.Metadata.Name, uid, sb.State, len(ctrsBySandbox[sb.ID]))})
		}
	}
	for _, c := range containers {
		if _, ok := sbUID[c.PodSandboxID]; !ok {
			out = append(out, soakProblem{text: fmt.Sprintf("orphan container %s (%s) of missing sandbox %s: %s", c.ID, c.Metadata.Name, c.PodSandboxID, c.State)})
		}
	}
	if ok, err := s.k.GenericPLEG().Healthy(); !ok {
		out = append(out, soakProblem{text: fmt.Sprintf("generic PLEG unhealthy: %v", err)})
	}
	if e := s.k.LegacyEventedPLEG(); e != nil {
		if ok, err := e.Healthy(); !ok {
			out = append(out, soakProblem{text: fmt.Sprintf("evented PLEG unhealthy: %v", err)})
		}
	}
	ready := false
	for _, c := range s.k.NodeStatus().Conditions() {
		if c.Type == v1.NodeReady {
			ready = c.Status == v1.ConditionTrue
			if !ready {
				out = append(out, soakProblem{text: fmt.Sprintf("node Ready=%s reason=%s message=%q", c.Status, c.Reason, c.Message)})
			}
		}
	}
	if !ready && len(out) == 0 {
		out = append(out, soakProblem{text: "node has no Ready condition"})
	}
	return out
}

// podProblem says how a desired pod differs from converged ("" when it has converged): a
// restartPolicy Always pod runs in exactly one ready sandbox with one running instance of
// each container, is Running and Ready; a job has Succeeded and holds nothing running.
func podProblem(pod *v1.Pod, sandboxes []cri.PodSandbox, ctrs map[string][]cri.Container) string {
	var ready []cri.PodSandbox
	running := map[string]int{} // container name -> running instances, in any sandbox
	var state []string
	for _, sb := range sandboxes {
		if sb.State == cri.SandboxReady {
			ready = append(ready, sb)
		}
		var cs []string
		for _, c := range ctrs[sb.ID] {
			if c.State == cri.ContainerRunning {
				running[c.Metadata.Name]++
			}
			cs = append(cs, fmt.Sprintf("%s=%s", c.Metadata.Name, c.State))
		}
		state = append(state, fmt.Sprintf("%s[%s]", sb.State, strings.Join(cs, " ")))
	}
	cond := "Ready=absent"
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodReady {
			cond = "Ready=" + string(c.Status)
		}
	}
	desc := fmt.Sprintf("phase=%s %s sandboxes=%v", pod.Status.Phase, cond, state)
	if pod.Spec.RestartPolicy != v1.RestartPolicyAlways {
		if pod.Status.Phase != v1.PodSucceeded || len(ready) > 0 || len(running) > 0 {
			return "want Succeeded, nothing running; have " + desc
		}
		return ""
	}
	ok := len(ready) == 1 && pod.Status.Phase == v1.PodRunning && cond == "Ready=True"
	for _, c := range pod.Spec.Containers {
		if running[c.Name] != 1 {
			ok = false
		}
	}
	n := 0
	for _, r := range running {
		n += r
	}
	if n != len(pod.Spec.Containers) {
		ok = false // an init container still running, or an instance outside the ready sandbox
	}
	if !ok {
		return "want Running and Ready, one ready sandbox with each container running once; have " + desc
	}
	return ""
}

// lastLines are the last n timeline lines of subject.
func lastLines(lines []TimelineEntry, subject string, n int) []TimelineEntry {
	var out []TimelineEntry
	for i := len(lines) - 1; i >= 0 && len(out) < n; i-- {
		if lines[i].Subject == subject {
			out = append(out, lines[i])
		}
	}
	slices.Reverse(out)
	return out
}
