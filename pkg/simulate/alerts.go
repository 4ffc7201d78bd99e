package simulate

import (
	"sort"
	"strings"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/minikubelet/minikubelet/pkg/promrules"
)

// alertCheck is an alert expectation. The alerts change state only at the rules'
// evaluations, which fall between the instants the loops are stepped at, so it is checked
// once the run is over, against every transition, at the exact instants they happened.
type alertCheck struct {
	resIndex int
	exp      *AlertExpect
	from, to time.Time // the window: [at, at+within] or [at, at+during]; from == to without either
	during   bool      // it must hold at every instant of the window, not at one
}

// expectAlert registers step i's alert expectation.
func (s *simulation) expectAlert(i int, st *Step, now time.Time) {
	res := ExpectationResult{Step: i, At: st.At.Duration, What: describeAlert(st.Expect.Alert)}
	c := &alertCheck{resIndex: len(s.results), exp: st.Expect.Alert, from: now, to: now}
	switch {
	case st.Within != nil:
		res.Within, c.to = st.Within.Duration, now.Add(st.Within.Duration)
	case st.During != nil:
		c.to, c.during = now.Add(st.During.Duration), true
		res.What += " during " + st.During.Duration.String()
	}
	s.results = append(s.results, res)
	s.alertExp = append(s.alertExp, c)
}

func describeAlert(a *AlertExpect) string {
	name := a.Name
	if name == "" {
		name = "(any)"
	}
	out := "alert " + name + " " + a.State
	if len(a.Labels) > 0 {
		out += " " + labels.FromMap(a.Labels).String()
	}
	return out
}

// checkAlerts decides every alert expectation from the transitions the run saw.
func (s *simulation) checkAlerts() {
	for _, c := range s.alertExp {
		res := &s.results[c.resIndex]
		if s.rec == nil || s.rec.rules == nil {
			res.Observed = "no rules were evaluated (run with --rules)"
			continue
		}
		// The instants the state can change at within the window: its start, then every
		// transition of the alert in it.
		instants := []time.Time{c.from}
		for _, t := range s.alerts {
			if (c.exp.Name == "" || t.Alert == c.exp.Name) && t.At.After(c.from) && !t.At.After(c.to) {
				instants = append(instants, t.At)
			}
		}
		passed := c.during
		var observed string
		for _, at := range instants {
			ok, got := c.holdsAt(s.alerts, at)
			if c.during && !ok {
				passed, observed = false, got+" at "+offset(at.Sub(s.epoch))
				break
			}
			if !c.during {
				if ok {
					passed, res.HeldAt = true, at.Sub(s.epoch)
					break
				}
				observed = got
			}
		}
		res.Passed = passed
		switch {
		case passed && c.during:
			res.HeldAt = c.from.Sub(s.epoch)
		case !passed:
			res.Observed = observed
		}
	}
}

// holdsAt reports whether the expectation holds at t, and the matching alerts' states then.
func (c *alertCheck) holdsAt(trans []promrules.Transition, t time.Time) (bool, string) {
	want := labels.FromMap(c.exp.Labels)
	states := map[string]promrules.State{}
	for _, tr := range trans {
		if tr.At.After(t) {
			break
		}
		if (c.exp.Name != "" && tr.Alert != c.exp.Name) || !alertHasLabels(tr.Labels, want) {
			continue
		}
		key := tr.Labels.String()
		if tr.State == promrules.Resolved {
			delete(states, key)
		} else {
			states[key] = tr.State
		}
	}
	var firing, pending bool
	var got []string
	for k, st := range states {
		firing = firing || st == promrules.Firing
		pending = pending || st == promrules.Pending
		got = append(got, string(st)+" "+k)
	}
	sort.Strings(got)
	observed := "inactive"
	if len(got) > 0 {
		observed = strings.Join(got, ", ")
	}
	switch c.exp.State {
	case "firing":
		return firing, observed
	case "pending":
		return pending, observed
	case "notFiring":
		return !firing, observed
	}
	return !firing && !pending, observed
}

// alertHasLabels: every label of want is in l with the same value.
func alertHasLabels(l, want labels.Labels) bool {
	ok := true
	want.Range(func(w labels.Label) { ok = ok && l.Get(w.Name) == w.Value })
	return ok
}
