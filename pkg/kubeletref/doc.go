// Package kubeletref is the reference kubelet's (v1.30) command line and feature-gate table, as that kubelet builds them.
package kubeletref
