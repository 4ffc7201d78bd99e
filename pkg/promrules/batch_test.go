package promrules

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
)

func evaluatorOf(t *testing.T, opts Options, files ...string) *Evaluator {
	t.Helper()
	for i, f := range files {
		opts.Files = append(opts.Files, File{Name: "f" + string(rune('0'+i)) + ".yaml", Data: []byte(f)})
	}
	opts.Start = t0
	e, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

// TestEvalOrder: producers are evaluated before the groups that read them (else the files'
// order), and the evaluator batches only rules whose batches give the instants' results.
func TestEvalOrder(t *testing.T) {
	const readsRec = "- name: alerts\n  rules:\n  - alert: A\n    expr: rec:x > 1\n"
	const writesRec = "- name: records\n  rules:\n  - record: rec:x\n    expr: x * 2\n"
	cases := []struct {
		name              string
		file              string
		order             []string
		batched, parallel bool
	}{
		{"independent groups keep the files' order", "groups:\n- name: b\n  rules:\n  - alert: B\n    expr: y > 1\n- name: a\n  rules:\n  - alert: A\n    expr: x > 1\n",
			[]string{"b", "a"}, true, true},
		{"a producer written after its reader goes first", "groups:\n" + readsRec + writesRec,
			[]string{"records", "alerts"}, true, true},
		{"a group reading its own record at the same instant", "groups:\n- name: g\n  rules:\n  - record: rec:x\n    expr: x\n  - alert: A\n    expr: rec:x > 1\n",
			[]string{"g"}, false, true},
		{"a cycle keeps the files' order", "groups:\n- name: a\n  rules:\n  - record: a:x\n    expr: b:x\n- name: b\n  rules:\n  - record: b:x\n    expr: a:x\n",
			[]string{"a", "b"}, false, true},
		{"two groups writing what a third reads", "groups:\n- name: w1\n  rules:\n  - record: rec:x\n    expr: x\n- name: w2\n  rules:\n  - record: rec:x\n    expr: y\n" + readsRec,
			[]string{"w1", "w2", "alerts"}, true, false},
		{"a selector with no name may read its own group's ALERTS", "groups:\n" + writesRec + "- name: any\n  rules:\n  - alert: Any\n    expr: '{job=\"x\"} > 1'\n",
			[]string{"records", "any"}, false, true},
		{"a template that queries", "groups:\n- name: g\n  rules:\n  - alert: A\n    expr: x > 1\n    annotations: {d: '{{ query \"y\" }}'}\n",
			[]string{"g"}, false, true},
		{"a negative offset", "groups:\n- name: g\n  rules:\n  - alert: A\n    expr: x offset -1m > 1\n",
			[]string{"g"}, false, true},
		{"an @ modifier", "groups:\n- name: g\n  rules:\n  - alert: A\n    expr: x @ end() > 1\n",
			[]string{"g"}, false, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := evaluatorOf(t, Options{}, c.file)
			var order []string
			for _, g := range e.groups {
				order = append(order, g.g.Name())
			}
			if !slices.Equal(order, c.order) || e.batched != c.batched || e.parallel != c.parallel {
				t.Fatalf("order %v batched %v parallel %v, want %v %v %v", order, e.batched, e.parallel, c.order, c.batched, c.parallel)
			}
		})
	}
}

// TestBatchedAsOneAtATime: evaluated in batches (range queries, idle instants skipped,
// groups at once), the rules find what they find one instant after the other: an alert
// through pending, firing, kept firing and resolved; a recorded series going stale and
// coming back, read by another group; absent() over it; a rule failing at some instants;
// annotations and a label expanded from the sample and its value, also when the alert is
// resolved after being kept firing, or after its rule failed (the batched rules are made
// without annotations).
func TestBatchedAsOneAtATime(t *testing.T) {
	const alerts = `groups:
- name: alerts
  rules:
  - alert: High
    expr: rec:x > 2
    for: 30s
    keep_firing_for: 1m
    labels: {severity: "page-{{ $labels.job }}"}
    annotations: {summary: "{{ $value }}", who: "{{ $labels.__name__ }} {{ $labels.job }} {{ $labels.severity }}"}
  - alert: Each
    expr: y > 0
    annotations: {instance: "{{ $labels.instance }} at {{ $value }}"}
  - alert: Flaky
    expr: z > 0
    labels: {i: same}
    annotations: {value: "{{ $value }}"}
  - alert: Gone
    expr: absent(rec:x)
    for: 1m
  - alert: Dup
    expr: label_replace(y, "instance", "same", "", "")
`
	const records = `groups:
- name: records
  rules:
  - record: rec:x
    expr: x * 2
`
	stale := math.Float64frombits(value.StaleNaN)
	x := func(v float64) Sample {
		return Sample{Labels: labels.FromStrings("__name__", "x", "job", "j"), Value: v}
	}
	y := func(inst string) Sample {
		return Sample{Labels: labels.FromStrings("__name__", "y", "instance", inst), Value: 1}
	}
	var got [2][]string
	for i, one := range []bool{false, true} {
		e := evaluatorOf(t, Options{OneAtATime: one}, alerts, records)
		if e.batched == one {
			t.Fatalf("batched %v with OneAtATime %v", e.batched, one)
		}
		var trans []Transition
		var errs []RuleError
		for at := time.Duration(0); at < 30*time.Minute; at += 15 * time.Second {
			var s []Sample
			switch {
			case at < 5*time.Minute:
				s = append(s, x(0.5))
			case at < 10*time.Minute:
				s = append(s, x(3))
			case at < 12*time.Minute:
				s = append(s, x(4)) // the annotations follow the value until the alert is kept firing
			case at == 12*time.Minute:
				s = append(s, Sample{Labels: x(0).Labels, Value: stale})
			case at >= 20*time.Minute:
				s = append(s, x(1))
			}
			if at >= 8*time.Minute && at < 9*time.Minute {
				s = append(s, y("a"), y("b"))
				// Flaky fails here (two series, one label set): its alert keeps what it
				// had at its last evaluation.
				s = append(s, Sample{Labels: labels.FromStrings("__name__", "z", "i", "b"), Value: 2})
			}
			if at >= 6*time.Minute && at < 9*time.Minute {
				s = append(s, Sample{Labels: labels.FromStrings("__name__", "z", "i", "a"), Value: 1})
			}
			if err := e.Append("t", t0.Add(at), s); err != nil {
				t.Fatal(err)
			}
			// One at a time is asked after each scrape; batches once every 7 minutes.
			if one || at%(7*time.Minute) == 0 {
				tr, er := e.EvalBefore(context.Background(), t0.Add(at+time.Nanosecond))
				trans, errs = append(trans, tr...), append(errs, er...)
			}
		}
		tr, er := e.EvalBefore(context.Background(), t0.Add(30*time.Minute))
		trans, errs = append(trans, tr...), append(errs, er...)
		for _, tr := range trans {
			got[i] = append(got[i], tr.At.Sub(t0).String()+" "+tr.Alert+" "+string(tr.State)+" "+tr.Annotations.String())
		}
		for _, er := range errs {
			got[i] = append(got[i], er.At.Sub(t0).String()+" "+er.Rule+" "+er.Err.Error())
		}
	}
	if !slices.Equal(got[0], got[1]) {
		t.Fatalf("batched:\n%s\none at a time:\n%s", strings.Join(got[0], "\n"), strings.Join(got[1], "\n"))
	}
	all := strings.Join(got[1], "\n")
	for _, want := range []string{"High firing", "High resolved",
		`13m0s High resolved {summary="8", who="rec:x j "}`, `8m0s Each firing {instance="b at 1"}`, `9m0s Flaky resolved {value="1"}`, "Gone firing", "Gone resolved", "Dup f0.yaml: group \"alerts\": vector cannot contain metrics with the same labelset"} {
		if !strings.Contains(all, want) {
			t.Errorf("no %q in:\n%s", want, all)
		}
	}
}
