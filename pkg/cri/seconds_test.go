package cri

import (
	"math"
	"testing"
	"time"
)

func TestSeconds(t *testing.T) {
	for _, tt := range []struct {
		s    int64
		want time.Duration
	}{
		{0, 0},
		{30, 30 * time.Second},
		{-5, -5 * time.Second},
		{9223372036, 9223372036 * time.Second}, // the longest that fits
		{9223372037, math.MaxInt64},            // 30 years more would wrap round to negative
		{math.MaxInt64, math.MaxInt64},
		{math.MinInt64, math.MinInt64},
	} {
		if got := Seconds(tt.s); got != tt.want {
			t.Errorf("Seconds(%d) = %v, want %v", tt.s, got, tt.want)
		}
	}
}

func TestAddDurations(t *testing.T) {
	for _, tt := range []struct {
		a, b, want time.Duration
	}{
		{2 * time.Minute, 30 * time.Second, 150 * time.Second},
		{2 * time.Minute, math.MaxInt64, math.MaxInt64},
		{math.MaxInt64, 1, math.MaxInt64},
		{math.MinInt64, -1, math.MinInt64},
		{math.MaxInt64, math.MinInt64, -1},
	} {
		if got := AddDurations(tt.a, tt.b); got != tt.want {
			t.Errorf("AddDurations(%v, %v) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}
