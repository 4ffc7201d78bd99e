// Package childproc ties the processes a test starts to the test binary, so none outlives it.
package childproc
