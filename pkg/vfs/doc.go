// Package vfs is the in-memory filesystem of a simulated node and the mount namespaces its containers see.
package vfs
