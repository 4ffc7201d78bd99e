package podsource

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/internal/eventually"
	"github.com/minikubelet/minikubelet/pkg/runner"
)

// TestSharedWatcherServesEachNode: the nodes of a process share one inotify instance, and
// each node's source sees the changes of its own directory only, including after its
// directory was removed and created again. A real-time test on real directories, as
// TestWatchSeesChangesQuickly.
func TestSharedWatcherServesEachNode(t *testing.T) {
	base := t.TempDir()
	before := runtime.NumGoroutine()
	sw, err := NewSharedWatcher()
	if err != nil {
		t.Fatal(err)
	}
	g := runner.NewGroup(context.Background())
	g.Go("shared-watch", sw.Run)
	type node struct {
		dir string
		m   *Merger
	}
	var nodes []node
	for _, name := range []string{"n1", "n2"} {
		dir := filepath.Join(base, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		m := newMerger(t, clock.RealClock{})
		src, err := NewFileSource(Config{Path: dir, NodeName: name, Clock: clock.RealClock{}, Watch: true, SharedWatcher: sw, CheckFrequency: time.Hour, Sink: m})
		if err != nil {
			t.Fatal(err)
		}
		g.Go(name, runner.NewOwner(clock.RealClock{}, []runner.Loop{{Name: "file-source", Due: src.Due, Step: src.Step, Wake: src.Wake()}}, nil).Run)
		g.Go(name+"-watch", src.WatchLoop)
		nodes = append(nodes, node{dir, m})
	}
	await := func(m *Merger, want string) {
		t.Helper()
		awaitUpdate(t, m, want)
	}
	write := func(dir, name string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name+".yaml"), []byte(podYAML(name, "")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	n1, n2 := nodes[0], nodes[1]
	write(n2.dir, "web")
	await(n2.m, "ADD[web-n2]")
	write(n1.dir, "api")
	await(n1.m, "ADD[api-n1]")
	if got := drain(n2.m); len(got) != 0 {
		t.Errorf("node n2 saw n1's change: %s", describe(got))
	}

	// n1's directory goes and comes back: its pods go, and the new directory is watched.
	if err := os.RemoveAll(n1.dir); err != nil {
		t.Fatal(err)
	}
	await(n1.m, "REMOVE[api-n1]")
	if err := os.Mkdir(n1.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write(n1.dir, "db")
	await(n1.m, "ADD[db-n1]")
	write(n2.dir, "cache") // n2's watch went on through all of it
	await(n2.m, "ADD[cache-n2]")

	g.Stop()
	g.Wait()
	eventually.True(t, "the watcher's goroutines to exit", func() bool { return runtime.NumGoroutine() <= before })
}
