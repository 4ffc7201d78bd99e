package config

import (
	"github.com/minikubelet/minikubelet/pkg/featuregate"
	"github.com/minikubelet/minikubelet/pkg/features"
)

// Config is the daemon's effective configuration: defaults, overlaid by the config file,
// overlaid by flags, validated. It serialises to JSON for /configz.
type Config struct {
	// Kubelet is the effective KubeletConfiguration.
	Kubelet KubeletConfiguration `json:"kubeletConfiguration"`
	// Simulator is the effective SimulatorConfiguration; NodeName is always set.
	Simulator SimulatorConfiguration `json:"simulatorConfiguration"`
	// FeatureGates is the final merged map applied to the gate: the file's featureGates
	// with the --feature-gates keys on top. Gates not in it have their default.
	FeatureGates map[string]bool `json:"featureGates"`
	// ConfigFile is the absolute path of --config, or empty.
	ConfigFile string `json:"configFile,omitempty"`
	// Kubeconfig is --kubeconfig: the cluster to join as a node (cluster mode); empty:
	// standalone.
	Kubeconfig string `json:"kubeconfig,omitempty"`
	// CertDir is --cert-dir: where the self-signed serving certificate is kept; empty:
	// generated in memory at every start.
	CertDir string `json:"certDir,omitempty"`
	// BootstrapKubeconfig is --bootstrap-kubeconfig: the kubeconfig (a bootstrap token) to
	// request the node's client certificate with when Kubeconfig has no valid one; the
	// certificate and key are kept in CertDir, and Kubeconfig is written to use them. With
	// --node-count, node i's kubeconfig is <CertDir>/<its name>/kubeconfig.
	BootstrapKubeconfig string `json:"bootstrapKubeconfig,omitempty"`
	// NodeIP is --node-ip: the Node's InternalIP; empty: derived from the address.
	NodeIP string `json:"nodeIP,omitempty"`
	// NodeCount is --node-count: how many simulated nodes the process runs (ForNode).
	NodeCount int `json:"nodeCount,omitempty"`
	// NodeLabels is --node-labels: labels the node is registered with.
	NodeLabels map[string]string `json:"nodeLabels,omitempty"`
	// Record is --record: the flight recorder's file; empty: no recording.
	Record string `json:"record,omitempty"`
	// RecordMaxBytes is --record-max-bytes: where the recording ends.
	RecordMaxBytes int64 `json:"recordMaxBytes,omitempty"`
	// Args are the command line Load parsed, for the flight recorder.
	Args []string `json:"-"`
	// UnsimulatedFields lists the KubeletConfiguration fields the config file sets that the
	// simulator accepts but does not model. The daemon logs them once at start.
	UnsimulatedFields []string `json:"unsimulatedFields,omitempty"`
	// UnsimulatedFlags lists (sorted, as --name) the kubelet flags given that the simulator
	// accepts, checks and does not model.
	UnsimulatedFlags []string `json:"unsimulatedFlags,omitempty"`
	// UnsimulatedGates lists (sorted, as Name=bool) the v1.37 feature gates set, by the
	// file or --feature-gates, that the simulator accepts and does not model.
	UnsimulatedGates []string `json:"unsimulatedGates,omitempty"`
}

// GracefulShutdownEnabled reports whether SIGTERM should terminate pods before exiting:
// the GracefulNodeShutdown gate is on and shutdownGracePeriod is positive. As upstream, a
// zero shutdownGracePeriod (the default) disables graceful node shutdown even with the
// gate on; the daemon then exits without stopping pods.
func (c *Config) GracefulShutdownEnabled(gate featuregate.FeatureGate) bool {
	return gate.Enabled(features.GracefulNodeShutdown) && c.Kubelet.ShutdownGracePeriod.Duration > 0
}
