// Package nodestatus computes the node object (addresses, capacity, versions, images, pressure and Ready conditions) with the kubelet's chain of setters, reports it on the kubelet's cadence and renews the node Lease.
package nodestatus
