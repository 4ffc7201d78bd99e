package cri

import (
	"math"
	"time"
)

// Seconds is a whole number of seconds (a StopContainer timeout, a grace period) as a
// duration, the longest duration (about 292 years) when it is longer: the API accepts any
// non-negative terminationGracePeriodSeconds, and multiplying a larger one by time.Second
// wraps round to a negative duration, which would kill the container at once.
func Seconds(s int64) time.Duration {
	if s > int64(math.MaxInt64/time.Second) {
		return math.MaxInt64
	}
	if s < int64(math.MinInt64/time.Second) {
		return math.MinInt64
	}
	return time.Duration(s) * time.Second
}

// AddDurations is a+b, saturated at the longest and shortest durations.
func AddDurations(a, b time.Duration) time.Duration {
	switch {
	case b > 0 && a > math.MaxInt64-b:
		return math.MaxInt64
	case b < 0 && a < math.MinInt64-b:
		return math.MinInt64
	}
	return a + b
}
