// Package featuregate registers named feature gates and answers whether each is enabled, with the semantics of k8s.io/component-base/featuregate v0.30.
package featuregate
