package promrules

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/model/timestamp"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/rules"
	"github.com/prometheus/prometheus/template"
)

// An alerting rule expands its annotations' templates for every alert it has at every
// evaluation: four template parses an alert for a mixin rule (its severity label and three
// annotations), a third of a batched run's rule evaluation. The annotations change no state
// (not the alert's, not ALERTS, not a recorded series); they are only seen in a transition.
// So a batched evaluator makes its alerting rules without them and expands an alert's
// annotations when a transition shows them, as the rule would have at the last evaluation
// the alert was in its query's result, from the same sample, with the same templates.

// withoutAnnotations returns the rule groups with no annotations (a copy: the parsed file is
// shared).
func withoutAnnotations(rgs *rulefmt.RuleGroups) *rulefmt.RuleGroups {
	out := &rulefmt.RuleGroups{Groups: make([]rulefmt.RuleGroup, len(rgs.Groups))}
	for i, g := range rgs.Groups {
		g.Rules = append([]rulefmt.RuleNode(nil), g.Rules...)
		for j := range g.Rules {
			g.Rules[j].Annotations = nil
		}
		out.Groups[i] = g
	}
	return out
}

// lazyAnnotations loads the groups again, their alerting rules without annotations, and
// returns them in the order of inFiles (the groups' keys in order) with, by group and
// place in it, the annotations each alerting rule had.
//
// opts are those the groups were loaded with (the groups' metrics, made then, are reused).
func lazyAnnotations(opts *rules.ManagerOptions, ld loader, interval time.Duration,
	names, order []string, inFiles []*rules.Group) ([]*rules.Group, [][]labels.Labels, error) {
	bare := *opts
	bare.GroupLoader = loader{files: ld.files, parsed: map[string]*rulefmt.RuleGroups{}, noAnnotations: true}
	groups, errs := rules.NewManager(&bare).LoadGroups(interval, labels.EmptyLabels(), "", nil, names...)
	if len(errs) > 0 {
		return nil, nil, fmt.Errorf("load the rules again: %w", errs[0])
	}
	out := make([]*rules.Group, len(order))
	annots := make([][]labels.Labels, len(order))
	for i, key := range order {
		out[i] = groups[key]
		annots[i] = make([]labels.Labels, len(inFiles[i].Rules()))
		for j, r := range inFiles[i].Rules() {
			if ar, ok := r.(*rules.AlertingRule); ok {
				annots[i][j] = ar.Annotations()
			}
		}
	}
	return out, annots, nil
}

// annotations are the alert's annotations: as its rule last expanded them, or, when the
// group's rules were made without them, as the rule would have (see above). m caches, for
// one transitions call, which sample of a result each alert came from.
func (sg *schedGroup) annotations(ctx context.Context, m matches, i int, ar *rules.AlertingRule, a alertSeen) labels.Labels {
	if sg.annots == nil {
		return a.annots
	}
	annots := sg.annots[i]
	if annots.IsEmpty() {
		return annots
	}
	key := matchKey{rule: i, at: a.inAt}
	from, ok := m[key]
	if !ok {
		// What AlertingRule.Eval does for each sample of its query's result: the alert's
		// labels from the sample's.
		from = map[uint64]int{}
		lb := labels.NewBuilder(labels.EmptyLabels())
		for k, smpl := range a.in {
			lb.Reset(smpl.Metric)
			lb.Del(labels.MetricName)
			ar.Labels().Range(func(l labels.Label) { lb.Set(l.Name, expand(ctx, ar, a.inAt, smpl, l.Value)) })
			lb.Set(labels.AlertName, ar.Name())
			from[lb.Labels().Hash()] = k
		}
		m[key] = from
	}
	k, ok := from[a.labels.Hash()]
	if !ok {
		return labels.EmptyLabels() // not reached: the alert came from one of these samples
	}
	sb := labels.NewScratchBuilder(annots.Len())
	annots.Range(func(l labels.Label) { sb.Add(l.Name, expand(ctx, ar, a.inAt, a.in[k], l.Value)) })
	return sb.Labels()
}

// matches are, by rule and instant, the sample of the rule's result each alert (by the hash
// of its labels) came from.
type matches map[matchKey]map[uint64]int

type matchKey struct {
	rule int
	at   time.Time
}

// expand is AlertingRule.Eval's expansion of a label's or an annotation's template for the
// sample at ts: the same definitions, data and errors. A text with no action is itself
// (the definitions write nothing), without the parse.
func expand(ctx context.Context, ar *rules.AlertingRule, ts time.Time, smpl promql.Sample, text string) string {
	if !strings.Contains(text, "{{") {
		return text
	}
	data := template.AlertTemplateData(smpl.Metric.Map(), map[string]string{}, "", smpl)
	tmpl := template.NewTemplateExpander(ctx, strings.Join(append(templateDefs[:len(templateDefs):len(templateDefs)], text), ""),
		"__alert_"+ar.Name(), data, model.Time(timestamp.FromTime(ts)), nil, nil, nil)
	result, err := tmpl.Expand()
	if err != nil {
		result = fmt.Sprintf("<error expanding template: %s>", err)
	}
	return result
}

// templateDefs are the variables AlertingRule.Eval defines before every template.
var templateDefs = []string{
	"{{$labels := .Labels}}",
	"{{$externalLabels := .ExternalLabels}}",
	"{{$externalURL := .ExternalURL}}",
	"{{$value := .Value}}",
}
