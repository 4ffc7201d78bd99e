// Package behavior parses the minikubelet.io/behavior.<container> pod annotation that scripts how a fake runtime's container behaves.
package behavior
