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
		"BenchmarkSimulate/pods=1000":                      {"ns/op": 31e9},
		"BenchmarkBurst/pods=1000/channelCapacity=default": {"virtual-s": 91, "dropped-events": 1000},
		"BenchmarkBurst/pods=1000/channelCapacity=4000":    {"virtual-s": 1, "ns/op": 0.5e9},
	}
	var b bytes.Buffer
	writeTable(&b, []scaleResult{{Pods: 10000, Containers: 2, RSS: 280 << 10, SteadyCPU: 6, PodsGet: 20, MetricsGet: 1, NodeGet: 1}}, res)
	out := b.String()
	for _, want := range []string{
		"| 1 | daemon, 10000 pods x 2 containers: memory | RSS < 300 MiB (aim 150) | 280 MiB",
		"| 6 | simulate: 1,000 pods for a virtual hour | < 30 s | 31.0 s | **no** |",
		"channelCapacity 4000: 1.0 s, 0.50 s of CPU | yes |",
		"| 4 | container exit to sync | evented p99 < 1 ms | not measured | - |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(out, "6.0% (relist ) | **no** |") {
		t.Errorf("6%% steady CPU must miss the 5%% bar:\n%s", out)
	}
}
