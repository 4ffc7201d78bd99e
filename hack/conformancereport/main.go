// Command conformancereport turns the JUnit report of an upstream e2e run (make conformance)
// into the table of docs/conformance.md: every spec in scope with pass, fail or skipped, and
// for each failure the reason in one line. It rewrites one section of the doc (between
// <!-- conformance:NAME --> markers) and, with -readme, the headline figure in the README,
// so neither is edited by hand.
//
// Reasons come from reasons.yaml beside this file: rules matched in order against the spec's
// name and its failure message (white space folded to single spaces), written from what the
// failures show. A failure no rule
// explains is reported with the first line of its message. Skips come from skips.yaml, the
// specs every run here leaves out, each with why.
package main

import (
	"bytes"
	"encoding/xml"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

func main() {
	var o options
	flag.StringVar(&o.junit, "junit", "_output/conformance/junit_01.xml", "the JUnit report the suite wrote (--report-dir)")
	flag.StringVar(&o.focus, "focus", `\[NodeConformance\]`, "the run's focus: which specs are in scope")
	flag.StringVar(&o.skip, "skip", `\[Serial\]|\[Disruptive\]`, "the run's skip: which specs are out of scope (skips.yaml adds its own, counted as skipped)")
	flag.StringVar(&o.skips, "skips", "hack/conformancereport/skips.yaml", "the specs skipped on every run here, with their reasons")
	flag.StringVar(&o.reasons, "reasons", "hack/conformancereport/reasons.yaml", "the rules that explain failures")
	flag.StringVar(&o.doc, "doc", "docs/conformance.md", "the doc whose section to rewrite")
	flag.StringVar(&o.section, "section", "parallel", "the doc's section: <!-- conformance:SECTION --> ... <!-- /conformance:SECTION -->")
	flag.StringVar(&o.readme, "readme", "", "also rewrite the headline between <!-- HEADLINE --> markers in this file")
	flag.StringVar(&o.headline, "headline", "conformance-headline", "the README's headline markers: <!-- HEADLINE --> ... <!-- /HEADLINE --> (one per release)")
	flag.StringVar(&o.header, "header", "", "a line above the table (when and where it was measured)")
	flag.StringVar(&o.release, "release", "v1.37", "the release of the suite (e2e.test) the report is of, for the headline")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "conformancereport:", err)
		os.Exit(1)
	}
}

type options struct {
	junit, focus, skip, skips, reasons, doc, section, readme, headline, header, release string
}

func run(o options) error {
	f, err := os.Open(o.junit)
	if err != nil {
		return err
	}
	defer f.Close()
	cases, took, err := parseJUnit(f)
	if err != nil {
		return fmt.Errorf("%s: %w", o.junit, err)
	}
	focus, err := regexp.Compile(o.focus)
	if err != nil {
		return fmt.Errorf("-focus %q: %w", o.focus, err)
	}
	var skip *regexp.Regexp
	if o.skip != "" {
		if skip, err = regexp.Compile(o.skip); err != nil {
			return fmt.Errorf("-skip %q: %w", o.skip, err)
		}
	}
	skips, err := readRules(o.skips)
	if err != nil {
		return err
	}
	reasons, err := readRules(o.reasons)
	if err != nil {
		return err
	}
	rep := classify(cases, focus, skip, skips, reasons)
	rep.took = took
	rep.release = o.release
	if len(rep.rows) == 0 {
		return fmt.Errorf("%s: no spec matches -focus %q outside -skip %q", o.junit, o.focus, o.skip)
	}
	if err := replaceSection(o.doc, "conformance:"+o.section, rep.markdown(o.header)); err != nil {
		return err
	}
	if o.readme != "" {
		if err := replaceSection(o.readme, o.headline, rep.headline()+"\n"); err != nil {
			return err
		}
	}
	fmt.Println(rep.headline())
	return nil
}

// testCase is one <testcase> of ginkgo v2's JUnit report.
type testCase struct {
	Name    string `xml:"name,attr"`
	Status  string `xml:"status,attr"`
	Time    string `xml:"time,attr"`
	Failure *struct {
		Message string `xml:"message,attr"`
		Text    string `xml:",chardata"`
	} `xml:"failure"`
	Error *struct {
		Message string `xml:"message,attr"`
		Text    string `xml:",chardata"`
	} `xml:"error"`
	Skipped *struct {
		Message string `xml:"message,attr"`
	} `xml:"skipped"`
}

// parseJUnit reads every spec of the report ([It] cases; the suite's setup nodes are not
// specs), by name without ginkgo's "[It] " prefix, and how long the suite ran.
func parseJUnit(r io.Reader) ([]testCase, time.Duration, error) {
	var doc struct {
		Suites []struct {
			Time  float64    `xml:"time,attr"`
			Cases []testCase `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.NewDecoder(r).Decode(&doc); err != nil {
		return nil, 0, err
	}
	var cases []testCase
	var took time.Duration
	for _, s := range doc.Suites {
		took += time.Duration(s.Time * float64(time.Second))
		for _, c := range s.Cases {
			if !strings.HasPrefix(c.Name, "[It] ") {
				continue
			}
			c.Name = strings.TrimPrefix(c.Name, "[It] ")
			cases = append(cases, c)
		}
	}
	return cases, took, nil
}

// rule explains a skip or a failure: it applies when each pattern it has matches.
type rule struct {
	Spec    string `json:"spec,omitempty"`
	Failure string `json:"failure,omitempty"`
	Reason  string `json:"reason"`
	spec    *regexp.Regexp
	failure *regexp.Regexp
}

func readRules(path string) ([]rule, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rules []rule
	if err := yaml.UnmarshalStrict(data, &rules); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for i := range rules {
		r := &rules[i]
		if r.Reason == "" || (r.Spec == "" && r.Failure == "") {
			return nil, fmt.Errorf("%s: rule %d: want a reason and a spec or failure pattern", path, i+1)
		}
		for _, p := range []struct {
			src string
			re  **regexp.Regexp
		}{{r.Spec, &r.spec}, {r.Failure, &r.failure}} {
			if p.src == "" {
				continue
			}
			re, err := regexp.Compile(p.src)
			if err != nil {
				return nil, fmt.Errorf("%s: rule %d: %q: %w", path, i+1, p.src, err)
			}
			*p.re = re
		}
	}
	return rules, nil
}

// match returns the reason of the first rule that applies to a spec and its failure.
func match(rules []rule, spec, failure string) (string, bool) {
	for _, r := range rules {
		if (r.spec == nil || r.spec.MatchString(spec)) && (r.failure == nil || r.failure.MatchString(failure)) {
			return r.Reason, true
		}
	}
	return "", false
}

// Results in the table.
const (
	pass    = "pass"
	fail    = "fail"
	skipped = "skipped"
)

type row struct {
	spec, result, reason string
}

type report struct {
	rows    []row
	took    time.Duration
	release string // the suite's release, as the headline names it
}

func (r report) count(result string) int {
	n := 0
	for _, x := range r.rows {
		if x.result == result {
			n++
		}
	}
	return n
}

// classify puts every spec in scope (matching focus, not skip) in a row. A spec the run
// left out because skips.yaml names it is skipped with that reason; one that skipped itself
// (an e2eskipper check: a provider, a feature) is skipped with its message; one ginkgo
// filtered out for another reason (a narrower FOCUS) is not in the table.
func classify(cases []testCase, focus, skip *regexp.Regexp, skips, reasons []rule) report {
	var rep report
	for _, c := range cases {
		if !focus.MatchString(c.Name) || (skip != nil && skip.MatchString(c.Name)) {
			continue
		}
		r := row{spec: c.Name}
		switch {
		case c.Status == "passed":
			r.result = pass
		case c.Status == "skipped" || c.Status == "pending":
			if why, ok := match(skips, c.Name, ""); ok {
				r.result, r.reason = skipped, why
			} else if c.Skipped != nil && strings.TrimSpace(strings.TrimPrefix(c.Skipped.Message, "skipped")) != "" {
				r.result, r.reason = skipped, oneLine(strings.TrimPrefix(strings.TrimPrefix(c.Skipped.Message, "skipped"), " - "))
			} else {
				continue
			}
		default:
			msg := c.Status
			if c.Failure != nil {
				msg = c.Failure.Message + "\n" + c.Failure.Text
			} else if c.Error != nil {
				msg = c.Error.Message + "\n" + c.Error.Text
			}
			r.result = fail
			// Rules match the message with its white space folded: gomega breaks lines
			// and indents where it likes.
			if why, ok := match(reasons, c.Name, strings.Join(strings.Fields(msg), " ")); ok {
				r.reason = why
			} else {
				r.reason = c.Status + ": " + oneLine(msg)
			}
		}
		rep.rows = append(rep.rows, r)
	}
	sort.Slice(rep.rows, func(i, j int) bool { return rep.rows[i].spec < rep.rows[j].spec })
	return rep
}

// oneLine is the first non-empty line of a message, at most 200 characters.
func oneLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			if len(l) > 200 {
				l = l[:197] + "..."
			}
			return l
		}
	}
	return ""
}

func (r report) headline() string {
	return fmt.Sprintf("**%d of %d** `[NodeConformance]` specs of the upstream %s suite pass (%d fail, %d skipped here): [conformance](docs/conformance.md).",
		r.count(pass), len(r.rows), r.release, r.count(fail), r.count(skipped))
}

func (r report) markdown(header string) string {
	var b strings.Builder
	if header != "" {
		b.WriteString(header + "\n\n")
	}
	fmt.Fprintf(&b, "%d of %d pass, %d fail, %d skipped; the suite ran %s.\n\n", r.count(pass), len(r.rows), r.count(fail), r.count(skipped),
		r.took.Round(time.Second))
	// The reasons, most common first: what to build next.
	byReason := map[string]int{}
	for _, x := range r.rows {
		if x.result == fail {
			byReason[x.reason]++
		}
	}
	if len(byReason) > 0 {
		var keys []string
		for k := range byReason {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool {
			if byReason[keys[i]] != byReason[keys[j]] {
				return byReason[keys[i]] > byReason[keys[j]]
			}
			return keys[i] < keys[j]
		})
		b.WriteString("| failures | reason |\n|---:|---|\n")
		for _, k := range keys {
			fmt.Fprintf(&b, "| %d | %s |\n", byReason[k], cell(k))
		}
		b.WriteString("\n")
	}
	b.WriteString("| # | spec | result | reason |\n|---:|---|---|---|\n")
	for i, x := range r.rows {
		fmt.Fprintf(&b, "| %d | %s | %s | %s |\n", i+1, cell(x.spec), x.result, cell(x.reason))
	}
	return b.String()
}

// cell escapes what would break a Markdown table cell.
func cell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}

// replaceSection rewrites what stands between <!-- NAME --> and <!-- /NAME --> in path; a
// file that does not exist yet is written with the section alone.
func replaceSection(path, name, content string) error {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		data, err = []byte("<!-- "+name+" -->\n<!-- /"+name+" -->\n"), nil
	}
	if err != nil {
		return err
	}
	begin, end := []byte("<!-- "+name+" -->\n"), []byte("<!-- /"+name+" -->")
	i := bytes.Index(data, begin)
	j := bytes.Index(data, end)
	if i < 0 || j < i {
		return fmt.Errorf("%s: no %s ... %s markers", path, strings.TrimSpace(string(begin)), end)
	}
	var out bytes.Buffer
	out.Write(data[:i+len(begin)])
	out.WriteString(content)
	out.Write(data[j:])
	return os.WriteFile(path, out.Bytes(), 0o644)
}
