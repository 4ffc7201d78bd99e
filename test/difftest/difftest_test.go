package difftest

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/internal/simtest"
	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/runner"
	"github.com/minikubelet/minikubelet/pkg/runtime/fake"
)

func TestMain(m *testing.M) {
	klog.SetLogger(logr.Discard()) // the runtime's logs are noise here
	os.Exit(m.Run())
}

const (
	// image is the container the simulated side runs in.
	image = "busybox:1.36"
	// hostTimeout bounds a script under the real busybox; simTimeout the same script on
	// the virtual clock. The corpus's scripts take well under a second.
	hostTimeout = 10 * time.Second
	simTimeout  = 10 * time.Minute
)

// result is what a script did: compared byte for byte.
type result struct {
	Stdout string
	Stderr string
	Exit   int
}

// script is one entry of the corpus: "FILE/NAME" (the txtar archive without its
// extension, the section's name) and the text sh -c runs.
type script struct {
	name, body string
}

// TestBusybox runs every script of testdata/*.txtar under the real busybox and under
// minikubelet's, and compares the two. A script that differs must be listed in
// testdata/known.txt with its reason; a listed script that matches fails too, so that the
// list stays true.
func TestBusybox(t *testing.T) {
	bb := busybox(t)
	corpus := loadCorpus(t, "testdata")
	known := loadKnown(t, filepath.Join("testdata", "known.txt"))
	names := map[string]bool{}
	for _, s := range corpus {
		names[s.name] = true
	}
	for name := range known {
		if !names[name] {
			t.Errorf("testdata/known.txt lists %q, which is not in the corpus", name)
		}
	}
	bin := appletDir(t, bb)
	var same, listed, lacking int
	for _, s := range corpus {
		t.Run(s.name, func(t *testing.T) {
			work := t.TempDir()
			want := normalise(runBusybox(t, bb, bin, work, s.body))
			got := normalise(runSim(t, work, s.body))
			reason, isKnown := known[s.name]
			diff := cmp.Diff(want, got)
			switch {
			case diff == "" && isKnown:
				t.Errorf("matches busybox now: remove it from testdata/known.txt (%s)", reason)
			case diff == "":
				same++
			case isKnown:
				listed++
				if referenceLacks(reason) {
					lacking++
				}
				t.Logf("known difference (%s) (-busybox +minikubelet):\n%s", reason, diff)
			default:
				t.Errorf("differs from busybox (-busybox +minikubelet):\n%s\nscript:\n%s", diff, s.body)
			}
		})
	}
	comparable := len(corpus) - lacking
	summary := fmt.Sprintf("difftest: %d scripts: %d identical (%.1f%%), %d known differences; %d of them where Debian's build lacks the applet or feature, so %d of %d comparable scripts identical (%.1f%%)",
		len(corpus), same, 100*float64(same)/float64(max(len(corpus), 1)), listed, lacking, same, comparable, 100*float64(same)/float64(max(comparable, 1)))
	t.Log(summary)
	if *summaryFile != "" {
		if err := os.WriteFile(*summaryFile, []byte(summary+"\n"), 0o644); err != nil {
			t.Error(err)
		}
	}
}

var summaryFile = flag.String("summary", "", "also write the figures to this file (make difftest prints them)")

// referenceLacks reports whether a known difference's reason is that Debian's busybox
// build lacks what the busybox:1.36 image has (an applet, an option, a feature): the
// script cannot be compared here, not a difference of the simulated programs.
func referenceLacks(reason string) bool {
	return strings.HasPrefix(reason, "Debian's busybox") || strings.HasPrefix(reason, "Debian's build")
}

// banner is the first line of busybox's usage texts, which names its version and build
// ("BusyBox v1.35.0 (Debian 1:1.35.0-4+deb12u1+b1)", "BusyBox v1.36.1 (simulated)"):
// normalise makes only that line's version text the same. The texts after it are the same
// but where 1.36.1 changed them (sort's -h, xargs' -o: hack/usagetext).
var banner = regexp.MustCompile(`BusyBox v[0-9.]+ \([^)\n]*\) multi-call binary\.`)

// normalise makes the two sides' version banners the same.
func normalise(r result) result {
	r.Stdout = banner.ReplaceAllString(r.Stdout, "BusyBox multi-call binary.")
	r.Stderr = banner.ReplaceAllString(r.Stderr, "BusyBox multi-call binary.")
	return r
}

// busybox finds Debian's busybox. Without it the test is skipped, unless
// MINIKUBELET_REQUIRE_TOOLS is set (CI sets it after installing it): then it fails.
func busybox(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("busybox")
	if err == nil {
		return path
	}
	if os.Getenv("MINIKUBELET_REQUIRE_TOOLS") != "" {
		t.Fatal("busybox not found and MINIKUBELET_REQUIRE_TOOLS is set: install Debian's busybox package")
	}
	t.Skip("busybox not installed (Debian package busybox); .ci/run installs it")
	return ""
}

// appletDir is a directory of symbolic links to busybox, one per applet it has: the only
// directory on the scripts' PATH, as /bin is a busybox image's.
func appletDir(t *testing.T, bb string) string {
	t.Helper()
	out, err := exec.Command(bb, "--list").Output()
	if err != nil {
		t.Fatalf("busybox --list: %v", err)
	}
	dir := filepath.Join(t.TempDir(), "bin")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range strings.Fields(string(out)) {
		if err := os.Symlink(bb, filepath.Join(dir, name)); err != nil {
			t.Fatalf("link applet %s: %v", name, err)
		}
	}
	return dir
}

// env is the scripts' environment on both sides but PATH: the work directory is their
// home and their TMPDIR.
func env(path, work string) []string {
	return []string{"PATH=" + path, "HOME=" + work, "TMPDIR=" + work, "LANG=C", "TZ=UTC"}
}

// runBusybox runs body with `busybox sh -c` in work, the applets in bin the only ones on
// PATH. The path of bin in what it prints is /bin, the simulated container's.
func runBusybox(t *testing.T, bb, bin, work, body string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hostTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bb, "sh", "-c", body)
	cmd.Dir = work
	cmd.Env = env(bin, work)
	cmd.WaitDelay = time.Second // a background child left holding the pipes
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{Stdout: stdout.String(), Stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		r.Stderr += "<timed out>"
		r.Exit = -1
	case errors.As(err, &ee):
		r.Exit = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			r.Exit = 128 + int(ws.Signal()) // what a parent shell reports
		}
	case err != nil:
		t.Fatalf("busybox sh -c: %v", err)
	}
	r.Stdout = strings.ReplaceAll(r.Stdout, bin+"/", "/bin/")
	r.Stderr = strings.ReplaceAll(r.Stderr, bin+"/", "/bin/")
	return r
}

// runSim runs body with sh -c in a busybox:1.36 container of minikubelet's runtime, as
// an exec in it (the container's main process sleeps), on a virtual clock: the runtime's
// loop is stepped and the clock moved to whatever is due next.
func runSim(t *testing.T, work, body string) result {
	t.Helper()
	clk := simtest.NewClock()
	r, err := fake.New(fake.Config{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx := context.Background()
	sbCfg := &cri.PodSandboxConfig{Metadata: cri.PodSandboxMetadata{Name: "difftest", Namespace: "default", UID: "difftest"}}
	sb, err := r.RunPodSandbox(ctx, sbCfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.PullImage(ctx, cri.ImageSpec{Image: image}, nil); err != nil {
		t.Fatal(err)
	}
	cc := &cri.ContainerConfig{
		Metadata:   cri.ContainerMetadata{Name: "main"},
		Image:      cri.ImageSpec{Image: image},
		Command:    []string{"sleep", "infinity"},
		Envs:       keyValues(env("/bin", work)),
		WorkingDir: work,
	}
	id, err := r.CreateContainer(ctx, sb, cc, sbCfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	loops := []runner.Loop{{Name: "runtime", Due: r.Due, Step: r.Step, Wake: r.Wake()}}
	execSync := func(cmd ...string) (*cri.ExecSyncResponse, error) {
		var resp *cri.ExecSyncResponse
		err := simtest.Await(t, clk, loops, 2*simTimeout, func(ctx context.Context) error {
			var err error
			resp, err = r.ExecSync(ctx, id, cmd, simTimeout)
			return err
		})
		return resp, err
	}
	// The work directory is the host's temporary one, at the same path, so that the
	// paths scripts print are the same on both sides.
	if resp, err := execSync("mkdir", "-p", work); err != nil || resp.ExitCode != 0 {
		t.Fatalf("mkdir -p %s: %v %+v", work, err, resp)
	}
	resp, err := execSync("sh", "-c", body)
	switch {
	case errors.Is(err, cri.ErrDeadlineExceeded):
		return result{Stderr: "<timed out>", Exit: -1}
	case err != nil:
		t.Fatalf("exec sh -c: %v", err)
	}
	return result{Stdout: string(resp.Stdout), Stderr: string(resp.Stderr), Exit: int(resp.ExitCode)}
}

func keyValues(env []string) []cri.KeyValue {
	out := make([]cri.KeyValue, 0, len(env))
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		out = append(out, cri.KeyValue{Key: k, Value: v})
	}
	return out
}

// loadCorpus reads the scripts of every dir/*.txtar: in each, a line "-- NAME --" starts
// a script called FILE/NAME that runs to the next such line; text before the first is a
// comment. A script's final newline is kept, as a file's would be.
func loadCorpus(t *testing.T, dir string) []script {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.txtar"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus in %s/*.txtar: %v", dir, err)
	}
	sort.Strings(files)
	var out []script
	seen := map[string]bool{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		prefix := strings.TrimSuffix(filepath.Base(f), ".txtar") + "/"
		cur := -1
		for i, line := range strings.SplitAfter(string(data), "\n") {
			trimmed := strings.TrimRight(line, "\n")
			if name, ok := strings.CutPrefix(trimmed, "-- "); ok && strings.HasSuffix(name, " --") {
				name = prefix + strings.TrimSuffix(name, " --")
				if seen[name] || strings.ContainsAny(name, " \t") {
					t.Fatalf("%s:%d: script name %q repeated or with blanks", f, i+1, name)
				}
				seen[name] = true
				out = append(out, script{name: name})
				cur = len(out) - 1
				continue
			}
			if cur >= 0 {
				out[cur].body += line
			}
		}
	}
	return out
}

// loadKnown reads the known differences: a line is a script's name, blanks, and why it
// differs; blank lines and lines starting with # are comments.
func loadKnown(t *testing.T, path string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]string{}
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, reason, _ := strings.Cut(line, " ")
		reason = strings.TrimSpace(reason)
		if reason == "" {
			t.Fatalf("%s:%d: %q has no reason", path, i+1, name)
		}
		if _, dup := known[name]; dup {
			t.Fatalf("%s:%d: %q listed twice", path, i+1, name)
		}
		known[name] = reason
	}
	return known
}
