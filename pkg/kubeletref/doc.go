// Package kubeletref is each supported kubelet release's (v1.34 to v1.37) command line and feature-gate table, with each gate's specs by version, as that kubelet builds them.
package kubeletref
