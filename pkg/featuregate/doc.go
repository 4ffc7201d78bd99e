// Package featuregate registers named, versioned feature gates and answers whether each is enabled at the gate's emulation version, with the semantics of k8s.io/component-base/featuregate v0.37.
package featuregate
