package fake

import (
	"fmt"
	"hash/maphash"
	"slices"
	"strings"
	"testing"
)

// What is written comes back, newest first, whatever its times, streams and sizes, across
// chunks.
func TestLogBufferRoundTrip(t *testing.T) {
	tests := []struct {
		name  string
		lines []LogLine
	}{
		{"empty", nil},
		{"one", []LogLine{{Time: 1e18, Stream: StreamStdout, Text: "tick"}}},
		{"streams and partial", []LogLine{
			{Time: 5, Stream: StreamStderr, Text: "err"},
			{Time: 5, Stream: StreamStdout, Text: ""},
			{Time: 9, Stream: StreamStdout, Text: "DONE", Partial: true},
		}},
		// A handler's line stamped with its request's instant may come before the last.
		{"time going back", []LogLine{{Time: 100, Stream: StreamStdout, Text: "b"}, {Time: 50, Stream: StreamStdout, Text: "a"}}},
		{"many chunks", func() []LogLine {
			var ls []LogLine
			for i := range 3000 {
				ls = append(ls, LogLine{Time: int64(i) * 5e9, Stream: StreamStdout, Text: fmt.Sprintf("line %d %s", i, strings.Repeat("x", i%40))})
			}
			return ls
		}()},
		{"a line over a chunk", []LogLine{{Time: 1, Stream: StreamStdout, Text: strings.Repeat("y", 3*logChunkBytes)}, {Time: 2, Stream: StreamStdout, Text: "z"}}},
	}
	// Each log is read back alone, with a node's dictionary that has seen no line, and
	// with one another container's log has taught every line (the lines are references).
	dicts := []struct {
		name string
		make func(lines []LogLine) *lineTexts
	}{
		{"no dictionary", func([]LogLine) *lineTexts { return nil }},
		{"new dictionary", func([]LogLine) *lineTexts { return &lineTexts{} }},
		{"lines known", func(lines []LogLine) *lineTexts {
			d := &lineTexts{}
			var other logBuffer
			for _, l := range lines {
				other.add(l, d)
				other.add(l, d)
			}
			return d
		}},
	}
	for _, tt := range tests {
		for _, dict := range dicts {
			t.Run(tt.name+"/"+dict.name, func(t *testing.T) {
				d := dict.make(tt.lines)
				var b logBuffer
				var size int64
				for _, l := range tt.lines {
					b.add(l, d)
					size += int64(len(l.Text)) + 1
				}
				got := slices.Collect(b.backward(d))
				slices.Reverse(got)
				if len(got) != len(tt.lines) || (len(got) > 0 && !slices.Equal(got, tt.lines)) {
					t.Fatalf("read back %d lines, want %d; first difference at %d", len(got), len(tt.lines), firstDiff(got, tt.lines))
				}
				if b.written != size || b.kept() != size {
					t.Errorf("written %d, kept %d; want %d", b.written, b.kept(), size)
				}
			})
		}
	}
}

// Lines many containers print alike are kept once a node; lines printed once, too short or
// too long are kept in the log; the dictionary stays bounded whatever is printed.
func TestLineTexts(t *testing.T) {
	banner := []string{
		"/docker-entrypoint.sh: /docker-entrypoint.d/ is not empty, will attempt to perform configuration",
		"/docker-entrypoint.sh: Looking for shell scripts in /docker-entrypoint.d/",
		"/docker-entrypoint.sh: Configuration complete; ready for start up",
	}
	tests := []struct {
		name string
		// line is what container i prints as its j-th of perLog lines.
		line          func(i, j int) string
		logs, perLog  int
		wantTexts     int
		maxBytesALine float64 // what a log holds a line in, at most, on average
	}{
		{"a banner in every container", func(_, j int) string { return banner[j] }, 1000, 3, 3, 6},
		{"a line every container prints once", func(i, j int) string {
			return fmt.Sprintf("%d:C 01 Jan 2024 00:00:%02d.%03d * Redis is starting", i, j, i%1000)
		}, 1000, 2, 0, 60},
		{"short lines", func(_, j int) string { return "ok" }, 100, 5, 0, 6},
		{"long lines", func(_, j int) string { return strings.Repeat("z", lineTextMaxBytes+1) }, 10, 2, 0, lineTextMaxBytes + 8},
		{"a hostile flood of repeated new lines", func(i, j int) string { return fmt.Sprintf("line %09d", i*2+j/2) }, lineTextsMax + 100, 4, lineTextsMax, 16},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := &lineTexts{}
			logs := make([]logBuffer, tt.logs)
			var held int
			for i := range logs {
				for j := range tt.perLog {
					logs[i].add(LogLine{Time: int64(i*tt.perLog + j), Stream: StreamStdout, Text: tt.line(i, j)}, d)
				}
			}
			for i := range logs {
				for _, c := range logs[i].chunks {
					held += len(c.buf)
				}
				got := slices.Collect(logs[i].backward(d))
				for k, l := range got {
					if want := tt.line(i, tt.perLog-1-k); l.Text != want {
						t.Fatalf("log %d line %d reads %q, want %q", i, tt.perLog-1-k, l.Text, want)
					}
				}
			}
			if len(d.texts) != tt.wantTexts || len(d.ids) != len(d.texts) {
				t.Errorf("the dictionary holds %d texts (%d ids), want %d", len(d.texts), len(d.ids), tt.wantTexts)
			}
			if perLine := float64(held) / float64(tt.logs*tt.perLog); perLine > tt.maxBytesALine {
				t.Errorf("%.1f bytes a line in the logs, want at most %.0f", perLine, tt.maxBytesALine)
			}
		})
	}
}

func firstDiff(a, b []LogLine) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// Rotation keeps at least the newest limit bytes and drops the oldest lines once more than
// a quarter over; the newest line always stays.
func TestLogBufferRotate(t *testing.T) {
	tests := []struct {
		name         string
		lines, width int
		limit        int64
		wantDropped  bool
	}{
		{"under the limit", 100, 10, 2000, false},
		{"within a quarter over", 100, 10, 1000, false}, // 1,100 bytes kept, limit 1,000
		{"over", 30000, 10, 40000, true},
		{"one huge line", 1, 100000, 10, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b logBuffer
			for i := range tt.lines {
				b.add(LogLine{Time: int64(i), Stream: StreamStdout, Text: strings.Repeat("x", tt.width-1)}, nil)
				b.rotate(tt.limit)
			}
			if dropped := b.dropped > 0; dropped != tt.wantDropped {
				t.Errorf("dropped %d bytes; want dropping %v", b.dropped, tt.wantDropped)
			}
			if b.kept() > tt.limit+tt.limit/4 && len(b.chunks) > 1 {
				t.Errorf("kept %d bytes in %d chunks, limit %d", b.kept(), len(b.chunks), tt.limit)
			}
			lines := slices.Collect(b.backward(nil))
			if len(lines) == 0 || lines[0].Time != int64(tt.lines-1) {
				t.Fatalf("the newest line is gone: %d lines kept", len(lines))
			}
			var kept int64
			for _, l := range lines {
				kept += int64(len(l.Text)) + 1
			}
			if kept != b.kept() {
				t.Errorf("lines hold %d bytes, kept says %d", kept, b.kept())
			}
			if kept < min(tt.limit, int64(tt.lines*tt.width)) {
				t.Errorf("kept %d bytes, less than the limit %d", kept, tt.limit)
			}
		})
	}
}

// A line costs a few bytes beyond its text: what keeps 10,000 chatty containers' logs small.
func TestLogBufferCompact(t *testing.T) {
	var b logBuffer
	for i := range 1000 {
		b.add(LogLine{Time: 1.7e18 + int64(i)*5e9, Stream: StreamStdout, Text: "tick"}, nil)
	}
	var held int
	for _, c := range b.chunks {
		held += cap(c.buf)
	}
	if perLine := float64(held) / 1000; perLine > 16 {
		t.Errorf("%.1f bytes per 4-byte line held, want at most 16", perLine)
	}
}

// TestLineTextsSharedSet: texts printed in turn whose hashes pick the same set of the
// seen table are each taken in at their second sighting, up to a set's four ways (one slot
// a set once made two such texts evict each other for good).
func TestLineTextsSharedSet(t *testing.T) {
	d := &lineTexts{ids: map[string]uint32{}, seed: maphash.MakeSeed()}
	var same []string
	for i := 0; len(same) < lineSeenWays; i++ {
		text := fmt.Sprintf("a banner line, number %d", i)
		if maphash.String(d.seed, text)%lineSeenSets == 0 {
			same = append(same, text)
		}
	}
	for round := range 2 {
		for _, text := range same {
			if _, ok := d.id(text); ok != (round == 1) {
				t.Fatalf("round %d: %q taken in %v, want %v", round, text, ok, round == 1)
			}
		}
	}
}
