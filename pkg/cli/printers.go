package cli

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
)

// newTableWriter is kubectl get's tab writer.
func newTableWriter(out io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(out, 6, 4, 3, ' ', 0)
}

// age is kubectl's translateTimestampSince: "<unknown>" for a zero time.
func age(now time.Time, t metav1.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t.Time))
}

func isRestartableInitContainer(c *v1.Container) bool {
	return c != nil && c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
}

func podConditionTrue(pod *v1.Pod, t v1.PodConditionType) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == t {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// PodRow is one line of `get pods`, computed as kubectl's pod printer does.
type PodRow struct {
	Namespace, Name, Ready, Status, Restarts, Age string
}

// podRow reproduces kubectl printPod: READY counts ready running containers (sidecars
// included), STATUS is the phase or reason refined by init and container states
// (Init:N/M, Init:<reason>, a waiting or terminated reason, Completed -> Running or
// NotReady while something still runs, Terminating), RESTARTS carries "(X ago)".
func podRow(pod *v1.Pod, now time.Time) PodRow {
	restarts, sidecarRestarts := 0, 0
	total := len(pod.Spec.Containers)
	ready := 0
	var lastRestart, lastSidecarRestart metav1.Time

	reason := string(pod.Status.Phase)
	if pod.Status.Reason != "" {
		reason = pod.Status.Reason
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodScheduled && c.Reason == v1.PodReasonSchedulingGated {
			reason = v1.PodReasonSchedulingGated
		}
	}
	inits := map[string]*v1.Container{}
	for i := range pod.Spec.InitContainers {
		inits[pod.Spec.InitContainers[i].Name] = &pod.Spec.InitContainers[i]
		if isRestartableInitContainer(&pod.Spec.InitContainers[i]) {
			total++
		}
	}
	later := func(cur *metav1.Time, st v1.ContainerStatus) {
		if t := st.LastTerminationState.Terminated; t != nil && cur.Before(&t.FinishedAt) {
			*cur = t.FinishedAt
		}
	}

	initializing := false
	for i, c := range pod.Status.InitContainerStatuses {
		restarts += int(c.RestartCount)
		later(&lastRestart, c)
		sidecar := isRestartableInitContainer(inits[c.Name])
		if sidecar {
			sidecarRestarts += int(c.RestartCount)
			later(&lastSidecarRestart, c)
		}
		switch {
		case c.State.Terminated != nil && c.State.Terminated.ExitCode == 0:
			continue
		case sidecar && c.Started != nil && *c.Started:
			if c.Ready {
				ready++
			}
			continue
		case c.State.Terminated != nil:
			switch {
			case c.State.Terminated.Reason != "":
				reason = "Init:" + c.State.Terminated.Reason
			case c.State.Terminated.Signal != 0:
				reason = fmt.Sprintf("Init:Signal:%d", c.State.Terminated.Signal)
			default:
				reason = fmt.Sprintf("Init:ExitCode:%d", c.State.Terminated.ExitCode)
			}
			initializing = true
		case c.State.Waiting != nil && c.State.Waiting.Reason != "" && c.State.Waiting.Reason != "PodInitializing":
			reason = "Init:" + c.State.Waiting.Reason
			initializing = true
		default:
			reason = fmt.Sprintf("Init:%d/%d", i, len(pod.Spec.InitContainers))
			initializing = true
		}
		break
	}

	if !initializing || podConditionTrue(pod, v1.PodInitialized) {
		restarts = sidecarRestarts
		lastRestart = lastSidecarRestart
		hasRunning := false
		for i := len(pod.Status.ContainerStatuses) - 1; i >= 0; i-- {
			c := pod.Status.ContainerStatuses[i]
			restarts += int(c.RestartCount)
			later(&lastRestart, c)
			switch {
			case c.State.Waiting != nil && c.State.Waiting.Reason != "":
				reason = c.State.Waiting.Reason
			case c.State.Terminated != nil && c.State.Terminated.Reason != "":
				reason = c.State.Terminated.Reason
			case c.State.Terminated != nil && c.State.Terminated.Signal != 0:
				reason = fmt.Sprintf("Signal:%d", c.State.Terminated.Signal)
			case c.State.Terminated != nil:
				reason = fmt.Sprintf("ExitCode:%d", c.State.Terminated.ExitCode)
			case c.Ready && c.State.Running != nil:
				hasRunning = true
				ready++
			}
		}
		if reason == "Completed" && hasRunning {
			if podConditionTrue(pod, v1.PodReady) {
				reason = "Running"
			} else {
				reason = "NotReady"
			}
		}
	}

	if pod.DeletionTimestamp != nil && pod.Status.Reason == "NodeLost" {
		reason = "Unknown"
	} else if pod.DeletionTimestamp != nil && pod.Status.Phase != v1.PodSucceeded && pod.Status.Phase != v1.PodFailed {
		reason = "Terminating"
	}

	restartsStr := strconv.Itoa(restarts)
	if restarts != 0 && !lastRestart.IsZero() {
		restartsStr = fmt.Sprintf("%d (%s ago)", restarts, age(now, lastRestart))
	}
	return PodRow{
		Namespace: pod.Namespace,
		Name:      pod.Name,
		Ready:     fmt.Sprintf("%d/%d", ready, total),
		Status:    reason,
		Restarts:  restartsStr,
		Age:       age(now, pod.CreationTimestamp),
	}
}

// sortPods orders pods by namespace then name, or by name first when the namespace is
// not shown (so a table without a NAMESPACE column reads alphabetically).
func sortPods(pods []v1.Pod, namespaceFirst bool) {
	sort.SliceStable(pods, func(i, j int) bool {
		a, b := pods[i], pods[j]
		if namespaceFirst && a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.Namespace < b.Namespace
	})
}

func printPodTable(out io.Writer, pods []v1.Pod, now time.Time, withNamespace bool) error {
	w := newTableWriter(out)
	if withNamespace {
		fmt.Fprint(w, "NAMESPACE\t")
	}
	fmt.Fprintln(w, "NAME\tREADY\tSTATUS\tRESTARTS\tAGE")
	for i := range pods {
		r := podRow(&pods[i], now)
		if withNamespace {
			fmt.Fprintf(w, "%s\t", r.Namespace)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", r.Name, r.Ready, r.Status, r.Restarts, r.Age)
	}
	return w.Flush()
}

// nodeStatusString is kubectl's node STATUS: Ready / NotReady / Unknown, plus
// SchedulingDisabled.
func nodeStatusString(node *v1.Node) string {
	var status []string
	for _, c := range node.Status.Conditions {
		if c.Type != v1.NodeReady {
			continue
		}
		if c.Status == v1.ConditionTrue {
			status = append(status, string(c.Type))
		} else {
			status = append(status, "Not"+string(c.Type))
		}
	}
	if len(status) == 0 {
		status = append(status, "Unknown")
	}
	if node.Spec.Unschedulable {
		status = append(status, "SchedulingDisabled")
	}
	return strings.Join(status, ",")
}

// nodeRoles reads node-role.kubernetes.io/<role> and kubernetes.io/role labels.
func nodeRoles(node *v1.Node) string {
	set := map[string]bool{}
	for k, v := range node.Labels {
		switch {
		case strings.HasPrefix(k, "node-role.kubernetes.io/"):
			if r := strings.TrimPrefix(k, "node-role.kubernetes.io/"); r != "" {
				set[r] = true
			}
		case k == "kubernetes.io/role" && v != "":
			set[v] = true
		}
	}
	if len(set) == 0 {
		return "<none>"
	}
	roles := make([]string, 0, len(set))
	for r := range set {
		roles = append(roles, r)
	}
	sort.Strings(roles)
	return strings.Join(roles, ",")
}

func printNodeTable(out io.Writer, node *v1.Node, now time.Time) error {
	w := newTableWriter(out)
	fmt.Fprintln(w, "NAME\tSTATUS\tROLES\tAGE\tVERSION")
	fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", node.Name, nodeStatusString(node), nodeRoles(node), age(now, node.CreationTimestamp), node.Status.NodeInfo.KubeletVersion)
	if err := w.Flush(); err != nil {
		return err
	}
	if len(node.Status.Conditions) == 0 {
		return nil
	}
	fmt.Fprintln(out)
	w = newTableWriter(out)
	fmt.Fprintln(w, "CONDITION\tSTATUS\tLAST HEARTBEAT\tLAST TRANSITION\tREASON\tMESSAGE")
	for _, c := range node.Status.Conditions {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", c.Type, c.Status, age(now, c.LastHeartbeatTime), age(now, c.LastTransitionTime), c.Reason, c.Message)
	}
	return w.Flush()
}

func eventLastSeen(e *v1.Event) metav1.Time {
	if !e.LastTimestamp.IsZero() {
		return e.LastTimestamp
	}
	if !e.EventTime.IsZero() {
		return metav1.NewTime(e.EventTime.Time)
	}
	return e.FirstTimestamp
}

func printEventTable(out io.Writer, events []v1.Event, now time.Time) error {
	w := newTableWriter(out)
	fmt.Fprintln(w, "LAST SEEN\tTYPE\tREASON\tOBJECT\tMESSAGE")
	for i := range events {
		e := &events[i]
		obj := strings.ToLower(e.InvolvedObject.Kind) + "/" + e.InvolvedObject.Name
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", age(now, eventLastSeen(e)), e.Type, e.Reason, obj, strings.TrimSpace(e.Message))
	}
	return w.Flush()
}

// prefixWriter is kubectl describe's PrefixWriter: two spaces per level over one tab writer.
type prefixWriter struct{ w *tabwriter.Writer }

func newPrefixWriter(out io.Writer) *prefixWriter {
	return &prefixWriter{w: tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)}
}

func (p *prefixWriter) write(level int, format string, a ...any) {
	fmt.Fprintf(p.w, strings.Repeat("  ", level)+format, a...)
}

func (p *prefixWriter) flush() error { return p.w.Flush() }

const timeFormat = time.RFC1123Z

func printMapMultiline(w *prefixWriter, title string, m map[string]string, sep string) {
	w.write(0, "%s:\t", title)
	if len(m) == 0 {
		w.write(0, "<none>\n")
		return
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i, k := range keys {
		if i != 0 {
			w.write(0, "\t")
		}
		w.write(0, "%s%s%s\n", k, sep, m[k])
	}
}

// describeEvents is kubectl DescribeEvents: Type Reason Age From Message, with
// "<last> (xN over <first>)" for repeated events.
func describeEvents(w *prefixWriter, events []v1.Event, now time.Time) {
	if len(events) == 0 {
		w.write(0, "Events:\t<none>\n")
		return
	}
	_ = w.flush()
	sort.SliceStable(events, func(i, j int) bool {
		a, b := eventLastSeen(&events[i]), eventLastSeen(&events[j])
		return a.Before(&b)
	})
	w.write(0, "Events:\n  Type\tReason\tAge\tFrom\tMessage\n")
	w.write(1, "----\t------\t----\t----\t-------\n")
	for i := range events {
		e := &events[i]
		first := age(now, e.FirstTimestamp)
		interval := first
		if e.Count > 1 {
			interval = fmt.Sprintf("%s (x%d over %s)", age(now, e.LastTimestamp), e.Count, first)
		}
		source := e.Source.Component
		if source == "" {
			source = e.ReportingController
		}
		w.write(1, "%v\t%v\t%s\t%v\t%v\n", e.Type, e.Reason, interval, source, strings.TrimSpace(e.Message))
	}
}

func describeState(w *prefixWriter, name string, st v1.ContainerState) {
	switch {
	case st.Running != nil:
		w.write(2, "%s:\tRunning\n", name)
		w.write(3, "Started:\t%v\n", st.Running.StartedAt.Time.Format(timeFormat))
	case st.Waiting != nil:
		w.write(2, "%s:\tWaiting\n", name)
		if st.Waiting.Reason != "" {
			w.write(3, "Reason:\t%s\n", st.Waiting.Reason)
		}
		if st.Waiting.Message != "" {
			w.write(3, "Message:\t%s\n", st.Waiting.Message)
		}
	case st.Terminated != nil:
		w.write(2, "%s:\tTerminated\n", name)
		if st.Terminated.Reason != "" {
			w.write(3, "Reason:\t%s\n", st.Terminated.Reason)
		}
		if st.Terminated.Message != "" {
			w.write(3, "Message:\t%s\n", st.Terminated.Message)
		}
		w.write(3, "Exit Code:\t%d\n", st.Terminated.ExitCode)
		if st.Terminated.Signal > 0 {
			w.write(3, "Signal:\t%d\n", st.Terminated.Signal)
		}
		w.write(3, "Started:\t%s\n", st.Terminated.StartedAt.Time.Format(timeFormat))
		w.write(3, "Finished:\t%s\n", st.Terminated.FinishedAt.Time.Format(timeFormat))
	default:
		w.write(2, "%s:\tWaiting\n", name)
	}
}

func sortedResourceNames(rl v1.ResourceList) []v1.ResourceName {
	names := make([]v1.ResourceName, 0, len(rl))
	for n := range rl {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return names[i] < names[j] })
	return names
}

func describeContainers(w *prefixWriter, label string, containers []v1.Container, statuses []v1.ContainerStatus) {
	byName := map[string]v1.ContainerStatus{}
	for _, s := range statuses {
		byName[s.Name] = s
	}
	if len(containers) == 0 {
		w.write(0, "%s: <none>\n", label)
		return
	}
	w.write(0, "%s:\n", label)
	for _, c := range containers {
		st, ok := byName[c.Name]
		w.write(1, "%v:\n", c.Name)
		if ok {
			w.write(2, "Container ID:\t%s\n", st.ContainerID)
		}
		w.write(2, "Image:\t%s\n", c.Image)
		if ok {
			w.write(2, "Image ID:\t%s\n", st.ImageID)
		}
		var ports, hostPorts []string
		for _, p := range c.Ports {
			ports = append(ports, fmt.Sprintf("%d/%s", p.ContainerPort, p.Protocol))
			hostPorts = append(hostPorts, fmt.Sprintf("%d/%s", p.HostPort, p.Protocol))
		}
		portLine := func(one, many string, list []string) {
			switch len(list) {
			case 0:
				w.write(2, "%s:\t<none>\n", one)
			case 1:
				w.write(2, "%s:\t%s\n", one, list[0])
			default:
				w.write(2, "%s:\t%s\n", many, strings.Join(list, ", "))
			}
		}
		portLine("Port", "Ports", ports)
		portLine("Host Port", "Host Ports", hostPorts)
		if len(c.Command) > 0 {
			w.write(2, "Command:\n")
			for _, s := range c.Command {
				w.write(3, "%s\n", s)
			}
		}
		if len(c.Args) > 0 {
			w.write(2, "Args:\n")
			for _, s := range c.Args {
				w.write(3, "%s\n", s)
			}
		}
		if ok {
			describeState(w, "State", st.State)
			if st.LastTerminationState.Terminated != nil {
				describeState(w, "Last State", st.LastTerminationState)
			}
			w.write(2, "Ready:\t%v\n", printBool(st.Ready))
			w.write(2, "Restart Count:\t%d\n", st.RestartCount)
		}
		if len(c.Resources.Limits) > 0 {
			w.write(2, "Limits:\n")
			for _, n := range sortedResourceNames(c.Resources.Limits) {
				q := c.Resources.Limits[n]
				w.write(3, "%s:\t%s\n", n, q.String())
			}
		}
		if len(c.Resources.Requests) > 0 {
			w.write(2, "Requests:\n")
			for _, n := range sortedResourceNames(c.Resources.Requests) {
				q := c.Resources.Requests[n]
				w.write(3, "%s:\t%s\n", n, q.String())
			}
		}
		if len(c.Env) == 0 {
			w.write(2, "Environment:\t<none>\n")
		} else {
			w.write(2, "Environment:\n")
			for _, e := range c.Env {
				w.write(3, "%s:\t%s\n", e.Name, e.Value)
			}
		}
		if len(c.VolumeMounts) == 0 {
			w.write(2, "Mounts:\t<none>\n")
		} else {
			w.write(2, "Mounts:\n")
			for _, m := range c.VolumeMounts {
				mode := "rw"
				if m.ReadOnly {
					mode = "ro"
				}
				w.write(3, "%s from %s (%s)\n", m.MountPath, m.Name, mode)
			}
		}
	}
}

func printBool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

// podQOS is the pod's QoS class (status first, else computed like qos.GetPodQOS for the
// common cases: no requests or limits -> BestEffort; cpu and memory limits equal to the
// requests in every container -> Guaranteed; otherwise Burstable).
func podQOS(pod *v1.Pod) v1.PodQOSClass {
	if pod.Status.QOSClass != "" {
		return pod.Status.QOSClass
	}
	all := append(append([]v1.Container(nil), pod.Spec.InitContainers...), pod.Spec.Containers...)
	any, guaranteed := false, true
	for _, c := range all {
		if len(c.Resources.Requests) > 0 || len(c.Resources.Limits) > 0 {
			any = true
		}
		for _, n := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
			l, hasLimit := c.Resources.Limits[n]
			if !hasLimit {
				guaranteed = false
				continue
			}
			if r, hasReq := c.Resources.Requests[n]; hasReq && r.Cmp(l) != 0 {
				guaranteed = false
			}
		}
	}
	switch {
	case !any:
		return v1.PodQOSBestEffort
	case guaranteed:
		return v1.PodQOSGuaranteed
	}
	return v1.PodQOSBurstable
}

func tolerationString(t v1.Toleration) string {
	s := t.Key
	if t.Value != "" {
		s += "=" + t.Value
	}
	if t.Effect != "" {
		s += ":" + string(t.Effect)
	}
	// As kubectl: a bare "op=Exists" only when nothing precedes it, so the static pod
	// default {operator: Exists, effect: NoExecute} reads ":NoExecute op=Exists".
	if t.Operator == v1.TolerationOpExists && t.Value == "" {
		if t.Key != "" || t.Effect != "" {
			s += " op=Exists"
		} else {
			s = "op=Exists"
		}
	}
	if t.TolerationSeconds != nil {
		s += fmt.Sprintf(" for %ds", *t.TolerationSeconds)
	}
	return s
}

func describePod(out io.Writer, pod *v1.Pod, events []v1.Event, now time.Time) error {
	w := newPrefixWriter(out)
	w.write(0, "Name:\t%s\n", pod.Name)
	w.write(0, "Namespace:\t%s\n", pod.Namespace)
	if pod.Spec.Priority != nil {
		w.write(0, "Priority:\t%d\n", *pod.Spec.Priority)
	}
	if pod.Spec.PriorityClassName != "" {
		w.write(0, "Priority Class Name:\t%s\n", pod.Spec.PriorityClassName)
	}
	if pod.Spec.ServiceAccountName != "" {
		w.write(0, "Service Account:\t%s\n", pod.Spec.ServiceAccountName)
	}
	if pod.Spec.NodeName == "" {
		w.write(0, "Node:\t<none>\n")
	} else {
		w.write(0, "Node:\t%s\n", pod.Spec.NodeName+"/"+pod.Status.HostIP)
	}
	if pod.Status.StartTime != nil {
		w.write(0, "Start Time:\t%s\n", pod.Status.StartTime.Time.Format(timeFormat))
	}
	printMapMultiline(w, "Labels", pod.Labels, "=")
	printMapMultiline(w, "Annotations", pod.Annotations, ": ")
	if pod.DeletionTimestamp != nil && pod.Status.Phase != v1.PodFailed && pod.Status.Phase != v1.PodSucceeded {
		w.write(0, "Status:\tTerminating (lasts %s)\n", age(now, *pod.DeletionTimestamp))
		if pod.DeletionGracePeriodSeconds != nil {
			w.write(0, "Termination Grace Period:\t%ds\n", *pod.DeletionGracePeriodSeconds)
		}
	} else {
		w.write(0, "Status:\t%s\n", pod.Status.Phase)
	}
	if pod.Status.Reason != "" {
		w.write(0, "Reason:\t%s\n", pod.Status.Reason)
	}
	if pod.Status.Message != "" {
		w.write(0, "Message:\t%s\n", pod.Status.Message)
	}
	w.write(0, "IP:\t%s\n", pod.Status.PodIP)
	if len(pod.Status.PodIPs) == 0 {
		w.write(0, "IPs:\t<none>\n")
	} else {
		w.write(0, "IPs:\n")
		for _, ip := range pod.Status.PodIPs {
			w.write(1, "IP:\t%s\n", ip.IP)
		}
	}
	if len(pod.Spec.InitContainers) > 0 {
		describeContainers(w, "Init Containers", pod.Spec.InitContainers, pod.Status.InitContainerStatuses)
	}
	describeContainers(w, "Containers", pod.Spec.Containers, pod.Status.ContainerStatuses)
	if len(pod.Status.Conditions) > 0 {
		w.write(0, "Conditions:\n  Type\tStatus\n")
		for _, c := range pod.Status.Conditions {
			w.write(1, "%v \t%v \n", c.Type, c.Status)
		}
	}
	if len(pod.Spec.Volumes) == 0 {
		w.write(0, "Volumes:\t<none>\n")
	} else {
		w.write(0, "Volumes:\n")
		for _, v := range pod.Spec.Volumes {
			w.write(1, "%s:\n", v.Name)
			switch {
			case v.EmptyDir != nil:
				w.write(2, "Type:\tEmptyDir (a temporary directory that shares a pod's lifetime)\n")
			case v.HostPath != nil:
				w.write(2, "Type:\tHostPath (bare host directory volume)\n")
				w.write(2, "Path:\t%s\n", v.HostPath.Path)
			case v.ConfigMap != nil:
				w.write(2, "Type:\tConfigMap (a volume populated by a ConfigMap)\n")
				w.write(2, "Name:\t%s\n", v.ConfigMap.Name)
			case v.Secret != nil:
				w.write(2, "Type:\tSecret (a volume populated by a Secret)\n")
				w.write(2, "SecretName:\t%s\n", v.Secret.SecretName)
			case v.Image != nil:
				w.write(2, "Type:\tImage (a container image or OCI artifact)\n")
				w.write(2, "Reference:\t%s\n", v.Image.Reference)
				w.write(2, "PullPolicy:\t%s\n", v.Image.PullPolicy)
			default:
				w.write(2, "<unknown>\n")
			}
		}
	}
	w.write(0, "QoS Class:\t%s\n", podQOS(pod))
	printMapMultiline(w, "Node-Selectors", pod.Spec.NodeSelector, "=")
	w.write(0, "Tolerations:\t")
	if len(pod.Spec.Tolerations) == 0 {
		w.write(0, "<none>\n")
	} else {
		for i, t := range pod.Spec.Tolerations {
			if i != 0 {
				w.write(0, "\t")
			}
			w.write(0, "%s\n", tolerationString(t))
		}
	}
	describeEvents(w, events, now)
	return w.flush()
}

func describeNode(out io.Writer, node *v1.Node, lease *coordinationv1.Lease, pods []v1.Pod, events []v1.Event, now time.Time) error {
	w := newPrefixWriter(out)
	w.write(0, "Name:\t%s\n", node.Name)
	w.write(0, "Roles:\t%s\n", nodeRoles(node))
	printMapMultiline(w, "Labels", node.Labels, "=")
	printMapMultiline(w, "Annotations", node.Annotations, ": ")
	w.write(0, "CreationTimestamp:\t%s\n", node.CreationTimestamp.Time.Format(timeFormat))
	w.write(0, "Taints:\t")
	if len(node.Spec.Taints) == 0 {
		w.write(0, "<none>\n")
	} else {
		for i, t := range node.Spec.Taints {
			if i != 0 {
				w.write(0, "\t")
			}
			w.write(0, "%s\n", t.ToString())
		}
	}
	w.write(0, "Unschedulable:\t%v\n", node.Spec.Unschedulable)
	if lease == nil {
		w.write(0, "Lease:\t<none>\n")
	} else {
		holder := "<unset>"
		if lease.Spec.HolderIdentity != nil {
			holder = *lease.Spec.HolderIdentity
		}
		microTime := func(t *metav1.MicroTime) string {
			if t == nil {
				return "<unset>"
			}
			return t.Time.Format(timeFormat)
		}
		w.write(0, "Lease:\n")
		w.write(1, "HolderIdentity:\t%s\n", holder)
		w.write(1, "AcquireTime:\t%s\n", microTime(lease.Spec.AcquireTime))
		w.write(1, "RenewTime:\t%s\n", microTime(lease.Spec.RenewTime))
	}
	if len(node.Status.Conditions) > 0 {
		w.write(0, "Conditions:\n  Type\tStatus\tLastHeartbeatTime\tLastTransitionTime\tReason\tMessage\n")
		w.write(1, "----\t------\t-----------------\t------------------\t------\t-------\n")
		for _, c := range node.Status.Conditions {
			w.write(1, "%v \t%v \t%s \t%s \t%v \t%v\n", c.Type, c.Status,
				c.LastHeartbeatTime.Time.Format(timeFormat), c.LastTransitionTime.Time.Format(timeFormat), c.Reason, c.Message)
		}
	}
	w.write(0, "Addresses:\n")
	for _, a := range node.Status.Addresses {
		w.write(1, "%s:\t%s\n", a.Type, a.Address)
	}
	printResources := func(title string, rl v1.ResourceList) {
		if len(rl) == 0 {
			return
		}
		w.write(0, "%s:\n", title)
		for _, n := range sortedResourceNames(rl) {
			q := rl[n]
			w.write(1, "%s:\t%s\n", n, q.String())
		}
	}
	printResources("Capacity", node.Status.Capacity)
	printResources("Allocatable", node.Status.Allocatable)
	info := node.Status.NodeInfo
	w.write(0, "System Info:\n")
	w.write(1, "Machine ID:\t%s\n", info.MachineID)
	w.write(1, "System UUID:\t%s\n", info.SystemUUID)
	w.write(1, "Boot ID:\t%s\n", info.BootID)
	w.write(1, "Kernel Version:\t%s\n", info.KernelVersion)
	w.write(1, "OS Image:\t%s\n", info.OSImage)
	w.write(1, "Operating System:\t%s\n", info.OperatingSystem)
	w.write(1, "Architecture:\t%s\n", info.Architecture)
	w.write(1, "Container Runtime Version:\t%s\n", info.ContainerRuntimeVersion)
	w.write(1, "Kubelet Version:\t%s\n", info.KubeletVersion)
	if node.Spec.PodCIDR != "" {
		w.write(0, "PodCIDR:\t%s\n", node.Spec.PodCIDR)
	}
	describeNodeResources(w, node, pods, now)
	describeEvents(w, events, now)
	return w.flush()
}

// describeNodeResources prints "Non-terminated Pods" and "Allocated resources" as kubectl
// does, from the pods' requests and limits against the node's allocatable.
func describeNodeResources(w *prefixWriter, node *v1.Node, pods []v1.Pod, now time.Time) {
	var running []v1.Pod
	for _, p := range pods {
		if p.Status.Phase != v1.PodSucceeded && p.Status.Phase != v1.PodFailed {
			running = append(running, p)
		}
	}
	w.write(0, "Non-terminated Pods:\t(%d in total)\n", len(running))
	w.write(1, "Namespace\tName\tCPU Requests\tCPU Limits\tMemory Requests\tMemory Limits\tAge\n")
	w.write(1, "---------\t----\t------------\t----------\t---------------\t-------------\t---\n")
	alloc := node.Status.Allocatable
	totalReq, totalLim := v1.ResourceList{}, v1.ResourceList{}
	for i := range running {
		p := &running[i]
		req, lim := podRequestsAndLimits(p)
		for n, q := range req {
			add(totalReq, n, q)
		}
		for n, q := range lim {
			add(totalLim, n, q)
		}
		cpuReq, cpuLim, memReq, memLim := req[v1.ResourceCPU], lim[v1.ResourceCPU], req[v1.ResourceMemory], lim[v1.ResourceMemory]
		w.write(1, "%s\t%s\t%s (%d%%)\t%s (%d%%)\t%s (%d%%)\t%s (%d%%)\t%s\n", p.Namespace, p.Name,
			cpuReq.String(), fraction(cpuReq, alloc[v1.ResourceCPU]), cpuLim.String(), fraction(cpuLim, alloc[v1.ResourceCPU]),
			memReq.String(), fraction(memReq, alloc[v1.ResourceMemory]), memLim.String(), fraction(memLim, alloc[v1.ResourceMemory]),
			age(now, p.CreationTimestamp))
	}
	w.write(0, "Allocated resources:\n  (Total limits may be over 100 percent, i.e., overcommitted.)\n")
	w.write(1, "Resource\tRequests\tLimits\n")
	w.write(1, "--------\t--------\t------\n")
	for _, n := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage} {
		r, l := totalReq[n], totalLim[n]
		w.write(1, "%s\t%s (%d%%)\t%s (%d%%)\n", n, r.String(), fraction(r, alloc[n]), l.String(), fraction(l, alloc[n]))
	}
}

func add(rl v1.ResourceList, n v1.ResourceName, q resource.Quantity) {
	if cur, ok := rl[n]; ok {
		cur.Add(q)
		rl[n] = cur
		return
	}
	rl[n] = q.DeepCopy()
}

func fraction(q, total resource.Quantity) int64 {
	if total.IsZero() {
		return 0
	}
	return int64(float64(q.MilliValue()) / float64(total.MilliValue()) * 100)
}

// podRequestsAndLimits sums the app containers and takes the max with each init
// container, as the scheduler's effective request (sidecars ignored for simplicity).
func podRequestsAndLimits(pod *v1.Pod) (reqs, limits v1.ResourceList) {
	reqs, limits = v1.ResourceList{}, v1.ResourceList{}
	for _, c := range pod.Spec.Containers {
		for n, q := range c.Resources.Requests {
			add(reqs, n, q)
		}
		for n, q := range c.Resources.Limits {
			add(limits, n, q)
		}
	}
	for _, c := range pod.Spec.InitContainers {
		for n, q := range c.Resources.Requests {
			if cur, ok := reqs[n]; !ok || q.Cmp(cur) > 0 {
				reqs[n] = q.DeepCopy()
			}
		}
		for n, q := range c.Resources.Limits {
			if cur, ok := limits[n]; !ok || q.Cmp(cur) > 0 {
				limits[n] = q.DeepCopy()
			}
		}
	}
	return reqs, limits
}
