// Package features names the simulator's feature gates and registers them in the process-wide default gate.
package features
