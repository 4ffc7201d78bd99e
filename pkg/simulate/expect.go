package simulate

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	v1 "k8s.io/api/core/v1"
)

// ExpectationResult is the outcome of one expectation (one key of a step's expect).
type ExpectationResult struct {
	Step   int           `json:"step"`
	At     time.Duration `json:"-"`
	Within time.Duration `json:"-"`
	What   string        `json:"expect"`
	Passed bool          `json:"passed"`
	// HeldAt is the first instant of the window at which it held (passed only).
	HeldAt time.Duration `json:"-"`
	// Observed is what was seen instead (failed only): at the window's last instant.
	Observed string `json:"observed,omitempty"`
}

// expect checks the expectations of step i at now; those that do not hold yet and have a
// window are returned to be checked at every instant until the window ends.
func (s *simulation) expect(i int, st *Step, now time.Time) []*pending {
	var within time.Duration
	if st.Within != nil {
		within = st.Within.Duration
	}
	var out []*pending
	for _, c := range s.checks(st.Expect) {
		res := ExpectationResult{Step: i, At: st.At.Duration, Within: within, What: c.what}
		ok, observed := c.check()
		switch {
		case ok:
			res.Passed, res.HeldAt = true, now.Sub(s.epoch)
		case within == 0:
			res.Observed = observed
		default:
			out = append(out, &pending{resIndex: len(s.results), check: c.check, deadline: now.Add(within)})
		}
		s.results = append(s.results, res)
	}
	if st.Expect.Alert != nil {
		s.expectAlert(i, st, now)
	}
	return out
}

// check is one expectation: a description and a check returning whether it holds and,
// when not, what was observed.
type check struct {
	what  string
	check func() (bool, string)
}

func (s *simulation) checks(e *Expect) []check {
	var out []check
	if n := e.Node; n != nil {
		out = append(out, check{describeNode(n), func() (bool, string) { return s.checkNode(n) }})
	}
	if p := e.Pod; p != nil {
		out = append(out, check{describePod(p), func() (bool, string) { return s.checkPod(p) }})
	}
	if m := e.Metric; m != nil {
		out = append(out, check{describeMetric(m), func() (bool, string) { return s.checkMetric(m) }})
	}
	if e.Healthz != "" {
		want := e.Healthz
		out = append(out, check{"healthz " + want, func() (bool, string) { return s.checkHealthz(want) }})
	}
	if ev := e.Event; ev != nil {
		out = append(out, check{describeEvent(ev), func() (bool, string) { return s.checkEvent(ev) }})
	}
	if a := e.Absent; a != nil && a.Pod != "" {
		out = append(out, check{"absent pod " + a.Pod, func() (bool, string) { return s.checkAbsent(a) }})
	}
	if a := e.Absent; a != nil && a.APIPod != "" {
		out = append(out, check{"absent apiPod " + a.APIPod, func() (bool, string) { return s.checkAbsentAPIPod(a.APIPod) }})
	}
	if p := e.APIPod; p != nil {
		out = append(out, check{describeAPIPod(p), func() (bool, string) { return s.checkAPIPod(p) }})
	}
	if n := e.APINode; n != nil {
		out = append(out, check{"apiNode " + strings.TrimPrefix(describeNode(n), "node "), func() (bool, string) { return s.checkAPINode(n) }})
	}
	if l := e.APILease; l != nil {
		out = append(out, check{"apiLease renewedWithin " + l.RenewedWithin.Duration.String(), func() (bool, string) { return s.checkAPILease(l) }})
	}
	return out
}

func describeNode(n *NodeExpect) string {
	out := "node " + n.Condition
	if n.Status != "" {
		out += "=" + n.Status
	}
	if n.Reason != "" {
		out += " reason=" + n.Reason
	}
	if n.MessageContains != "" {
		out += fmt.Sprintf(" message~%q", n.MessageContains)
	}
	return out
}

func (s *simulation) checkNode(n *NodeExpect) (bool, string) {
	return matchNodeCondition(s.k.NodeStatus().Conditions(), n)
}

// matchNodeCondition checks n against the node's conditions.
func matchNodeCondition(conds []v1.NodeCondition, n *NodeExpect) (bool, string) {
	for _, c := range conds {
		if string(c.Type) != n.Condition {
			continue
		}
		ok := (n.Status == "" || string(c.Status) == n.Status) &&
			(n.Reason == "" || c.Reason == n.Reason) &&
			(n.MessageContains == "" || strings.Contains(c.Message, n.MessageContains))
		return ok, fmt.Sprintf("%s=%s reason=%s message=%q", c.Type, c.Status, c.Reason, c.Message)
	}
	return false, "no condition " + n.Condition
}

func describePod(p *PodExpect) string {
	out := "pod " + p.Name
	if p.Phase != "" {
		out += " phase=" + p.Phase
	}
	if p.Ready != nil {
		out += fmt.Sprintf(" ready=%t", *p.Ready)
	}
	if p.Restarts != nil {
		out += " restarts" + cmpText(*p.Restarts)
	}
	if cs := p.ContainerState; cs != nil {
		out += " container " + cs.Name + "=" + cs.State
		if cs.Reason != "" {
			out += "(" + cs.Reason + ")"
		}
		if cs.ExitCode != nil {
			out += fmt.Sprintf(" exitCode=%d", *cs.ExitCode)
		}
		if cs.LastReason != "" {
			out += " lastState=" + cs.LastReason
		}
	}
	if c := p.Condition; c != nil {
		out += " condition " + c.Type + "=" + c.Status
		if c.Reason != "" {
			out += " reason=" + c.Reason
		}
	}
	return out
}

func cmpText(v Value) string {
	if v.Op == "=" {
		return "=" + v.Arg
	}
	return v.Op + v.Arg
}

func (s *simulation) findPod(name string) *v1.Pod {
	for _, p := range s.k.GetPods() {
		if p.Name == name {
			return p
		}
	}
	return nil
}

func (s *simulation) checkPod(e *PodExpect) (bool, string) {
	pod := s.findPod(e.Name)
	if pod == nil {
		return false, "no pod " + e.Name + " in /pods"
	}
	st := &pod.Status
	var restarts int32
	for _, c := range st.ContainerStatuses {
		restarts += c.RestartCount
	}
	ready := podReady(st)
	observed := fmt.Sprintf("phase=%s ready=%t restarts=%d", st.Phase, ready, restarts)
	ok := (e.Phase == "" || string(st.Phase) == e.Phase) && (e.Ready == nil || *e.Ready == ready)
	if e.Restarts != nil {
		held, _ := e.Restarts.numeric(float64(restarts))
		ok = ok && held
	}
	if cs := e.ContainerState; cs != nil {
		state, reason := containerState(st, cs.Name)
		observed += fmt.Sprintf(" container %s=%s", cs.Name, state)
		if reason != "" {
			observed += "(" + reason + ")"
		}
		ok = ok && state == cs.State && (cs.Reason == "" || reason == cs.Reason)
		if c := findContainerStatus(st, cs.Name); c != nil && (cs.ExitCode != nil || cs.LastReason != "") {
			if cs.ExitCode != nil {
				code := int32(-1)
				if c.State.Terminated != nil {
					code = c.State.Terminated.ExitCode
				}
				observed += fmt.Sprintf(" exitCode=%d", code)
				ok = ok && code == *cs.ExitCode
			}
			if cs.LastReason != "" {
				last := ""
				if c.LastTerminationState.Terminated != nil {
					last = c.LastTerminationState.Terminated.Reason
				}
				observed += " lastState=" + last
				ok = ok && last == cs.LastReason
			}
		}
	}
	if c := e.Condition; c != nil {
		got, reason := "absent", ""
		for _, pc := range st.Conditions {
			if string(pc.Type) == c.Type {
				got, reason = string(pc.Status), pc.Reason
			}
		}
		observed += " condition " + c.Type + "=" + got
		if c.Reason != "" {
			observed += " reason=" + reason
		}
		ok = ok && got == c.Status && (c.Reason == "" || reason == c.Reason)
	}
	return ok, observed
}

func podReady(st *v1.PodStatus) bool {
	for _, c := range st.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// containerState is a container's state as waiting/running/terminated and its reason
// (init containers included); "absent" when the pod has no such container status.
func containerState(st *v1.PodStatus, name string) (string, string) {
	c := findContainerStatus(st, name)
	switch {
	case c == nil:
		return "absent", ""
	case c.State.Running != nil:
		return "running", ""
	case c.State.Terminated != nil:
		return "terminated", c.State.Terminated.Reason
	case c.State.Waiting != nil:
		return "waiting", c.State.Waiting.Reason
	}
	return "unknown", ""
}

// findContainerStatus is the status of container name (init containers included), nil
// when the pod has none.
func findContainerStatus(st *v1.PodStatus, name string) *v1.ContainerStatus {
	for _, list := range [][]v1.ContainerStatus{st.ContainerStatuses, st.InitContainerStatuses} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}

func describeMetric(m *MetricExpect) string {
	out := "metric " + m.Name
	if len(m.Labels) > 0 {
		out += "{" + labelsText(m.Labels) + "}"
	}
	return out + " " + cmpText(m.Value)
}

func labelsText(labels map[string]string) string {
	parts := make([]string, 0, len(labels))
	for _, k := range sortedKeys(labels) {
		parts = append(parts, fmt.Sprintf("%s=%q", k, labels[k]))
	}
	return strings.Join(parts, ",")
}

// checkMetric compares the sum of the series named m.Name (with or without the metrics
// prefix; _count and _sum address a histogram's or summary's, _bucket with an le label a
// histogram's cumulative bucket) whose labels include m.Labels.
func (s *simulation) checkMetric(m *MetricExpect) (bool, string) {
	mfs, err := s.gather()
	if err != nil {
		return false, "gather metrics: " + err.Error()
	}
	prefix := s.cfg.Simulator.MetricsPrefix
	var total float64
	found := false
	for _, mf := range mfs {
		for _, name := range []string{m.Name, prefix + m.Name} {
			v, ok := seriesValue(mf, name, m.Labels)
			if ok {
				total += v
				found = true
				break
			}
		}
	}
	if !found {
		return false, "no series"
	}
	held, _ := m.Value.numeric(total)
	return held, fmt.Sprintf("%g", total)
}

// seriesValue sums the series of mf that name addresses and whose labels include want.
func seriesValue(mf *dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	base, suffix := mf.GetName(), ""
	switch name {
	case base:
	case base + "_count":
		suffix = "_count"
	case base + "_sum":
		suffix = "_sum"
	case base + "_bucket":
		suffix = "_bucket"
	default:
		return 0, false
	}
	var le float64
	if suffix == "_bucket" {
		v, ok := want["le"]
		if !ok {
			return 0, false
		}
		var err error
		if le, err = strconv.ParseFloat(v, 64); err != nil {
			return 0, false
		}
		rest := make(map[string]string, len(want))
		for k, v := range want {
			if k != "le" {
				rest[k] = v
			}
		}
		want = rest
	}
	var total float64
	found := false
	for _, m := range mf.GetMetric() {
		if !hasLabels(m, want) {
			continue
		}
		var v float64
		switch {
		case suffix == "_bucket" && m.Histogram != nil:
			v = float64(m.Histogram.GetSampleCount()) // le="+Inf"
			for _, b := range m.Histogram.GetBucket() {
				if b.GetUpperBound() == le {
					v = float64(b.GetCumulativeCount())
				}
			}
		case suffix == "_count" && m.Histogram != nil:
			v = float64(m.Histogram.GetSampleCount())
		case suffix == "_sum" && m.Histogram != nil:
			v = m.Histogram.GetSampleSum()
		case suffix == "_count" && m.Summary != nil:
			v = float64(m.Summary.GetSampleCount())
		case suffix == "_sum" && m.Summary != nil:
			v = m.Summary.GetSampleSum()
		case suffix != "":
			continue
		case m.Counter != nil:
			v = m.Counter.GetValue()
		case m.Gauge != nil:
			v = m.Gauge.GetValue()
		case m.Untyped != nil:
			v = m.Untyped.GetValue()
		default:
			continue
		}
		total += v
		found = true
	}
	return total, found
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	for k, v := range want {
		ok := false
		for _, lp := range m.GetLabel() {
			if lp.GetName() == k && lp.GetValue() == v {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

func (s *simulation) checkHealthz(want string) (bool, string) {
	got := "fail"
	if s.running {
		rec := httptest.NewRecorder()
		s.k.Server().Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
		if rec.Code == http.StatusOK {
			got = "ok"
		} else {
			got = fmt.Sprintf("fail (%d %s)", rec.Code, strings.TrimSpace(rec.Body.String()))
		}
	} else {
		got = "fail (kubelet stopped)"
	}
	return strings.HasPrefix(got, want), got
}

func describeEvent(e *EventExpect) string {
	out := "event " + e.Reason
	if e.Object != "" {
		out += " on " + e.Object
	}
	if e.MessageContains != "" {
		out += fmt.Sprintf(" message~%q", e.MessageContains)
	}
	return out
}

// eventObject names an event's object as scenarios do: node, a pod's name (a static pod's
// full name), or pod/<namespace>/<name>.
func eventObject(e *v1.Event) []string {
	o := e.InvolvedObject
	if o.Kind == "Node" {
		return []string{"node"}
	}
	return []string{o.Name, strings.ToLower(o.Kind) + "/" + o.Namespace + "/" + o.Name}
}

func (s *simulation) checkEvent(e *EventExpect) (bool, string) {
	reasons := map[string]int{}
	for i := range s.seen {
		ev := &s.seen[i]
		if ev.Reason != e.Reason {
			continue
		}
		reasons[strings.Join(eventObject(ev), "|")]++
		if e.MessageContains != "" && !strings.Contains(ev.Message, e.MessageContains) {
			continue
		}
		if e.Object == "" {
			return true, ""
		}
		for _, name := range eventObject(ev) {
			if name == e.Object {
				return true, ""
			}
		}
	}
	if len(reasons) == 0 {
		return false, "no " + e.Reason + " event"
	}
	var objs []string
	for _, k := range sortedKeys(reasons) {
		objs = append(objs, strings.SplitN(k, "|", 2)[0])
	}
	return false, e.Reason + " events on " + strings.Join(objs, ", ")
}

func (s *simulation) checkAbsent(a *AbsentExpect) (bool, string) {
	if p := s.findPod(a.Pod); p != nil {
		return false, fmt.Sprintf("pod %s present, phase=%s", a.Pod, p.Status.Phase)
	}
	return true, ""
}
