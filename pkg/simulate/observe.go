package simulate

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/minikubelet/minikubelet/pkg/kubelet"
	"github.com/minikubelet/minikubelet/pkg/runtime/fault"
)

// TimelineEntry is one notable change.
type TimelineEntry struct {
	At      time.Duration `json:"-"`
	Time    string        `json:"at"`
	Subject string        `json:"subject"`
	Text    string        `json:"text"`
}

// observer turns state changes into timeline lines. It looks at every settled instant, so
// it must be cheap when nothing changed: pod statuses are only scanned when the status
// manager's version moved.
type observer struct {
	s     *simulation
	lines []TimelineEntry

	k          *kubelet.Kubelet
	podVersion uint64
	pods       map[types.UID]podSummary
	conditions map[v1.NodeConditionType]condSummary
	plegType   string
	discarded  uint64
	fired      map[string]bool // faults whose first firing is on the timeline
	firedNow   []fault.Spec    // firings since the last observation, in order
}

type podSummary struct {
	name       string
	phase      v1.PodPhase
	containers string // name:state[:reason][:exitCode] restarts, in status order
}

type condSummary struct {
	status v1.ConditionStatus
	reason string
}

func newObserver(s *simulation) *observer {
	return &observer{s: s, fired: map[string]bool{}}
}

// kubeletStarted resets what is known about the (new) kubelet's state.
func (o *observer) kubeletStarted(k *kubelet.Kubelet) {
	o.k = k
	k.WatchPodStatuses(o.podStatusSet)
	o.podVersion = 0
	o.pods = map[types.UID]podSummary{}
	o.conditions = map[v1.NodeConditionType]condSummary{}
	o.plegType = ""
	o.discarded = 0
}

// line adds a timeline line at now.
func (o *observer) line(now time.Time, subject, text string) {
	d := now.Sub(o.s.epoch)
	o.lines = append(o.lines, TimelineEntry{At: d, Time: offset(d), Subject: subject, Text: text})
}

// faultFired is the runtime's OnFault hook. The runtime calls it from the loop being
// stepped, so there is no concurrency; the line is written at the next observation.
func (o *observer) faultFired(spec fault.Spec, method string) {
	if o.fired[spec.ID] {
		return
	}
	o.fired[spec.ID] = true
	spec.Method = method
	o.firedNow = append(o.firedNow, spec)
}

// observe records what changed since the last observation.
func (o *observer) observe(now time.Time) {
	for _, f := range o.firedNow {
		o.line(now, "fault", "fired id="+f.ID+" method="+f.Method+" type="+string(f.Type))
	}
	o.firedNow = o.firedNow[:0]
	if o.k == nil {
		return
	}
	o.observeNode(now)
	o.observePLEG(now)
	o.observePods(now)
}

func (o *observer) observeNode(now time.Time) {
	for _, c := range o.k.NodeStatus().Conditions() {
		cur := condSummary{status: c.Status, reason: c.Reason}
		if prev, ok := o.conditions[c.Type]; ok && prev == cur {
			continue
		}
		o.conditions[c.Type] = cur
		text := fmt.Sprintf("%s=%s reason=%s", c.Type, c.Status, c.Reason)
		if c.Message != "" {
			text += " message=" + strconv.Quote(c.Message)
		}
		o.line(now, "node", text)
	}
}

func (o *observer) observePLEG(now time.Time) {
	if t := o.k.PLEGActiveType(); t != "" {
		if t != o.plegType {
			if o.plegType != "" || t != "" {
				o.line(now, "pleg", "active="+t)
			}
			o.plegType = t
		}
	}
	if n := o.k.GenericPLEG().DiscardedEvents(); n != o.discarded {
		o.line(now, "pleg", fmt.Sprintf("discarded %d events (event channel full), %d in all", n-o.discarded, n))
		o.discarded = n
	}
}

// podStatusSet is the status manager's hook: a pod's status, at the instant it is stored.
// A sync, the relist after it and the next sync can fall in one instant, so a settled look
// alone would miss a status between them (a pod's Pending before its Running).
func (o *observer) podStatusSet(pod *v1.Pod, st *v1.PodStatus) {
	c := summarize(pod, st)
	p, ok := o.pods[pod.UID]
	now := o.s.clock.Now()
	switch {
	case !ok || p.phase != c.phase:
		o.line(now, "pod "+c.name, "phase="+string(c.phase)+containersText(c.containers))
	case p.containers != c.containers:
		o.line(now, "pod "+c.name, strings.TrimPrefix(containersText(c.containers), " "))
	default:
		return
	}
	o.pods[pod.UID] = c
}

func (o *observer) observePods(now time.Time) {
	sm := o.k.StatusManager()
	v := sm.Version()
	if v == o.podVersion {
		return
	}
	o.podVersion = v
	cur := make(map[types.UID]podSummary, len(o.pods))
	sm.Each(func(pod *v1.Pod, st *v1.PodStatus) { cur[pod.UID] = summarize(pod, st) })
	var changes []TimelineEntry
	add := func(name, text string) { changes = append(changes, TimelineEntry{Subject: "pod " + name, Text: text}) }
	for uid, c := range cur {
		p, ok := o.pods[uid]
		switch {
		case !ok:
			add(c.name, "phase="+string(c.phase)+containersText(c.containers))
		case p.phase != c.phase:
			add(c.name, "phase="+string(c.phase)+containersText(c.containers))
		case p.containers != c.containers:
			add(c.name, strings.TrimPrefix(containersText(c.containers), " "))
		}
	}
	for uid, p := range o.pods {
		if _, ok := cur[uid]; !ok {
			add(p.name, "removed")
		}
	}
	o.pods = cur
	// Map iteration order is random: sort so the timeline is the same on every run.
	sort.Slice(changes, func(i, j int) bool {
		if changes[i].Subject != changes[j].Subject {
			return changes[i].Subject < changes[j].Subject
		}
		return changes[i].Text < changes[j].Text
	})
	for _, c := range changes {
		o.line(now, c.Subject, c.Text)
	}
}

func containersText(c string) string {
	if c == "" {
		return ""
	}
	return " " + c
}

// summarize is what the timeline shows of a pod: its phase and its containers' states.
func summarize(pod *v1.Pod, st *v1.PodStatus) podSummary {
	var b strings.Builder
	write := func(cs []v1.ContainerStatus, prefix string) {
		for i := range cs {
			c := &cs[i]
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(prefix)
			b.WriteString(c.Name)
			b.WriteByte('=')
			switch s := c.State; {
			case s.Running != nil:
				b.WriteString("running")
			case s.Terminated != nil:
				b.WriteString("terminated(")
				b.WriteString(s.Terminated.Reason)
				b.WriteString(",exit=")
				b.WriteString(strconv.Itoa(int(s.Terminated.ExitCode)))
				b.WriteByte(')')
			case s.Waiting != nil:
				b.WriteString("waiting(")
				b.WriteString(s.Waiting.Reason)
				b.WriteByte(')')
			default:
				b.WriteString("unknown")
			}
			if c.RestartCount > 0 {
				b.WriteString(",restarts=")
				b.WriteString(strconv.Itoa(int(c.RestartCount)))
			}
		}
	}
	write(st.InitContainerStatuses, "init:")
	write(st.ContainerStatuses, "")
	return podSummary{name: pod.Name, phase: st.Phase, containers: b.String()}
}
