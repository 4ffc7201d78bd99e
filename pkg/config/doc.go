// Package config loads the daemon's configuration the way the kubelet does: built-in defaults, then a KubeletConfiguration (and SimulatorConfiguration) file, then command-line flags, strictly decoded and fully validated.
package config
