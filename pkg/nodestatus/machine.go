package nodestatus

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/minikubelet/minikubelet/pkg/release"
)

// Machine is the simulated hardware the node reports (what cadvisor's MachineInfo gives
// the real kubelet).
type Machine struct {
	// CPU is the number of cores (fractions such as "1500m" allowed). Default 4.
	CPU resource.Quantity
	// Memory is the physical memory. Default 8Gi.
	Memory resource.Quantity
	// EphemeralStorage is the root filesystem size. Default 100Gi.
	EphemeralStorage resource.Quantity
	// Hugepages maps a page size ("2Mi", "1Gi") to the memory pre-allocated in such pages;
	// it is reported as hugepages-<size> and taken out of allocatable memory.
	Hugepages map[string]resource.Quantity
	// MaxPIDs is the node's process id limit (kernel.pid_max). Default 4194304.
	MaxPIDs int64
	// MachineID, SystemUUID and BootID default to values derived from the node name, so
	// the same node name always reports the same identity.
	MachineID  string
	SystemUUID string
	BootID     string
}

// Defaults of Machine.
var (
	DefaultCPU              = resource.MustParse("4")
	DefaultMemory           = resource.MustParse("8Gi")
	DefaultEphemeralStorage = resource.MustParse("100Gi")
)

// DefaultMaxPIDs is the pid_max a 64-bit systemd host sets.
const DefaultMaxPIDs = 4194304

func (m *Machine) fillDefaults(nodeName string) error {
	if m.CPU.IsZero() {
		m.CPU = DefaultCPU.DeepCopy()
	}
	if m.Memory.IsZero() {
		m.Memory = DefaultMemory.DeepCopy()
	}
	if m.EphemeralStorage.IsZero() {
		m.EphemeralStorage = DefaultEphemeralStorage.DeepCopy()
	}
	if m.MaxPIDs == 0 {
		m.MaxPIDs = DefaultMaxPIDs
	}
	for field, q := range map[string]resource.Quantity{"cpu": m.CPU, "memory": m.Memory, "ephemeralStorage": m.EphemeralStorage} {
		if q.Sign() < 0 {
			return fmt.Errorf("machine.%s must not be negative, got %s", field, q.String())
		}
	}
	if m.MaxPIDs < 0 {
		return fmt.Errorf("machine.maxPIDs must not be negative, got %d", m.MaxPIDs)
	}
	for size, q := range m.Hugepages {
		if _, err := resource.ParseQuantity(size); err != nil {
			return fmt.Errorf("machine.hugepages: page size %q is not a quantity: %w", size, err)
		}
		if q.Sign() < 0 {
			return fmt.Errorf("machine.hugepages[%q] must not be negative, got %s", size, q.String())
		}
	}
	if m.MachineID == "" {
		m.MachineID = hex.EncodeToString(digest("machine-id", nodeName)[:16])
	}
	if m.SystemUUID == "" {
		m.SystemUUID = uuidFrom(digest("system-uuid", nodeName))
	}
	if m.BootID == "" {
		m.BootID = uuidFrom(digest("boot-id", nodeName))
	}
	return nil
}

// Capacity is the machine's resources as the node reports them (cadvisor
// CapacityFromMachineInfo: cpu in DecimalSI, byte sizes in BinarySI), without pods.
func (m *Machine) Capacity() v1.ResourceList {
	out := v1.ResourceList{
		v1.ResourceCPU:              *resource.NewMilliQuantity(m.CPU.MilliValue(), resource.DecimalSI),
		v1.ResourceMemory:           *resource.NewQuantity(m.Memory.Value(), resource.BinarySI),
		v1.ResourceEphemeralStorage: *resource.NewQuantity(m.EphemeralStorage.Value(), resource.BinarySI),
	}
	for size, q := range m.Hugepages {
		out[v1.ResourceName(v1.ResourceHugePagesPrefix+size)] = *resource.NewQuantity(q.Value(), resource.BinarySI)
	}
	return out
}

// Versions are the version strings the node reports.
type Versions struct {
	// KubeletVersion should equal what `minikubelet version` prints.
	KubeletVersion string
	// KubeProxyVersion also reports the kubelet's version as kubeProxyVersion, as upstream
	// does while DisableNodeKubeProxyVersion is off (it is on by default since v1.33).
	KubeProxyVersion bool
	// RuntimeName and RuntimeVersion form containerRuntimeVersion "<name>://<version>".
	RuntimeName    string
	RuntimeVersion string
	OSImage        string
	KernelVersion  string
}

// DefaultKubeletVersion is the version a node reports unless told its release: the newest's.
var DefaultKubeletVersion = release.Newest().KubeletVersion()

// Defaults of Versions.
const (
	DefaultRuntimeName    = "fake"
	DefaultRuntimeVersion = "0.1.0"
	DefaultOSImage        = "minikubelet"
	DefaultKernelVersion  = "6.8.0-minikubelet"
)

func (v *Versions) fillDefaults() {
	if v.KubeletVersion == "" {
		v.KubeletVersion = DefaultKubeletVersion
	}
	if v.RuntimeName == "" {
		v.RuntimeName = DefaultRuntimeName
	}
	if v.RuntimeVersion == "" {
		v.RuntimeVersion = DefaultRuntimeVersion
	}
	if v.OSImage == "" {
		v.OSImage = DefaultOSImage
	}
	if v.KernelVersion == "" {
		v.KernelVersion = DefaultKernelVersion
	}
}

func digest(kind, name string) []byte {
	sum := sha256.Sum256([]byte(kind + "/" + name))
	return sum[:]
}

// uuidFrom formats 16 bytes of b as a version-4-shaped UUID.
func uuidFrom(b []byte) string {
	u := make([]byte, 16)
	copy(u, b)
	u[6] = (u[6] & 0x0f) | 0x40
	u[8] = (u[8] & 0x3f) | 0x80
	h := hex.EncodeToString(u)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}
