package config

import (
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minikubelet/minikubelet/pkg/features"
	"github.com/minikubelet/minikubelet/pkg/runtime/fault"
)

// validConfig is what Load gives without a file or flags: the defaults, the gated ones of
// the default gates included.
func validConfig() *Config {
	sc := NewSimulatorConfiguration()
	sc.NodeName = "node-1"
	kc := NewKubeletConfiguration()
	setGatedDefaults(kc, features.NewFeatureGate())
	return &Config{Kubelet: *kc, Simulator: *sc, FeatureGates: map[string]bool{}}
}

func d(s string) metav1.Duration {
	v, err := time.ParseDuration(s)
	if err != nil {
		panic(err)
	}
	return metav1.Duration{Duration: v}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(c *Config)
		want   string // "" means valid; else a substring of the error
	}{
		{"defaults are valid", func(c *Config) {}, ""},
		{"syncFrequency", func(c *Config) { c.Kubelet.SyncFrequency = d("-1s") }, `kubeletConfiguration.syncFrequency: invalid value "-1s": must be greater than 0`},
		{"fileCheckFrequency", func(c *Config) { c.Kubelet.FileCheckFrequency = d("0s") }, `kubeletConfiguration.fileCheckFrequency: invalid value "0s"`},
		{"nodeStatusUpdateFrequency", func(c *Config) { c.Kubelet.NodeStatusUpdateFrequency = d("0s") }, "kubeletConfiguration.nodeStatusUpdateFrequency"},
		{"nodeStatusReportFrequency", func(c *Config) { c.Kubelet.NodeStatusReportFrequency = d("-1m") }, "kubeletConfiguration.nodeStatusReportFrequency"},
		{"runtimeRequestTimeout", func(c *Config) { c.Kubelet.RuntimeRequestTimeout = d("0s") }, "kubeletConfiguration.runtimeRequestTimeout"},
		{"nodeLeaseDurationSeconds", func(c *Config) { c.Kubelet.NodeLeaseDurationSeconds = 0 }, "kubeletConfiguration.nodeLeaseDurationSeconds: invalid value 0"},
		{"maxPods negative", func(c *Config) { c.Kubelet.MaxPods = -3 }, "kubeletConfiguration.maxPods: invalid value -3"},
		{"maxPods zero admits nothing but is valid", func(c *Config) { c.Kubelet.MaxPods = 0 }, ""},
		{"address", func(c *Config) { c.Kubelet.Address = "my-host" }, `kubeletConfiguration.address: invalid value "my-host"`},
		{"readOnlyPort", func(c *Config) { c.Kubelet.ReadOnlyPort = 70000 }, "kubeletConfiguration.readOnlyPort: invalid value 70000"},
		{"readOnlyPort zero disables", func(c *Config) { c.Kubelet.ReadOnlyPort = 0 }, ""},
		{"shutdown critical over total", func(c *Config) {
			c.Kubelet.ShutdownGracePeriod, c.Kubelet.ShutdownGracePeriodCriticalPods = d("10s"), d("20s")
		}, "kubeletConfiguration.shutdownGracePeriodCriticalPods: invalid value \"20s\": must be <= shutdownGracePeriod 10s"},
		{"shutdown below a second", func(c *Config) { c.Kubelet.ShutdownGracePeriod = d("500ms") }, "must be either zero or otherwise >= 1 sec"},
		{"shutdown without the gate", func(c *Config) {
			c.Kubelet.ShutdownGracePeriod = d("30s")
			c.FeatureGates["GracefulNodeShutdown"] = false
		}, "requires feature gate GracefulNodeShutdown"},
		{"shutdown with the gate", func(c *Config) {
			c.Kubelet.ShutdownGracePeriod, c.Kubelet.ShutdownGracePeriodCriticalPods = d("30s"), d("10s")
		}, ""},
		{"eviction signal", func(c *Config) { c.Kubelet.EvictionHard = map[string]string{"memory.free": "1Gi"} }, "kubeletConfiguration.evictionHard[memory.free]: invalid value \"1Gi\": unsupported eviction signal memory.free"},
		{"eviction percentage", func(c *Config) { c.Kubelet.EvictionHard = map[string]string{"nodefs.available": "120%"} }, "kubeletConfiguration.evictionHard[nodefs.available]: invalid value \"120%\""},
		{"eviction quantity", func(c *Config) { c.Kubelet.EvictionHard = map[string]string{"memory.available": "-1Mi"} }, "must be positive"},
		{"eviction garbage", func(c *Config) { c.Kubelet.EvictionHard = map[string]string{"memory.available": "lots"} }, "not a quantity or percentage"},
		{"eviction pid signal", func(c *Config) { c.Kubelet.EvictionHard = map[string]string{"pid.available": "10%"} }, ""},
		{"systemReserved resource", func(c *Config) { c.Kubelet.SystemReserved = map[string]string{"gpu": "1"} }, `kubeletConfiguration.systemReserved[gpu]: invalid value "1": cannot reserve "gpu" resource`},
		{"kubeReserved quantity", func(c *Config) { c.Kubelet.KubeReserved = map[string]string{"memory": "-1Gi"} }, `kubeletConfiguration.kubeReserved[memory]: invalid value "-1Gi"`},
		{"nodeName", func(c *Config) { c.Simulator.NodeName = "Node_1" }, `simulatorConfiguration.nodeName: invalid value "Node_1"`},
		{"machine cpu", func(c *Config) { c.Simulator.Machine.CPU = resource.MustParse("0") }, `simulatorConfiguration.machine.cpu: invalid value "0"`},
		{"program cpu", func(c *Config) { c.Simulator.Runtime.ProgramCPU = resource.MustParse("0") }, `simulatorConfiguration.runtime.programCPU: invalid value "0": must be greater than 0`},
		{"machine memory", func(c *Config) { c.Simulator.Machine.Memory = resource.MustParse("-1Gi") }, "simulatorConfiguration.machine.memory"},
		{"machine ephemeralStorage", func(c *Config) { c.Simulator.Machine.EphemeralStorage = resource.Quantity{} }, "simulatorConfiguration.machine.ephemeralStorage"},
		// Quantities the simulator's int64 arithmetic would wrap round (found by FuzzConfig).
		{"machine memory over int64", func(c *Config) { c.Simulator.Machine.Memory = resource.MustParse("9223372036854775808") }, `simulatorConfiguration.machine.memory: invalid value "9223372036854775808": must be at most 1Ei`},
		{"machine cpu over int64 millicores", func(c *Config) { c.Simulator.Machine.CPU = resource.MustParse("9223372036854775807") }, `simulatorConfiguration.machine.cpu: invalid value "9223372036854775807": must be at most 1P`},
		{"machine storage 1e400", func(c *Config) { c.Simulator.Machine.EphemeralStorage = resource.MustParse("1e400") }, `simulatorConfiguration.machine.ephemeralStorage: invalid value "10e399": must be at most 1Ei`},
		{"machine pids fractional", func(c *Config) { c.Simulator.Machine.PIDs = resource.MustParse("100m") }, "simulatorConfiguration.machine.pids: invalid value \"100m\": must be a whole number"},
		{"pleg relistPeriod", func(c *Config) { c.Simulator.PLEG.RelistPeriod = d("0s") }, "simulatorConfiguration.pleg.relistPeriod"},
		{"pleg relistThreshold", func(c *Config) { c.Simulator.PLEG.RelistThreshold = d("-1s") }, "simulatorConfiguration.pleg.relistThreshold"},
		{"pleg channelCapacity", func(c *Config) { c.Simulator.PLEG.ChannelCapacity = 0 }, "simulatorConfiguration.pleg.channelCapacity"},
		{"evented relistPeriod", func(c *Config) { c.Simulator.EventedPLEG.RelistPeriod = d("0s") }, "simulatorConfiguration.eventedPLEG.relistPeriod"},
		{"evented relistThreshold", func(c *Config) { c.Simulator.EventedPLEG.RelistThreshold = d("0s") }, "simulatorConfiguration.eventedPLEG.relistThreshold"},
		{"evented maxRetries", func(c *Config) { c.Simulator.EventedPLEG.MaxRetries = -1 }, "simulatorConfiguration.eventedPLEG.maxRetries"},
		{"evented maxRetries zero is not the default", func(c *Config) { c.Simulator.EventedPLEG.MaxRetries = 0 }, "simulatorConfiguration.eventedPLEG.maxRetries: invalid value 0: must be at least 1"},
		{"evented maxRetries one", func(c *Config) { c.Simulator.EventedPLEG.MaxRetries = 1 }, ""},
		{"evented globalCacheUpdatePeriod", func(c *Config) { c.Simulator.EventedPLEG.GlobalCacheUpdatePeriod = d("0s") }, "simulatorConfiguration.eventedPLEG.globalCacheUpdatePeriod"},
		{"initContainerDuration", func(c *Config) { c.Simulator.Runtime.InitContainerDuration = d("-1s") }, "simulatorConfiguration.runtime.initContainerDuration"},
		{"initContainerDuration zero is not the default", func(c *Config) { c.Simulator.Runtime.InitContainerDuration = d("0s") }, `simulatorConfiguration.runtime.initContainerDuration: invalid value "0s": must be greater than 0`},
		{"initContainerDuration short", func(c *Config) { c.Simulator.Runtime.InitContainerDuration = d("1ms") }, ""},
		{"statusPollPeriod", func(c *Config) { c.Simulator.Runtime.StatusPollPeriod = d("0s") }, "simulatorConfiguration.runtime.statusPollPeriod"},
		{"fault names its index", func(c *Config) {
			c.Simulator.Runtime.Faults = []fault.Spec{{Method: "Status", Type: fault.Error}, {Method: "Nope", Type: fault.Error}}
		}, `simulatorConfiguration.runtime.faults[1]: fault field "method": unknown runtime method "Nope"`},
		{"valid faults", func(c *Config) {
			c.Simulator.Runtime.Faults = []fault.Spec{{Method: "Status", Type: fault.NotReady, Condition: "NetworkReady"}}
		}, ""},
		{"defaultBehavior", func(c *Config) { c.Simulator.Runtime.DefaultBehavior = "runFor=soon" }, `simulatorConfiguration.runtime.defaultBehavior: invalid value "runFor=soon"`},
		{"runtime handler not a DNS label", func(c *Config) { c.Simulator.Runtime.Handlers = []string{"runc", "Kata_Fc"} }, `simulatorConfiguration.runtime.handlers[1]: invalid value "Kata_Fc": a lowercase RFC 1123 label`},
		{"runtime handler empty", func(c *Config) { c.Simulator.Runtime.Handlers = []string{""} }, `simulatorConfiguration.runtime.handlers[0]: invalid value "": `},
		{"runtime handler twice", func(c *Config) { c.Simulator.Runtime.Handlers = []string{"kata", "kata"} }, `simulatorConfiguration.runtime.handlers[1]: invalid value "kata": duplicate handler`},
		{"valid defaultBehavior", func(c *Config) { c.Simulator.Runtime.DefaultBehavior = "runFor=30s,exitCode=1" }, ""},
		{"metricsPrefix", func(c *Config) { c.Simulator.MetricsPrefix = "my-prefix" }, `simulatorConfiguration.metricsPrefix: invalid value "my-prefix"`},
		{"unknown gate", func(c *Config) { c.FeatureGates["Nope"] = true }, "kubeletConfiguration.featureGates: unrecognized feature gate: Nope"},
		{"containerLogMaxSize", func(c *Config) { c.Kubelet.ContainerLogMaxSize = "lots" }, `kubeletConfiguration.containerLogMaxSize: invalid value "lots": must be a positive quantity`},
		{"containerLogMaxFiles", func(c *Config) { one := int32(1); c.Kubelet.ContainerLogMaxFiles = &one }, `kubeletConfiguration.containerLogMaxFiles: invalid value 1: must be greater than 1`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := validConfig()
			tt.mutate(c)
			err := Validate(c, features.NewFeatureGate())
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Validate: %v, want no error", err)
			case tt.want != "" && err == nil:
				t.Errorf("Validate succeeded, want an error containing %q", tt.want)
			case tt.want != "" && !strings.Contains(err.Error(), tt.want):
				t.Errorf("error lacks %q:\n%v", tt.want, err)
			}
		})
	}
}

func TestValidateCollectsEveryError(t *testing.T) {
	c := validConfig()
	c.Kubelet.MaxPods = -1
	c.Kubelet.Address = "x"
	c.Simulator.PLEG.ChannelCapacity = -1
	err := Validate(c, features.NewFeatureGate())
	var agg *AggregateError
	if !errors.As(err, &agg) || len(agg.Errs) != 3 {
		t.Fatalf("Validate = %v, want an AggregateError with 3 errors", err)
	}
	if !strings.HasPrefix(err.Error(), "invalid configuration (3 errors):") {
		t.Errorf("error text = %q", err.Error())
	}
}

func TestValidateDoesNotChangeTheGate(t *testing.T) {
	gate := features.NewFeatureGate()
	c := validConfig()
	c.FeatureGates["EventedPLEG"] = true
	if err := Validate(c, gate); err != nil {
		t.Fatal(err)
	}
	if gate.Enabled(features.EventedPLEG) {
		t.Error("Validate changed the gate it was given")
	}
}

func TestGracefulShutdownEnabled(t *testing.T) {
	tests := []struct {
		name  string
		grace string
		gate  bool
		want  bool
	}{
		{"gate on, period set", "30s", true, true},
		{"gate on, period zero (default)", "0s", true, false},
		{"gate off", "30s", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gate := features.NewFeatureGate()
			if err := gate.SetFromMap(map[string]bool{"GracefulNodeShutdown": tt.gate}); err != nil {
				t.Fatal(err)
			}
			c := validConfig()
			c.Kubelet.ShutdownGracePeriod = d(tt.grace)
			if got := c.GracefulShutdownEnabled(gate); got != tt.want {
				t.Errorf("GracefulShutdownEnabled = %t, want %t", got, tt.want)
			}
		})
	}
}
