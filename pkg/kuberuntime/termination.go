package kuberuntime

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/pkg/container"
	"github.com/minikubelet/minikubelet/pkg/cri"
)

// Termination message limits (upstream pkg/kubelet/container/runtime.go).
const (
	// MaxContainerTerminationMessageLength is how much of a termination message file is
	// read: its last 4096 bytes.
	MaxContainerTerminationMessageLength = 1024 * 4
	// MaxContainerTerminationMessageLogLength and MaxContainerTerminationMessageLogLines
	// bound a message taken from the log (FallbackToLogsOnError): the last 80 lines, of
	// which the last 2048 bytes.
	MaxContainerTerminationMessageLogLength = 1024 * 2
	MaxContainerTerminationMessageLogLines  = 80
	// MaxPodTerminationMessageLogLength is what all of a pod's containers' messages may
	// take together: the status manager cuts each to this divided by the pod's number of
	// containers.
	MaxPodTerminationMessageLogLength = 1024 * 12
)

// Annotations the manager puts on containers so that an exited container's termination
// message can be found from its status alone (upstream's kuberuntime labels).
const (
	ContainerTerminationMessagePathAnn   = "io.kubernetes.container.terminationMessagePath"
	ContainerTerminationMessagePolicyAnn = "io.kubernetes.container.terminationMessagePolicy"
)

// reasonContainerCannotRun is the runtime reason of a container that never ran: it has no
// log to fall back to.
const reasonContainerCannotRun = "ContainerCannotRun"

// messageCache holds the final message of each exited container the manager has read, by
// pod: an exited container's message never changes, so each is read once (a file read and
// a ContainerStatus call), however often the pod's status is generated. The node's owner
// is its one caller (pod syncs and housekeeping), so it has no lock.
type messageCache struct {
	byPod map[types.UID]map[string]string // container id -> message
}

// WithTerminationMessages returns podStatus with each exited container's termination
// message in its Message, as the kubelet's toKubeContainerStatus adds it: the file bound at
// the container's terminationMessagePath (its last 4096 bytes), or with
// FallbackToLogsOnError, when that is empty and the container failed, the end of its log;
// appended to the runtime's own message after ": ". podStatus itself (shared with the
// status cache) is not changed: the result is a copy when a message was added. Call it
// from the pod's sync, on the node's owner (it may call the runtime).
func (m *Manager) WithTerminationMessages(ctx context.Context, podStatus *container.PodStatus) *container.PodStatus {
	if podStatus == nil || m.cfg.NodeFS == nil {
		return podStatus
	}
	var out *container.PodStatus
	seen := make(map[string]string)
	for i, cs := range podStatus.ContainerStatuses {
		if cs.State != container.ContainerStateExited {
			continue
		}
		msg, ok := m.messages.get(podStatus.ID, cs.ID.ID)
		if !ok {
			if msg, ok = m.terminationMessage(ctx, cs); !ok {
				continue // not readable now: the next status tries again
			}
		}
		seen[cs.ID.ID] = msg
		if msg == cs.Message {
			continue
		}
		if out == nil {
			c := *podStatus
			c.ContainerStatuses = append([]*container.ContainerStatus(nil), podStatus.ContainerStatuses...)
			out = &c
		}
		withMsg := *cs
		withMsg.Message = msg
		out.ContainerStatuses[i] = &withMsg
	}
	m.messages.set(podStatus.ID, seen)
	if out == nil {
		return podStatus
	}
	return out
}

// ForgetTerminationMessages drops what is remembered of the pod's containers' messages
// (its pod directory is going away).
func (m *Manager) ForgetTerminationMessages(uid types.UID) { m.messages.set(uid, nil) }

func (c *messageCache) get(uid types.UID, id string) (string, bool) {
	msg, ok := c.byPod[uid][id]
	return msg, ok
}

// set replaces the pod's entries: containers no longer listed (removed) are forgotten.
func (c *messageCache) set(uid types.UID, msgs map[string]string) {
	if len(msgs) == 0 {
		delete(c.byPod, uid)
		return
	}
	if c.byPod == nil {
		c.byPod = map[types.UID]map[string]string{}
	}
	c.byPod[uid] = msgs
}

// terminationMessage is the exited container's message with its termination message
// added; ok is false when the runtime could not say where the file is (the call failed).
func (m *Manager) terminationMessage(ctx context.Context, cs *container.ContainerStatus) (string, bool) {
	st, err := m.runtime.ContainerStatus(ctx, cs.ID.ID)
	if err != nil {
		if !errors.Is(err, cri.ErrNotFound) {
			klog.FromContext(ctx).V(4).Info("Unable to read the status of an exited container for its termination message", "containerID", cs.ID.ID, "err", err)
		}
		return "", false
	}
	policy := v1.TerminationMessagePolicy(st.Annotations[ContainerTerminationMessagePolicyAnn])
	// A container that could not even start has no log to fall back to.
	fallback := policy == v1.TerminationMessageFallbackToLogsOnError && st.ExitCode != 0 && st.Reason != reasonContainerCannotRun
	msg, checkLogs := m.readTerminationMessage(st, st.Annotations[ContainerTerminationMessagePathAnn], fallback)
	if checkLogs {
		msg = m.lastLogLines(ctx, st.ID)
	}
	out := cs.Message
	if msg != "" {
		if out != "" {
			out += ": "
		}
		out += msg
	}
	return out, true
}

// readTerminationMessage is upstream's getTerminationMessage: the last
// MaxContainerTerminationMessageLength bytes of the node file bound at messagePath, and
// whether the log should be read instead (fallback and no message).
func (m *Manager) readTerminationMessage(st *cri.ContainerStatus, messagePath string, fallback bool) (string, bool) {
	if messagePath == "" {
		return "", fallback
	}
	messagePath = path.Clean("/" + messagePath)
	for _, mnt := range st.Mounts {
		if path.Clean("/"+mnt.ContainerPath) != messagePath {
			continue
		}
		data, err := m.cfg.NodeFS.ReadFile(mnt.HostPath)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return "", fallback
			}
			return fmt.Sprintf("Error on reading termination log %s: %v", mnt.HostPath, err), false
		}
		if len(data) > MaxContainerTerminationMessageLength {
			data = data[len(data)-MaxContainerTerminationMessageLength:]
		}
		return string(data), fallback && len(data) == 0
	}
	return "", fallback
}

// lastLogLines is upstream's readLastStringFromContainerLogs: the container's last 80 log
// lines, of which the last 2048 bytes.
func (m *Manager) lastLogLines(ctx context.Context, id string) string {
	if m.cfg.ContainerLogTail == nil {
		return ""
	}
	lines, err := m.cfg.ContainerLogTail(ctx, id, MaxContainerTerminationMessageLogLines)
	if err != nil {
		return fmt.Sprintf("Error on reading termination message from logs: %v", err)
	}
	// The lines come with their newlines (a last line printed without one has none).
	s := strings.Join(lines, "")
	if len(s) > MaxContainerTerminationMessageLogLength {
		s = s[len(s)-MaxContainerTerminationMessageLogLength:]
	}
	return s
}
