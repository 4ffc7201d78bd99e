package kubelet

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/runtime/fake"
	"github.com/minikubelet/minikubelet/pkg/server"
)

// followPeriod is how often a followed log is read again for new lines.
const followPeriod = 500 * time.Millisecond

// ContainerLogs writes a container's log to w as the kubelet's containerLogs handler does:
// the current instance, or with Previous the one before it; Follow keeps writing new lines
// until the container exits or ctx ends. Errors are *server.StatusError with upstream's
// messages and codes.
func (k *Kubelet) ContainerLogs(ctx context.Context, namespace, podName, containerName string, opts server.LogOptions, w io.Writer) error {
	pod := k.podByName(namespace, podName)
	if pod == nil {
		return &server.StatusError{Code: http.StatusNotFound, Message: fmt.Sprintf("pod %q does not exist", podName)}
	}
	if !hasContainer(pod, containerName) {
		return &server.StatusError{Code: http.StatusNotFound, Message: fmt.Sprintf("container %q not found in pod %q", containerName, podName)}
	}
	instances, err := k.rt.ListContainers(ctx, &cri.ContainerFilter{LabelSelector: map[string]string{
		cri.PodUIDLabel: string(pod.UID), cri.ContainerNameLabel: containerName,
	}})
	if err != nil {
		return &server.StatusError{Code: http.StatusInternalServerError, Message: fmt.Sprintf("failed to get container status %q: %v", containerName, err)}
	}
	sort.Slice(instances, func(i, j int) bool { return instances[i].CreatedAt > instances[j].CreatedAt })
	var c *cri.Container
	switch {
	case opts.Previous && len(instances) > 1:
		c = &instances[1]
	case opts.Previous:
		return &server.StatusError{Code: http.StatusBadRequest, Message: fmt.Sprintf("previous terminated container %q in pod %q not found", containerName, podName)}
	case len(instances) > 0:
		c = &instances[0]
	default:
		reason := "ContainerCreating"
		if st := k.podStatusOf(pod.UID); st != nil {
			for _, cs := range slices.Concat(st.InitContainerStatuses, st.ContainerStatuses, st.EphemeralContainerStatuses) {
				if cs.Name == containerName && cs.State.Waiting != nil && cs.State.Waiting.Reason != "" {
					reason = cs.State.Waiting.Reason
				}
			}
		}
		return &server.StatusError{Code: http.StatusBadRequest, Message: fmt.Sprintf("container %q in pod %q is waiting to start: %s", containerName, podName, reason)}
	}

	var since int64
	switch {
	case opts.SinceTime != nil:
		since = opts.SinceTime.UnixNano()
	case opts.SinceSeconds != nil:
		since = k.clock.Now().Add(-cri.Seconds(*opts.SinceSeconds)).UnixNano()
	}
	tail := 0
	if opts.TailLines != nil {
		if *opts.TailLines == 0 && !opts.Follow {
			return nil
		}
		tail = int(*opts.TailLines)
	}
	lw := &logWriter{w: w, timestamps: opts.Timestamps, limit: -1}
	if opts.LimitBytes != nil {
		lw.limit = *opts.LimitBytes
	}
	lines, err := k.runtime.ContainerLog(c.ID, since, tail)
	if err != nil {
		return &server.StatusError{Code: http.StatusNotFound, Message: fmt.Sprintf("container %q in pod %q: %v", containerName, podName, err)}
	}
	if opts.TailLines != nil && *opts.TailLines == 0 {
		lines = nil
	}
	if done := lw.write(lines); done || !opts.Follow || opts.Previous {
		return nil
	}
	// Following: the position is the last line written (and how many lines of its instant).
	last, atLast := k.clock.Now().UnixNano(), 0
	if n := len(lines); n > 0 {
		last = lines[n-1].Time
		for i := n - 1; i >= 0 && lines[i].Time == last; i-- {
			atLast++
		}
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-k.clock.After(followPeriod):
		}
		st, err := k.rt.ContainerStatus(ctx, c.ID)
		running := err == nil && st.State == cri.ContainerRunning
		more, err := k.runtime.ContainerLog(c.ID, last, 0)
		if err != nil {
			return nil // the container is gone: so is its log
		}
		// Skip what was written already: the lines of the last instant seen.
		skip := 0
		for skip < len(more) && skip < atLast && more[skip].Time == last {
			skip++
		}
		more = more[skip:]
		if n := len(more); n > 0 {
			if more[n-1].Time == last {
				atLast += n
			} else {
				last, atLast = more[n-1].Time, 0
				for i := n - 1; i >= 0 && more[i].Time == last; i-- {
					atLast++
				}
			}
		}
		if lw.write(more) || !running {
			return nil
		}
	}
}

// logWriter writes log lines as kubectl shows them, with an optional RFC 3339 timestamp, up
// to a byte limit (negative: none), flushing after each batch for followers.
type logWriter struct {
	w          io.Writer
	timestamps bool
	limit      int64
}

// write writes lines and reports whether the limit was reached (or the writer failed).
func (l *logWriter) write(lines []fake.LogLine) bool {
	for _, line := range lines {
		text := line.Text + "\n"
		if line.Partial {
			text = line.Text
		}
		if l.timestamps {
			text = time.Unix(0, line.Time).UTC().Format(time.RFC3339Nano) + " " + text
		}
		if l.limit >= 0 && int64(len(text)) > l.limit {
			text = text[:l.limit]
		}
		if _, err := io.WriteString(l.w, text); err != nil {
			return true
		}
		if l.limit >= 0 {
			if l.limit -= int64(len(text)); l.limit == 0 {
				return true
			}
		}
	}
	if f, ok := l.w.(http.Flusher); ok && len(lines) > 0 {
		f.Flush()
	}
	return false
}

// hasContainer: the pod has an app, init or ephemeral container of that name.
func hasContainer(pod *v1.Pod, name string) bool {
	for _, list := range [][]v1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for _, c := range list {
			if c.Name == name {
				return true
			}
		}
	}
	for _, c := range pod.Spec.EphemeralContainers {
		if c.Name == name {
			return true
		}
	}
	return false
}

// containerLogTail is the text of the container's last lines of log (kuberuntime's
// ContainerLogTail: a failed container's message with FallbackToLogsOnError).
func (k *Kubelet) containerLogTail(_ context.Context, containerID string, lines int) ([]string, error) {
	log, err := k.runtime.ContainerLog(containerID, 0, lines)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(log))
	for i, l := range log {
		out[i] = l.Text + "\n"
		if l.Partial {
			out[i] = l.Text // the program's last line, without a newline
		}
	}
	return out, nil
}
