package main

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

func TestParseLine(t *testing.T) {
	tests := []struct {
		line string
		name string
		vals map[string]float64
	}{
		{"BenchmarkBurst/pods=1000/channelCapacity=4000-2   \t       1\t 435289604 ns/op\t         0 dropped-events\t         1.000 virtual-s\t84925832 B/op",
			"BenchmarkBurst/pods=1000/channelCapacity=4000",
			map[string]float64{"ns/op": 435289604, "dropped-events": 0, "virtual-s": 1, "B/op": 84925832}},
		{"BenchmarkRelist/steady/pods=10000 200 250000 ns/op", "BenchmarkRelist/steady/pods=10000", map[string]float64{"ns/op": 250000}},
	}
	for _, tt := range tests {
		name, vals, ok := parseLine(tt.line)
		if !ok || name != tt.name || !reflect.DeepEqual(vals, tt.vals) {
			t.Errorf("parseLine(%q) = %q, %v, %v; want %q, %v", tt.line, name, vals, ok, tt.name, tt.vals)
		}
	}
	for _, line := range []string{"PASS", "ok  \tgithub.com/x\t1.2s", "goos: linux", "--- FAIL: BenchmarkX"} {
		if _, _, ok := parseLine(line); ok {
			t.Errorf("parseLine(%q) took a non-result line", line)
		}
	}
}

// TestTableVerdicts: a bar met says yes, one missed says no, one not measured says so.
func TestTableVerdicts(t *testing.T) {
	res := results{
		"BenchmarkSimulate/pods=1000":                      {{"ns/op": 31e9}},
		"BenchmarkBurst/pods=1000/channelCapacity=default": {{"virtual-s": 91, "dropped-events": 1000}},
		"BenchmarkBurst/pods=1000/channelCapacity=4000":    {{"virtual-s": 1, "ns/op": 0.5e9}},
	}
	var b bytes.Buffer
	writeTable(&b, []scaleResult{{Pods: 10000, Containers: 2, RSS: 280 << 10, SteadyCPU: 6, PodsGet: 20, MetricsGet: 1, NodeGet: 1}},
		[]scaleResult{{Pods: 10000, Containers: 1, RSS: 420 << 10, SteadyCPU: 4, Steady: 60, PodsGet: 30}},
		[]scaleResult{{Pods: 10000, Containers: 2, ToRunning: "12.5s", RSS: 390 << 10, SteadyCPU: 4.2, Steady: 60, PodsGet: 30}}, res)
	out := b.String()
	for _, want := range []string{
		"| 7 | daemon, 10000 pods each running `sh -c 'while true; do echo tick; sleep 5; done'`: memory | RSS < 400 MiB | 420 MiB",
		"| 7 | same: CPU at steady state | < 10% of a core | 4.0% over 60 s | yes |",
		"| 1 | daemon, 10000 pods x 2 containers: memory | RSS < 300 MiB (aim 150) | 280 MiB",
		"| 6 | simulate: 1,000 pods for a virtual hour | < 30 s | 31.0 s | **no** |",
		"channelCapacity 4000: 1.0 s, 0.50 s of CPU | yes |",
		"| 4 | container exit to sync | evented p99 < 1 ms | not measured | - |",
		"| 8 | daemon, 10000 pods of `nginx:1.27` + `redis:7.2` (their own entrypoints): all Running | < 10 s | 12.5s | **no** |",
		"| 8 | same: memory | RSS < 400 MiB | 390 MiB (peak 0 MiB) | yes |",
		"| 8 | same: CPU at steady state | < 5% of a core | 4.2% over 60 s | yes |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(out, "420 MiB (peak 0 MiB); all Running after  | **no** |") {
		t.Errorf("420 MiB must miss the 400 MiB bar:\n%s", out)
	}
	if !strings.Contains(out, "6.0% (relist ) | **no** |") {
		t.Errorf("6%% steady CPU must miss the 5%% bar:\n%s", out)
	}
}

// TestExitToSyncMedianOfRuns: with several runs, row 4 judges the median run's p99 and
// shows every run's, so one run in a noisy window neither fails the bar nor goes unseen.
func TestExitToSyncMedianOfRuns(t *testing.T) {
	const ex = "BenchmarkExitToSync/pleg="
	tests := []struct {
		name    string
		evented []float64
		want    string
	}{
		{"one noisy run of three", []float64{0.5, 3.7, 0.6}, "p99 0.60 ms (from the instant the exit was due, which adds the Go timer's wake-up: p99 1.00 ms); median of 3 runs, whose p99s were 0.50, 0.60, 3.70 ms | yes |"},
		{"two noisy runs of three", []float64{3.9, 3.7, 0.6}, "p99 3.70 ms (from the instant the exit was due, which adds the Go timer's wake-up: p99 1.00 ms); median of 3 runs, whose p99s were 0.60, 3.70, 3.90 ms | **no** |"},
		{"a single run", []float64{0.7}, "p99 0.70 ms (from the instant the exit was due, which adds the Go timer's wake-up: p99 1.00 ms) | yes |"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := results{}
			for _, p99 := range tt.evented {
				res[ex+"evented/pods=1000"] = append(res[ex+"evented/pods=1000"], map[string]float64{"p50-ms": 0.2, "p99-ms": p99, "due-p99-ms": 1})
				res[ex+"generic/pods=1000"] = append(res[ex+"generic/pods=1000"], map[string]float64{"p50-ms": 500, "p99-ms": 990, "due-p99-ms": 1000})
			}
			var b bytes.Buffer
			writeTable(&b, nil, nil, nil, res)
			if !strings.Contains(b.String(), tt.want) {
				t.Errorf("row 4 lacks %q:\n%s", tt.want, b.String())
			}
		})
	}
}
