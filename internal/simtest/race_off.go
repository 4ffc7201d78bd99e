//go:build !race

package simtest

// Race reports whether the race detector is on: long soak and churn tests scale down
// under it (it slows them about tenfold) and run in full without it.
const Race = false
