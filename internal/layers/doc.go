// Package layers holds the test that keeps docs/architecture.md's table of layers in step with the packages' imports.
package layers
