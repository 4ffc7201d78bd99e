package shell

import (
	"runtime"
	"testing"
	"time"

	"github.com/minikubelet/minikubelet/pkg/memcg"
)

// fuzzMemoryLimit is the fuzzed container's memory limit, and fuzzHeapCeiling what the
// test process's heap may grow by while it runs, garbage included: a few times the limit
// (an expansion's copy is charged before it is made, the value it replaces is freed at
// the collector's next cycle), never what an unbounded script asks for.
const (
	fuzzMemoryLimit = 16 << 20
	fuzzHeapCeiling = 256 << 20
)

// FuzzShell runs arbitrary scripts: whatever they do, the machine must neither panic nor
// hang its caller. Each Step returns (a busy loop is preempted after its slice), and after
// a bounded number of steps everything is killed and must be gone. What the scripts hold
// is charged to a memory cgroup: it never holds more than its limit, and the process's
// heap stays under a ceiling whatever the script allocates (a script past the limit is
// OOM-killed).
func FuzzShell(f *testing.F) {
	for _, seed := range []string{
		"echo hi; exit 3",
		"while :; do :; done",
		"f() { f; }; f",
		"b() { b | b & }; b",
		"x=$(cat /etc/passwd | cat); echo ${x:-none} >> /tmp/o; cat < /tmp/o",
		"trap 'echo t' TERM EXIT; sleep 1 & wait; (exit 4); echo $?",
		"for ((i=0;i<100000;i++)); do echo $i; done | head1",
		"case $1 in a|b) echo ab;; *) echo other;; esac; read x <<< 'y z'; echo $x",
		"if [ -f /x ]; then :; elif [[ a == a* ]]; then echo m; fi; ${undefined?boom}",
		"exec 3>/tmp/f; echo >&3 x; exec >&-; echo gone",
		"for ((i=0;i<100000;i++)); do ecne | heaho $i; done | head1", // forks without end: the Step budget
		`s=x; while :; do s="$s$s"; done`,                            // memory without end: the cgroup
		`set -- a b; while :; do set -- "$@" "$@" "$@"; done`,
		`x=0123456789; while :; do x=$x$x; echo "$x$x" | cat > /tmp/o; done`,
		`f() { local v="$1$1$1"; f "$v"; }; f abcdef`,
		`while :; do echo "$(cat /tmp/o /tmp/o)" >> /tmp/o; done`,
		"s=ab; while :; do s=\"$s$s\"; cat <<EOF\n$s$s\nEOF\ndone | cat",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, script string) {
		fs := newTestFS(t)
		_ = fs.MkdirAll("/tmp", 0o777, 0, 0)
		workers := NewWorkers()
		defer workers.Close()
		g := memcg.NewRoot(0).NewGroup(fuzzMemoryLimit, 0, nil)
		m := NewMachine(Config{FS: fs, Programs: func(n string) Program { return testPrograms[n] }, Slice: 500, MaxProcs: 64, Workers: workers, Memory: g})
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		base := ms.HeapAlloc
		if _, err := m.Start(Spec{Argv: []string{"sh", "-c", script}, Env: []string{"PATH=/bin"}, Stdout: &discard{}, Stderr: &discard{}}); err != nil {
			t.Fatal(err)
		}
		now := int64(0)
		for i := 0; i < 50 && m.Running() > 0; i++ {
			next := m.Step(now)
			if g.Used() > fuzzMemoryLimit {
				t.Fatalf("the container holds %d bytes, over its %d limit", g.Used(), fuzzMemoryLimit)
			}
			runtime.ReadMemStats(&ms)
			if grew := int64(ms.HeapAlloc) - int64(base); grew > fuzzHeapCeiling {
				t.Fatalf("the heap grew by %d MiB, over the %d MiB ceiling", grew>>20, fuzzHeapCeiling>>20)
			}
			if next == 0 {
				break
			}
			now = max(now+int64(time.Millisecond), next)
		}
		m.KillAll()
		if n := m.Running(); n != 0 {
			t.Fatalf("%d processes left after KillAll", n)
		}
	})
}

// discard is an Output that keeps at most a little, so a chatty script costs nothing.
type discard struct{ n int }

func (d *discard) Write(b []byte) (int, error) { d.n += len(b); return len(b), nil }
