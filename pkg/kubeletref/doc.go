// Package kubeletref is the reference kubelet's (v1.37) command line and feature-gate table, with each gate's specs by version, as that kubelet builds them.
package kubeletref
