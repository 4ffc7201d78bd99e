// Package intern keeps one shared, read-only copy of values that many pods hold alike.
package intern
