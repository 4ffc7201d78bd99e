package cluster

import (
	"bufio"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/minikubelet/minikubelet/internal/childproc"
)

// skipsFile lists the specs skipped on every run here, each with its reason (the report
// prints them); hack/conformancereport reads it too.
const skipsFile = "../../hack/conformancereport/skips.yaml"

// conformanceSkip is one entry of skipsFile: a regular expression on the spec's full text.
type conformanceSkip struct {
	Spec   string `json:"spec"`
	Reason string `json:"reason"`
}

// conformanceEnv reads the settings make conformance passes (CONFORMANCE_*).
func conformanceEnv(name, def string) string {
	if v := os.Getenv("CONFORMANCE_" + name); v != "" {
		return v
	}
	return def
}

// TestConformance runs the upstream Kubernetes v1.37 end-to-end suite (e2e.test, built by
// make conformance from tools/conformance) against minikubelet nodes joined to a real control
// plane as kubelets are: each node its own system:node:<name> identity under the Node
// authorizer and NodeRestriction, its secure port authenticating the API server's kubelet
// client certificate and authorizing with SubjectAccessReviews. The suite's JUnit report
// lands in CONFORMANCE_OUT, from which hack/conformancereport writes docs/conformance.md.
//
// A spec that fails is a measurement, not a test failure, unless CONFORMANCE_EXPECT_PASS is
// set (the CI subset, which holds specs that pass). The test fails when the suite cannot run,
// writes no report, or when the API server tried to dial a pod IP: pod IPs are simulated, and
// such traffic must never leave the machine (make conformance runs everything in a network
// namespace of its own, so a dial fails there; the spec belongs in skipsFile).
func TestConformance(t *testing.T) {
	if os.Getenv("MINIKUBELET_CONFORMANCE") == "" {
		t.Skip("the upstream suite runs with make conformance")
	}
	bin := binDir(t)
	for _, b := range []string{"e2e.test", "ginkgo", "kubectl"} {
		if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
			t.Fatalf("%s not built (make conformance builds it): %v", b, err)
		}
	}
	out, err := filepath.Abs(conformanceEnv("OUT", filepath.Join("..", "..", "_output", "conformance")))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	// The suite's own JUnit report (--report-dir): spec names without ginkgo's label suffix,
	// the failure in each failed spec's text.
	junit := filepath.Join(out, "junit_01.xml")
	_ = os.Remove(junit)
	procs, err := strconv.Atoi(conformanceEnv("PROCS", "32"))
	if err != nil || procs < 1 {
		t.Fatalf("CONFORMANCE_PROCS=%q: want a positive integer", os.Getenv("CONFORMANCE_PROCS"))
	}
	// One node by default: the pods of one daemon share a pod network, those of two
	// daemons cannot reach each other (the specs that dial a pod from another, netexec
	// /dial, a hook's curl, need them on one network).
	nodeCount, err := strconv.Atoi(conformanceEnv("NODES", "1"))
	if err != nil || nodeCount < 1 {
		t.Fatalf("CONFORMANCE_NODES=%q: want a positive integer", os.Getenv("CONFORMANCE_NODES"))
	}
	timeout := conformanceEnv("TIMEOUT", "28m")
	if _, err := time.ParseDuration(timeout); err != nil {
		t.Fatalf("CONFORMANCE_TIMEOUT=%q: %v", timeout, err)
	}
	focus := conformanceEnv("FOCUS", `\[NodeConformance\]`)
	var named []string
	if file := os.Getenv("CONFORMANCE_FOCUS_FILE"); file != "" {
		if named, err = specNames(file); err != nil {
			t.Fatal(err)
		}
		focus = focusOn(named)
	}
	skip := conformanceEnv("SKIP", `\[Serial\]|\[Disruptive\]`)
	skips, err := readSkips(skipsFile)
	if err != nil {
		t.Fatal(err)
	}

	var nodes []string
	for i := 1; i <= nodeCount; i++ {
		nodes = append(nodes, fmt.Sprintf("mk-conformance-%d", i))
	}
	cp := startControlPlaneWith(t, cpOptions{allControllers: true}, nodes...)
	grantKubeletAPI(t, cp)
	daemon := buildDaemon(t)
	for i, n := range nodes {
		// Up to PROCS specs run at once, each with a few pods, all on these nodes.
		// The runtime has the handler the suite's RuntimeClasses name (test-handler), as
		// the containerd of upstream's e2e nodes is configured
		// (cluster/gce/gci/configure-helper.sh).
		args := []string{"--max-pods", "250", "--runtime-handlers", "runc,test-handler"}
		if v := os.Getenv("CONFORMANCE_EMULATED_VERSION"); v != "" {
			// The suite of an older release, against its control plane: the nodes are
			// kubelets of that release (make conformance KUBE_VERSION=v1.34).
			args = append(args, "--emulated-version", v)
		}
		startSecureNodeN(t, cp, daemon, n, i, args...)
	}

	args := []string{
		"--procs", strconv.Itoa(procs), "--timeout", timeout, "--no-color",
		"--focus", focus,
	}
	if skip != "" {
		args = append(args, "--skip", skip)
	}
	for _, s := range skips {
		args = append(args, "--skip", s.Spec)
	}
	args = append(args, filepath.Join(bin, "e2e.test"), "--",
		"--kubeconfig", cp.kubeconfig(t, "admin", adminToken), "--provider", "skeleton",
		"--kubectl-path", filepath.Join(bin, "kubectl"), "--e2e-output-dir", out, "--report-dir", out,
		"--disable-log-dump", "--allowed-not-ready-nodes", "0")
	logPath := filepath.Join(out, "e2e.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd := exec.Command(filepath.Join(bin, "ginkgo"), args...)
	cmd.Stdout = io.MultiWriter(logFile, os.Stdout)
	cmd.Stderr = cmd.Stdout
	cmd.Env = append(os.Environ(), "KUBECONFIG=")
	childproc.DieWithParent(cmd)
	t.Logf("running %s (log: %s)", strings.Join(cmd.Args, " "), logPath)
	started := time.Now()
	runErr := cmd.Run()
	t.Logf("the suite ran %s: %v", time.Since(started).Round(time.Second), runErr)

	// Keep the control plane's and the nodes' logs beside the report.
	logs := filepath.Join(out, "logs")
	_ = os.RemoveAll(logs)
	if err := os.MkdirAll(logs, 0o755); err != nil {
		t.Fatal(err)
	}
	matches, _ := filepath.Glob(filepath.Join(cp.dir, "*.log"))
	for _, m := range matches {
		if data, err := os.ReadFile(m); err == nil {
			_ = os.WriteFile(filepath.Join(logs, filepath.Base(m)), data, 0o644)
		}
	}

	if _, err := os.Stat(junit); err != nil {
		t.Fatalf("the suite wrote no report (%v); see %s", err, logPath)
	}
	// The API server logs a failed proxy dial, and the spec that asked for it fails with it.
	if dials := append(podIPDials(filepath.Join(cp.dir, "kube-apiserver.log")), podIPDials(logPath)...); len(dials) > 0 {
		t.Errorf("a real process dialled pod IPs (simulated; the spec belongs in %s):\n%s", skipsFile, strings.Join(dials, "\n"))
	}
	if os.Getenv("CONFORMANCE_EXPECT_PASS") != "" && runErr != nil {
		t.Errorf("specs that pass on minikubelet failed (%v): see %s", runErr, logPath)
	}
	// A named spec that did not run (renamed upstream, or a typo) must not pass unseen.
	if len(named) > 0 {
		status, err := specStatus(junit)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range named {
			if status[n] != "passed" {
				t.Errorf("spec %q: %q, want passed", n, status[n])
			}
		}
	} else if os.Getenv("CONFORMANCE_EXPECT_PASS") != "" && runErr != nil {
		if status, err := specStatus(junit); err == nil {
			for n, st := range status {
				if strings.HasPrefix(st, "failed") {
					t.Errorf("spec %q: %s", n, st)
				}
			}
		}
	}
}

// specStatus reads the suite's JUnit report: each spec's status by its full name.
func specStatus(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc struct {
		Suites []struct {
			Cases []struct {
				Name    string `xml:"name,attr"`
				Status  string `xml:"status,attr"`
				Failure struct {
					Message string `xml:"message,attr"`
				} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	status := map[string]string{}
	for _, s := range doc.Suites {
		for _, c := range s.Cases {
			st := c.Status
			if msg := strings.TrimSpace(c.Failure.Message); msg != "" {
				// the first line says why: what CI's log shows of a failed spec
				st += ": " + strings.SplitN(msg, "\n", 2)[0]
			}
			status[strings.TrimPrefix(c.Name, "[It] ")] = st
		}
	}
	return status, nil
}

// specNames reads a file of spec names, one a line (# comments).
func specNames(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, l := range strings.Split(string(data), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			names = append(names, l)
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%s: no spec names", path)
	}
	return names, nil
}

// focusOn returns a ginkgo focus that matches exactly the named specs (no name here is the
// tail of another): ginkgo matches the suite's description, a space and the spec's text.
func focusOn(names []string) string {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = regexp.QuoteMeta(n)
	}
	return " (" + strings.Join(quoted, "|") + ")$"
}

// readSkips reads skipsFile; every entry needs a spec pattern that compiles and a reason.
func readSkips(path string) ([]conformanceSkip, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var skips []conformanceSkip
	if err := yaml.UnmarshalStrict(data, &skips); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for i, s := range skips {
		if _, err := regexp.Compile(s.Spec); err != nil || s.Spec == "" || s.Reason == "" {
			return nil, fmt.Errorf("%s: entry %d: want a spec regular expression and a reason (spec %q: %v)", path, i, s.Spec, err)
		}
	}
	return skips, nil
}

// podIPDial matches the error of a real process (the API server's pod or service proxy,
// e2e.test itself) that tried to reach a simulated pod IP (the fake runtime's 10.88.0.0/16).
var podIPDial = regexp.MustCompile(`dial tcp 10\.88\.\d+\.\d+:\d+`)

// podIPDials returns the lines of a log that tell of a dial to a pod IP.
func podIPDials(path string) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		if podIPDial.MatchString(sc.Text()) {
			lines = append(lines, sc.Text())
		}
	}
	return lines
}
