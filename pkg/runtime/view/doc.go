// Package view builds the kubelet's pod-level views (GetPods, GetPodStatus) from CRI calls, so faults on those calls reach the PLEG as with a real runtime.
package view
