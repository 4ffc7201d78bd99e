package programs

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/minikubelet/minikubelet/pkg/vfs"
)

// ddTime is how long dd sleeps for n bytes.
func ddTime(n int64) time.Duration {
	return time.Duration(float64(n) / ddThroughput * float64(time.Second))
}

// TestDdStreams checks dd's offsets now that it writes each block as it reads it.
func TestDdStreams(t *testing.T) {
	files := map[string]string{"/in": "0123456789", "/out": "abcdefghij"}
	runCases(t, []tc{
		{name: "notrunc overwrites in place", argv: []string{"dd", "if=/in", "of=/out", "bs=2", "count=2", "seek=1", "conv=notrunc", "status=none"},
			files: files, elapsed: ddTime(4), check: fileIs("/out", "ab0123ghij")},
		{name: "seek without notrunc cuts after the copy", argv: []string{"dd", "if=/in", "of=/out", "bs=2", "count=2", "seek=1", "status=none"},
			files: files, elapsed: ddTime(4), check: fileIs("/out", "ab0123")},
		{name: "seek past the end leaves zeros", argv: []string{"dd", "if=/in", "of=/out", "bs=4", "count=1", "seek=4", "conv=notrunc", "status=none"},
			files: files, elapsed: ddTime(4), check: fileIs("/out", "abcdefghij\x00\x00\x00\x00\x00\x000123")},
		{name: "seek past the end, nothing copied", argv: []string{"dd", "if=/dev/null", "of=/out", "bs=4", "seek=4", "status=none"},
			files: files, check: fileIs("/out", "abcdefghij\x00\x00\x00\x00\x00\x00")},
		{name: "a new file", argv: []string{"dd", "if=/in", "of=/tmp/new", "bs=3", "status=none"},
			files: files, elapsed: ddTime(10), check: fileIs("/tmp/new", "0123456789")},
		{name: "skip seeks the input", argv: []string{"dd", "if=/in", "bs=3", "skip=2", "status=noxfer"},
			files: files, stdout: "6789", stderr: "1+1 records in\n1+1 records out\n", elapsed: ddTime(4)},
		{name: "skip past the end", argv: []string{"dd", "if=/in", "bs=3", "skip=9", "status=noxfer"},
			files: files, stderr: "0+0 records in\n0+0 records out\n"},
		{name: "a byte at a time", argv: []string{"dd", "if=/in", "of=/out", "bs=1", "status=none"},
			files: files, elapsed: ddTime(10), check: fileIs("/out", "0123456789")},
		{name: "a file onto itself reads it as it was", argv: []string{"dd", "if=/in", "of=/in", "bs=4", "status=none"},
			files: files, elapsed: ddTime(10), check: fileIs("/in", "0123456789")},
		{name: "to /dev/null", argv: []string{"dd", "if=/dev/zero", "of=/dev/null", "bs=1M", "count=64"},
			stderr:  "64+0 records in\n64+0 records out\n67108864 bytes (64.0MB) copied, 0.062500 seconds, 1.0GB/s\n",
			elapsed: ddTime(64 << 20)},
		{name: "to /dev/stdout", argv: []string{"dd", "if=/in", "of=/dev/stdout", "bs=4", "status=none"},
			files: files, stdout: "0123456789", elapsed: ddTime(10)},
		{name: "output a directory", argv: []string{"dd", "if=/in", "of=/tmp"}, files: files,
			stderr: "dd: can't open '/tmp': Is a directory\n", status: 1},
		{name: "output in a missing directory", argv: []string{"dd", "if=/in", "of=/no/such"}, files: files,
			stderr: "dd: can't open '/no/such': No such file or directory\n", status: 1},
	})
}

// TestBigFileApplets runs applets over a 4000 MiB file that costs the filesystem a few
// extents: they read it in pieces.
func TestBigFileApplets(t *testing.T) {
	const size = 4000 << 20
	big := func(v *vfs.View, _ func(time.Time)) {
		if err := v.WriteFile("/tmp/big", []byte("start\n"), 0o644, false, 0, 0); err != nil {
			t.Fatal(err)
		}
		v.Truncate("/tmp/big", size-5)
		v.WriteFileAt("/tmp/big", []byte("\nend\n"), size-5, 0o644, 0, 0)
	}
	runCases(t, []tc{
		{name: "head", argv: []string{"head", "-n", "1", "/tmp/big"}, setup: big, stdout: "start\n"},
		{name: "head all but the last bytes", argv: []string{"head", "-c", "-4194303900", "/tmp/big"}, setup: big, stdout: "start\n" + strings.Repeat("\x00", 94)},
		{name: "head -c", argv: []string{"head", "-c", "8", "/tmp/big"}, setup: big, stdout: "start\n\x00\x00"},
		{name: "tail", argv: []string{"tail", "-n", "1", "/tmp/big"}, setup: big, stdout: "end\n"},
		{name: "tail -c", argv: []string{"tail", "-c", "6", "/tmp/big"}, setup: big, stdout: "\x00\nend\n"},
		{name: "tail -f", argv: []string{"tail", "-n", "1", "-f", "/tmp/big"}, setup: big, until: 3 * time.Second,
			steps:  map[time.Duration]func(*vfs.View){1500 * time.Millisecond: func(v *vfs.View) { v.WriteFile("/tmp/big", []byte("more\n"), 0o644, true, 0, 0) }},
			stdout: "end\nmore\n"},
		{name: "tail from the top", argv: []string{"tail", "-c", "+4194303996", "/tmp/big"}, setup: big, stdout: "\nend\n"},
		{name: "dd the end", argv: []string{"dd", "if=/tmp/big", "bs=1M", "skip=3999", "status=none"}, setup: big,
			stdout: strings.Repeat("\x00", 1<<20-5) + "\nend\n", elapsed: ddTime(1 << 20)},
	})
	// The shell's "<" reads the file where it lies too.
	withShell := func(setup func(*vfs.View, func(time.Time))) func(*vfs.View, func(time.Time)) {
		return func(v *vfs.View, setClock func(time.Time)) {
			v.WriteFile("/bin/sh", nil, 0o755, false, 0, 0)
			v.SetProgram("/bin/sh", "sh")
			if setup != nil {
				setup(v, setClock)
			}
		}
	}
	lines := map[string]string{"/l": "one\ntwo two\n\nlast without newline"}
	runCases(t, []tc{
		{name: "read a line of the big file", argv: []string{"sh", "-c", "read a < /tmp/big; echo $a"}, setup: withShell(big), stdout: "start\n"},
		{name: "read lines", argv: []string{"sh", "-c", `while read l; do echo "[$l]"; done < /l; echo "[$l]"`}, files: lines,
			setup: withShell(nil), stdout: "[one]\n[two two]\n[]\n[last without newline]\n"},
		{name: "read and cat share the offset", argv: []string{"sh", "-c", `{ read a; cat; } < /l`}, files: lines,
			setup: withShell(nil), stdout: "two two\n\nlast without newline"},
		{name: "wc of a 64 MiB redirection", argv: []string{"sh", "-c", "wc -c < /tmp/z"}, setup: withShell(func(v *vfs.View, _ func(time.Time)) {
			v.WriteFile("/tmp/z", nil, 0o644, false, 0, 0)
			v.Truncate("/tmp/z", 64<<20)
		}), stdout: "67108864\n"},
		{name: "a directory", argv: []string{"sh", "-c", "cat < /tmp"}, setup: withShell(nil),
			stderr: "sh: can't open /tmp: Is a directory\n", status: 1},
	})
}

// TestDdFourThousandMiB is the case this all is for: dd of 4000 MiB of zeros into a
// container's file costs the daemon a few extents, not 4000 MiB.
func TestDdFourThousandMiB(t *testing.T) {
	if testing.Short() {
		t.Skip("copies 4000 MiB")
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	got, v := runCase(t, tc{argv: []string{"dd", "if=/dev/zero", "of=/tmp/big", "bs=1M", "count=4000"}})
	runtime.GC()
	runtime.ReadMemStats(&after)
	if want := "4000+0 records in\n4000+0 records out\n"; got.Status != 0 || !strings.HasPrefix(got.Stderr, want) {
		t.Errorf("status %d, stderr %q; want 0, %q...", got.Status, got.Stderr, want)
	}
	info, err := v.Stat("/tmp/big")
	if err != nil || info.Size != 4000<<20 {
		t.Fatalf("stat: size %d (%v), want %d", info.Size, err, 4000<<20)
	}
	growth := int64(after.HeapInuse) - int64(before.HeapInuse)
	t.Logf("heap in use grew by %d bytes (%.2f MiB) for the 4000 MiB file", growth, float64(growth)/(1<<20))
	if growth > 64<<20 {
		t.Errorf("heap in use grew by %d MiB, want under 64", growth>>20)
	}
	runtime.KeepAlive(v)
}
