package fake

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/minikubelet/minikubelet/pkg/cri"
)

func texts(lines []LogLine) string {
	var b strings.Builder
	for _, l := range lines {
		fmt.Fprintf(&b, "%s %s|", l.Stream, l.Text)
	}
	return b.String()
}

// TestContainerLog: the periodic lines of logEvery/logLine, numbered from 1, with the
// simulator's own lines (start, SIGTERM, exit) in time order; tail, since and the size bound.
func TestContainerLog(t *testing.T) {
	r, clk := newRuntime(t, Config{})
	sbID, sbCfg := runPod(t, r, "u1", annotate("app", "logEvery=10s,logLine=served request {n},stopDelay=5s"))
	id := startContainer(t, r, sbID, sbCfg, "app", "")
	t0 := clk.Now().UnixNano()
	run(t, r, clk, 35*time.Second)
	lines, err := r.ContainerLog(id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := "stderr minikubelet: container app started (attempt 0)|stdout served request 1|stdout served request 2|stdout served request 3|"
	if got := texts(lines); got != want {
		t.Errorf("log after 35s:\n got %s\nwant %s", got, want)
	}
	if lines[1].Time != t0+int64(10*time.Second) {
		t.Errorf("line 1 at %d, want t0 + 10s", lines[1].Time)
	}
	if err := await(t, r, clk, time.Minute, func(ctx context.Context) error { return r.StopContainer(ctx, id, 30) }); err != nil {
		t.Fatalf("StopContainer: %v", err)
	}
	lines, _ = r.ContainerLog(id, 0, 3)
	want = "stderr minikubelet: SIGTERM received, grace period 30s|stdout served request 4|stderr minikubelet: exited with code 0 (Completed)|"
	if got := texts(lines); got != want {
		t.Errorf("the last 3 lines after a stop:\n got %s\nwant %s", got, want)
	}
	// The exit ends the periodic lines: nothing new however long one waits.
	run(t, r, clk, time.Hour)
	if again, _ := r.ContainerLog(id, 0, 3); texts(again) != want {
		t.Errorf("an exited container kept printing: %s", texts(again))
	}
	since, _ := r.ContainerLog(id, t0+int64(25*time.Second), 0)
	if got := texts(since); !strings.HasPrefix(got, "stdout served request 3|") {
		t.Errorf("since 25s: %s", got)
	}
	if _, err := r.ContainerLog("nope", 0, 0); !errors.Is(err, cri.ErrNotFound) {
		t.Errorf("unknown container: %v", err)
	}
}

// TestContainerLogBound: only the last LogMaxBytes are kept, however long it ran; the lines
// are computed, not stored, so a day of chatter costs nothing.
func TestContainerLogBound(t *testing.T) {
	r, clk := newRuntime(t, Config{LogMaxBytes: 100})
	sbID, sbCfg := runPod(t, r, "u1", annotate("app", "logEvery=1s,logLine=0123456789"))
	id := startContainer(t, r, sbID, sbCfg, "app", "")
	run(t, r, clk, 24*time.Hour)
	lines, err := r.ContainerLog(id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 9 { // 11 bytes each with the newline
		t.Errorf("%d lines within 100 bytes, want 9: %s", len(lines), texts(lines))
	}
	if last := lines[len(lines)-1]; last.Time != clk.Now().UnixNano() {
		t.Errorf("the last line is from %v, want now", time.Unix(0, last.Time))
	}
}
