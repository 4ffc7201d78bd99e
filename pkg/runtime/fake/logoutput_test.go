package fake

import (
	"slices"
	"strings"
	"testing"
)

// What programs write becomes log lines as containerd cuts them: at newlines, each stream
// apart, a line over 16 KiB split, an unterminated last line kept until the process ends
// (then written partial). Between whole lines a container keeps no buffer.
func TestLogOutputLines(t *testing.T) {
	type write struct {
		stderr bool
		text   string
	}
	long := strings.Repeat("x", maxLineBytes+1)
	tests := []struct {
		name   string
		writes []write
		want   []LogLine // Time is the write's index
	}{
		{"whole lines", []write{{false, "a\nb\n"}}, []LogLine{{0, StreamStdout, "a", false}, {0, StreamStdout, "b", false}}},
		{"a line over three writes", []write{{false, "he"}, {false, "llo\nwo"}, {false, "rld\n"}},
			[]LogLine{{1, StreamStdout, "hello", false}, {2, StreamStdout, "world", false}}},
		{"an empty line", []write{{false, "\n"}}, []LogLine{{0, StreamStdout, "", false}}},
		{"unterminated at exit", []write{{false, "DONE"}}, []LogLine{{1, StreamStdout, "DONE", true}}},
		{"streams apart", []write{{false, "x"}, {true, "err\n"}, {false, "y\n"}, {true, "tail"}},
			[]LogLine{{1, StreamStderr, "err", false}, {2, StreamStdout, "xy", false}, {4, StreamStderr, "tail", true}}},
		{"a line over the limit is split", []write{{false, long}, {false, "z\n"}},
			[]LogLine{{0, StreamStdout, long, false}, {1, StreamStdout, "z", false}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Runtime{}
			c := &ctr{proc: &proc{}}
			out := &logOutput{r: r, c: c, stream: StreamStdout}
			errOut := &logOutput{r: r, c: c, stream: StreamStderr}
			for i, w := range tt.writes {
				o := out
				if w.stderr {
					o = errOut
				}
				o.WriteStamped([]byte(w.text), int64(i))
			}
			if last := tt.writes[len(tt.writes)-1].text; strings.HasSuffix(last, "\n") && c.partial != nil {
				t.Errorf("a buffer is kept after whole lines: %q", *c.partial)
			}
			c.flushLogs(r, int64(len(tt.writes)))
			got := slices.Collect(c.logs.backward(&r.lines))
			slices.Reverse(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("lines\n%v\nwant\n%v", got, tt.want)
			}
		})
	}
}
