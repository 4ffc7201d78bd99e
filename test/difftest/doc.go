// Package difftest runs a corpus of sh -c scripts under Debian's busybox and under minikubelet's shell and applets in a busybox:1.36 container, and compares their stdout, stderr and exit code byte for byte.
package difftest
