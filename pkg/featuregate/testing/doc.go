// Package testing provides helpers that set a feature gate for the duration of one test and restore it afterwards.
package testing
