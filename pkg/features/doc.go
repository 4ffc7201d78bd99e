// Package features names the simulator's feature gates and registers every kubelet v1.37 gate, with its specs by version, in the process-wide default gate.
package features
