package programs

import (
	"math"
	"strconv"
)

// suffixMult is one of busybox's number suffixes ("k": 1024), as its suffix_mult tables.
type suffixMult struct {
	sfx  string
	mult uint64
}

var (
	// bkmSuffixes are busybox's bkm_suffixes.
	bkmSuffixes = []suffixMult{{"b", 512}, {"k", 1024}, {"m", 1 << 20}}
	// kMGSuffixes are busybox's kMG_suffixes (truncate's).
	kMGSuffixes = []suffixMult{{"k", 1024}, {"K", 1024}, {"M", 1 << 20}, {"G", 1 << 30}}
)

// xstrtou is busybox's xstrtou_range_sfx for an unsigned type of bits (32 or 64) in base
// 10: digits only (no sign, no leading blank), then one of sfx's suffixes or nothing; a
// number too big for the type, or anything else, dies with "invalid number 'S'"; one
// outside lo..hi (or overflowing by its suffix) with "number S is not in LO..HI range".
func (c *cmd) xstrtou(s string, bits int, lo, hi uint64, sfx []suffixMult) uint64 {
	typeMax := uint64(math.MaxUint64)
	if bits == 32 {
		typeMax = math.MaxUint32
	}
	end := 0
	for end < len(s) && s[end] >= '0' && s[end] <= '9' {
		end++
	}
	if end == 0 {
		c.die("invalid number '%s'", s)
	}
	r, err := strconv.ParseUint(s[:end], 10, 64)
	if err != nil || r > typeMax {
		c.die("invalid number '%s'", s)
	}
	if rest := s[end:]; rest != "" {
		found := false
		for _, x := range sfx {
			if x.sfx == rest {
				if typeMax/x.mult < r {
					c.die("number %s is not in %d..%d range", s, lo, hi)
				}
				r *= x.mult
				found = true
				break
			}
		}
		if !found {
			c.die("invalid number '%s'", s)
		}
	}
	if r < lo || r > hi {
		c.die("number %s is not in %d..%d range", s, lo, hi)
	}
	return r
}

// xatou is busybox's xatou: an unsigned int.
func (c *cmd) xatou(s string) uint64 { return c.xstrtou(s, 32, 0, math.MaxUint32, nil) }

// xatoiPositive is busybox's xatoi_positive: an int from 0 up.
func (c *cmd) xatoiPositive(s string) int { return int(c.xstrtou(s, 32, 0, math.MaxInt32, nil)) }

// xatoull is busybox's xatoull_sfx (sfx nil: xatoull).
func (c *cmd) xatoull(s string, sfx []suffixMult) uint64 {
	return c.xstrtou(s, 64, 0, math.MaxUint64, sfx)
}

// xatooff is busybox's XATOOFF: an off_t from 0 up (xatoull_range 0..LLONG_MAX).
func (c *cmd) xatooff(s string) int64 { return int64(c.xstrtou(s, 64, 0, math.MaxInt64, nil)) }
