package fake

import (
	"iter"
	"slices"
)

// Streams of a log line, as the CRI log format names them.
const (
	StreamStdout = "stdout"
	StreamStderr = "stderr"
)

// LogLine is one line of a container's log: when it was written (unix nanoseconds), on which
// stream, and its text.
type LogLine struct {
	Time   int64
	Stream string
	Text   string
	// Partial is a last line without its newline (`echo -n DONE` then exit), as the CRI's
	// "P" tag: readers add no newline after it.
	Partial bool
}

// ContainerLog returns the container's log: the lines its behaviour prints (logEvery,
// logLine) while it runs and the ones the simulator writes (start, SIGTERM, exit), in time
// order, from since (unix nanoseconds; 0 for all) to now. Only the last LogMaxBytes of it are
// kept, as the kubelet reads only the current log file; tail > 0 keeps the last tail lines.
// The lines are computed from the clock, so a long-running chatty container costs nothing
// until it is read. An unknown id wraps cri.ErrNotFound.
func (r *Runtime) ContainerLog(id string, since int64, tail int) ([]LogLine, error) {
	now := r.lock()
	defer r.unlock(now)
	c, ok := r.containers[id]
	if !ok {
		return nil, notFound("container", id)
	}
	budget := r.logMaxBytes
	if budget <= 0 {
		budget = DefaultLogMaxBytes
	}
	// Walk back from the newest line: the periodic lines (numbered 1..k) and the simulator's,
	// merged by time (at one instant the periodic line comes first: it is printed before an exit).
	var out []LogLine
	k := c.periodicLines(now)
	written, stop := iter.Pull(c.logs.backward(&r.lines))
	defer stop()
	ev, more := written()
	for tail <= 0 || len(out) < tail {
		var l LogLine
		switch {
		case k > 0 && (!more || c.periodicTime(k) > ev.Time):
			l = LogLine{Time: c.periodicTime(k), Stream: StreamStdout, Text: c.beh.LogText(k)}
			k--
		case more:
			l = ev
			ev, more = written()
		default:
			return reverse(out), nil
		}
		if l.Time < since {
			break
		}
		budget -= int64(len(l.Text)) + 1
		if budget < 0 {
			break
		}
		out = append(out, l)
	}
	return reverse(out), nil
}

// periodicLines is how many periodic lines the container has printed by now.
func (c *ctr) periodicLines(now int64) int64 {
	every := int64(c.beh.LogEvery)
	if every <= 0 {
		return 0
	}
	return c.ranFor(now) / every
}

// periodicTime is when the k-th periodic line was printed.
func (c *ctr) periodicTime(k int64) int64 { return c.startedAt + k*int64(c.beh.LogEvery) }

func reverse(l []LogLine) []LogLine {
	slices.Reverse(l)
	return l
}
