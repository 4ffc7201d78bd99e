package nodestatus

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/pkg/cri"
)

// Setter modifies the node in place and returns an error if the modification failed; it
// may have partially mutated the node before returning an error (upstream nodestatus.Setter).
type Setter func(ctx context.Context, node *v1.Node) error

// RecordEventFunc records a node event of eventType with reason (the kubelet's
// recordNodeStatusEvent, which formats the message "Node <name> status is now: <reason>").
type RecordEventFunc func(eventType, reason string)

// Event reasons recorded by the condition setters (pkg/kubelet/events upstream).
const (
	NodeReady                 = "NodeReady"
	NodeNotReady              = "NodeNotReady"
	NodeHasSufficientMemory   = "NodeHasSufficientMemory"
	NodeHasInsufficientMemory = "NodeHasInsufficientMemory"
	NodeHasNoDiskPressure     = "NodeHasNoDiskPressure"
	NodeHasDiskPressure       = "NodeHasDiskPressure"
	NodeHasSufficientPID      = "NodeHasSufficientPID"
	NodeHasInsufficientPID    = "NodeHasInsufficientPID"
)

// MaxNamesPerImageInNodeStatus is the most names reported per image (upstream constant).
const MaxNamesPerImageInNodeStatus = 5

// NodeAddress sets the InternalIP and Hostname addresses.
func NodeAddress(nodeIP, hostname string) Setter {
	return func(_ context.Context, node *v1.Node) error {
		if net.ParseIP(nodeIP) == nil {
			return fmt.Errorf("failed to validate nodeIP: %q is not an IP address", nodeIP)
		}
		node.Status.Addresses = []v1.NodeAddress{
			{Type: v1.NodeInternalIP, Address: nodeIP},
			{Type: v1.NodeHostName, Address: hostname},
		}
		return nil
	}
}

// MachineInfo sets the machine identity, the capacity (cpu, memory, ephemeral-storage,
// hugepages and pods = maxPods, or min(cores x podsPerCore, maxPods)) and the allocatable
// resources: capacity minus reservation(capacity), with hugepages also taken out of
// allocatable memory and nothing below zero, as upstream.
func MachineInfo(maxPods, podsPerCore int, machine Machine, reservation func(capacity v1.ResourceList) v1.ResourceList) Setter {
	return func(_ context.Context, node *v1.Node) error {
		if node.Status.Capacity == nil {
			node.Status.Capacity = v1.ResourceList{}
		}
		node.Status.NodeInfo.MachineID = machine.MachineID
		node.Status.NodeInfo.SystemUUID = machine.SystemUUID
		node.Status.NodeInfo.BootID = machine.BootID

		for name, q := range machine.Capacity() {
			node.Status.Capacity[name] = q
		}
		pods := int64(maxPods)
		if podsPerCore > 0 {
			cores := machine.CPU.Value() // rounds up, like cadvisor's NumCores for fractions
			if perCore := cores * int64(podsPerCore); perCore < pods {
				pods = perCore
			}
		}
		node.Status.Capacity[v1.ResourcePods] = *resource.NewQuantity(pods, resource.DecimalSI)

		if node.Status.Allocatable == nil {
			node.Status.Allocatable = v1.ResourceList{}
		}
		reserved := reservation(node.Status.Capacity)
		for name, c := range node.Status.Capacity {
			value := c.DeepCopy()
			if r, ok := reserved[name]; ok {
				value.Sub(r)
			}
			if value.Sign() < 0 {
				value.Set(0)
			}
			node.Status.Allocatable[name] = value
		}
		for name, c := range node.Status.Capacity {
			if !strings.HasPrefix(string(name), v1.ResourceHugePagesPrefix) {
				continue
			}
			mem := node.Status.Allocatable[v1.ResourceMemory]
			mem.Sub(c)
			if mem.Sign() < 0 {
				mem.Set(0)
			}
			node.Status.Allocatable[v1.ResourceMemory] = mem
		}
		return nil
	}
}

// VersionInfo sets the kernel, OS image, container runtime ("<name>://<version>") and
// kubelet versions.
func VersionInfo(v Versions) Setter {
	return func(_ context.Context, node *v1.Node) error {
		node.Status.NodeInfo.KernelVersion = v.KernelVersion
		node.Status.NodeInfo.OSImage = v.OSImage
		runtimeVersion := v.RuntimeVersion
		if runtimeVersion == "" {
			runtimeVersion = "Unknown"
		}
		node.Status.NodeInfo.ContainerRuntimeVersion = fmt.Sprintf("%s://%s", v.RuntimeName, runtimeVersion)
		node.Status.NodeInfo.KubeletVersion = v.KubeletVersion
		node.Status.NodeInfo.KubeProxyVersion = ""
		if v.KubeProxyVersion {
			node.Status.NodeInfo.KubeProxyVersion = v.KubeletVersion
		}
		return nil
	}
}

// DeclaredFeatures sets the features the node declares (KEP-5328), when it declares any.
func DeclaredFeatures(features []string) Setter {
	return func(_ context.Context, node *v1.Node) error {
		if features != nil {
			node.Status.DeclaredFeatures = append([]string(nil), features...)
		}
		return nil
	}
}

// RuntimeHandlers sets status.runtimeHandlers from the runtime's handlers (upstream's
// RuntimeHandlers, whose gates UserNamespacesSupport and RecursiveReadOnlyMounts are GA):
// which ones run pods in user namespaces of their own (hostUsers: false) and keep
// recursive read-only mounts. An empty list while the runtime has reported none.
func RuntimeHandlers(handlers func() []cri.RuntimeHandler) Setter {
	return func(_ context.Context, node *v1.Node) error {
		var hs []cri.RuntimeHandler
		if handlers != nil {
			hs = handlers()
		}
		node.Status.RuntimeHandlers = make([]v1.NodeRuntimeHandler, len(hs))
		for i, h := range hs {
			rro, userns := h.RecursiveReadOnlyMounts, h.UserNamespaces
			node.Status.RuntimeHandlers[i] = v1.NodeRuntimeHandler{
				Name:     h.Name,
				Features: &v1.NodeRuntimeHandlerFeatures{RecursiveReadOnlyMounts: &rro, UserNamespaces: &userns},
			}
		}
		return nil
	}
}

// NodeFeatures sets status.features from the runtime's features (upstream's NodeFeatures,
// the SupplementalGroupsPolicy gate being GA): whether the runtime honours
// supplementalGroupsPolicy Strict, which the scheduler and the kubelet's admission read.
// Nothing while the runtime has reported none.
func NodeFeatures(features func() *cri.RuntimeFeatures) Setter {
	return func(_ context.Context, node *v1.Node) error {
		if features == nil {
			return nil
		}
		f := features()
		if f == nil {
			return nil
		}
		sgp := f.SupplementalGroupsPolicy
		node.Status.Features = &v1.NodeFeatures{SupplementalGroupsPolicy: &sgp}
		return nil
	}
}

// DaemonEndpoints sets the kubelet endpoint port (read on every update, so a port bound
// after construction is picked up).
func DaemonEndpoints(port func() int32) Setter {
	return func(_ context.Context, node *v1.Node) error {
		node.Status.DaemonEndpoints = v1.NodeDaemonEndpoints{KubeletEndpoint: v1.DaemonEndpoint{Port: port()}}
		return nil
	}
}

// Images sets the node's images from imageList, which returns them sorted by size,
// largest first; at most maxImages are kept (-1: no limit) and at most
// MaxNamesPerImageInNodeStatus names per image. On error the list is emptied.
func Images(maxImages int32, imageList func() ([]cri.Image, error)) Setter {
	return func(_ context.Context, node *v1.Node) error {
		images, err := imageList()
		if err != nil {
			node.Status.Images = nil
			return fmt.Errorf("error getting image list: %w", err)
		}
		if maxImages > -1 && int(maxImages) < len(images) {
			images = images[:maxImages]
		}
		if imagesListed(node.Status.Images, images) {
			return nil // as last reported: kept, not built again (copyNode shares it)
		}
		var out []v1.ContainerImage
		for _, img := range images {
			names := slices.Clone(statusImageNames(img)) // not the runtime's own slice
			out = append(out, v1.ContainerImage{Names: names, SizeBytes: int64(img.Size)})
		}
		node.Status.Images = out
		return nil
	}
}

// imagesListed reports whether the node's images are the ones Images would make of
// images.
func imagesListed(have []v1.ContainerImage, images []cri.Image) bool {
	if len(have) != len(images) {
		return false
	}
	for i, img := range images {
		if have[i].SizeBytes != int64(img.Size) || !slices.Equal(have[i].Names, statusImageNames(img)) {
			return false
		}
	}
	return true
}

// statusImageNames are the names the node's status gives an image: its tags, at most
// MaxNamesPerImageInNodeStatus of them, or its ID when it has none. The slice may be the
// image's own.
func statusImageNames(img cri.Image) []string {
	if len(img.RepoTags) == 0 {
		return []string{img.ID}
	}
	return img.RepoTags[:min(len(img.RepoTags), MaxNamesPerImageInNodeStatus)]
}

// SortImagesBySize orders images largest first, ties by ID descending (upstream
// sliceutils.ByImageSize), which is the order Images expects.
func SortImagesBySize(images []cri.Image) {
	sort.SliceStable(images, func(i, j int) bool {
		if images[i].Size == images[j].Size {
			return images[i].ID > images[j].ID
		}
		return images[i].Size > images[j].Size
	})
}

// GoRuntime sets the operating system and architecture.
func GoRuntime(operatingSystem, architecture string) Setter {
	return func(_ context.Context, node *v1.Node) error {
		node.Status.NodeInfo.OperatingSystem = operatingSystem
		node.Status.NodeInfo.Architecture = architecture
		return nil
	}
}

// pressureCondition is the shared body of the three pressure setters: the heartbeat moves
// on every call; status, reason, message and LastTransitionTime only on a flip, which
// also records an event. A condition seen for the first time starts as Unknown, so it
// always "flips" (and records its event) on the first update, as upstream.
func pressureCondition(condType v1.NodeConditionType, now func() time.Time, pressure func() bool, record RecordEventFunc,
	trueReason, trueMessage, trueEvent, falseReason, falseMessage, falseEvent string) Setter {
	return func(_ context.Context, node *v1.Node) error {
		currentTime := metav1.NewTime(now())
		var condition *v1.NodeCondition
		for i := range node.Status.Conditions {
			if node.Status.Conditions[i].Type == condType {
				condition = &node.Status.Conditions[i]
			}
		}
		isNew := condition == nil
		if isNew {
			condition = &v1.NodeCondition{Type: condType, Status: v1.ConditionUnknown}
		}
		condition.LastHeartbeatTime = currentTime
		if pressure() {
			if condition.Status != v1.ConditionTrue {
				condition.Status = v1.ConditionTrue
				condition.Reason = trueReason
				condition.Message = trueMessage
				condition.LastTransitionTime = currentTime
				record(v1.EventTypeNormal, trueEvent)
			}
		} else if condition.Status != v1.ConditionFalse {
			condition.Status = v1.ConditionFalse
			condition.Reason = falseReason
			condition.Message = falseMessage
			condition.LastTransitionTime = currentTime
			record(v1.EventTypeNormal, falseEvent)
		}
		if isNew {
			node.Status.Conditions = append(node.Status.Conditions, *condition)
		}
		return nil
	}
}

// MemoryPressureCondition maintains the MemoryPressure condition.
func MemoryPressureCondition(now func() time.Time, pressure func() bool, record RecordEventFunc) Setter {
	return pressureCondition(v1.NodeMemoryPressure, now, pressure, record,
		"KubeletHasInsufficientMemory", "kubelet has insufficient memory available", NodeHasInsufficientMemory,
		"KubeletHasSufficientMemory", "kubelet has sufficient memory available", NodeHasSufficientMemory)
}

// DiskPressureCondition maintains the DiskPressure condition.
func DiskPressureCondition(now func() time.Time, pressure func() bool, record RecordEventFunc) Setter {
	return pressureCondition(v1.NodeDiskPressure, now, pressure, record,
		"KubeletHasDiskPressure", "kubelet has disk pressure", NodeHasDiskPressure,
		"KubeletHasNoDiskPressure", "kubelet has no disk pressure", NodeHasNoDiskPressure)
}

// PIDPressureCondition maintains the PIDPressure condition.
func PIDPressureCondition(now func() time.Time, pressure func() bool, record RecordEventFunc) Setter {
	return pressureCondition(v1.NodePIDPressure, now, pressure, record,
		"KubeletHasInsufficientPID", "kubelet has insufficient PID available", NodeHasInsufficientPID,
		"KubeletHasSufficientPID", "kubelet has sufficient PID available", NodeHasSufficientPID)
}

// ReadyCondition maintains the Ready condition: True (KubeletReady) when the runtime,
// network, storage and shutdown errors are all nil and cpu, memory, pods and
// ephemeral-storage capacity are known; otherwise False (KubeletNotReady) with every
// error aggregated into the message ("[a, b]" for several). LastTransitionTime moves and
// NodeReady / NodeNotReady is recorded only on a flip; a newly created condition records
// nothing (upstream). shutdownErrors may be nil.
func ReadyCondition(now func() time.Time, runtimeErrors, networkErrors, storageErrors, shutdownErrors func() error, record RecordEventFunc) Setter {
	return func(ctx context.Context, node *v1.Node) error {
		currentTime := metav1.NewTime(now())
		newCondition := v1.NodeCondition{
			Type:              v1.NodeReady,
			Status:            v1.ConditionTrue,
			Reason:            "KubeletReady",
			Message:           "kubelet is posting ready status",
			LastHeartbeatTime: currentTime,
		}
		errs := []error{runtimeErrors(), networkErrors(), storageErrors()}
		if shutdownErrors != nil {
			errs = append(errs, shutdownErrors())
		}
		var missing []string
		for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory, v1.ResourcePods, v1.ResourceEphemeralStorage} {
			if _, ok := node.Status.Capacity[name]; !ok {
				missing = append(missing, string(name))
			}
		}
		if len(missing) > 0 {
			errs = append(errs, fmt.Errorf("missing node capacity for resources: %s", strings.Join(missing, ", ")))
		}
		if agg := utilerrors.NewAggregate(errs); agg != nil {
			newCondition.Status = v1.ConditionFalse
			newCondition.Reason = "KubeletNotReady"
			newCondition.Message = agg.Error()
		}

		updated, flipped := false, false
		for i := range node.Status.Conditions {
			if node.Status.Conditions[i].Type != v1.NodeReady {
				continue
			}
			if node.Status.Conditions[i].Status == newCondition.Status {
				newCondition.LastTransitionTime = node.Status.Conditions[i].LastTransitionTime
			} else {
				newCondition.LastTransitionTime = currentTime
				flipped = true
			}
			node.Status.Conditions[i] = newCondition
			updated = true
			break
		}
		if !updated {
			newCondition.LastTransitionTime = currentTime
			node.Status.Conditions = append(node.Status.Conditions, newCondition)
		}
		if flipped {
			if newCondition.Status == v1.ConditionTrue {
				record(v1.EventTypeNormal, NodeReady)
			} else {
				record(v1.EventTypeNormal, NodeNotReady)
				klog.FromContext(ctx).Info("Node became not ready", "node", klog.KObj(node), "condition", newCondition)
			}
		}
		return nil
	}
}

// VolumesInUse is a no-op: the simulator mounts no volumes (kept so the chain has the
// upstream shape).
func VolumesInUse() Setter {
	return func(context.Context, *v1.Node) error { return nil }
}
