package simulate

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// Result is a scenario's outcome: the timeline and every expectation's result.
type Result struct {
	Name         string              `json:"name"`
	Timeline     []TimelineEntry     `json:"timeline"`
	Expectations []ExpectationResult `json:"expectations"`
	Passed       int                 `json:"passed"`
	Failed       int                 `json:"failed"`
}

func (s *simulation) result() *Result {
	r := &Result{Name: s.sc.Name, Timeline: s.obs.lines, Expectations: s.results}
	if r.Timeline == nil {
		r.Timeline = []TimelineEntry{}
	}
	if r.Expectations == nil {
		r.Expectations = []ExpectationResult{}
	}
	for _, e := range s.results {
		if e.Passed {
			r.Passed++
		} else {
			r.Failed++
		}
	}
	return r
}

// OK reports whether every expectation passed.
func (r *Result) OK() bool { return r.Failed == 0 }

// expectationLine renders one expectation result.
func (e ExpectationResult) line() string {
	when := offset(e.At)
	if e.Within > 0 {
		when += " within " + e.Within.String()
	}
	if e.Passed {
		held := ""
		if e.HeldAt != e.At {
			held = " (held at " + offset(e.HeldAt) + ")"
		}
		return fmt.Sprintf("PASS step %d at %s: %s%s", e.Step, when, e.What, held)
	}
	return fmt.Sprintf("FAIL step %d at %s: %s; observed: %s", e.Step, when, e.What, e.Observed)
}

// WriteText writes the timeline, one line per expectation and the totals.
func (r *Result) WriteText(w io.Writer) error {
	var b strings.Builder
	for _, l := range r.Timeline {
		fmt.Fprintf(&b, "%s %s %s\n", l.Time, l.Subject, l.Text)
	}
	for _, e := range r.Expectations {
		b.WriteString(e.line())
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "%d passed, %d failed\n", r.Passed, r.Failed)
	_, err := io.WriteString(w, b.String())
	return err
}

// jsonExpectation is ExpectationResult as -o json writes it: times as T+ offsets.
type jsonExpectation struct {
	Step     int    `json:"step"`
	At       string `json:"at"`
	Within   string `json:"within,omitempty"`
	Expect   string `json:"expect"`
	Passed   bool   `json:"passed"`
	HeldAt   string `json:"heldAt,omitempty"`
	Observed string `json:"observed,omitempty"`
	Line     string `json:"line"`
}

// WriteJSON writes the same as WriteText as one JSON document.
func (r *Result) WriteJSON(w io.Writer) error {
	out := struct {
		Name         string            `json:"name"`
		Timeline     []TimelineEntry   `json:"timeline"`
		Expectations []jsonExpectation `json:"expectations"`
		Passed       int               `json:"passed"`
		Failed       int               `json:"failed"`
	}{Name: r.Name, Timeline: r.Timeline, Passed: r.Passed, Failed: r.Failed, Expectations: []jsonExpectation{}}
	for _, e := range r.Expectations {
		je := jsonExpectation{Step: e.Step, At: offset(e.At), Expect: e.What, Passed: e.Passed, Observed: e.Observed, Line: e.line()}
		if e.Within > 0 {
			je.Within = e.Within.String()
		}
		if e.Passed {
			je.HeldAt = offset(e.HeldAt)
		}
		out.Expectations = append(out.Expectations, je)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
