package programs

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"hash"
	"io"
	"strings"
)

func runMd5sum(c *cmd) int { return c.hashsum(md5.New) }

func runSha1sum(c *cmd) int { return c.hashsum(sha1.New) }

func runSha256sum(c *cmd) int { return c.hashsum(sha256.New) }

func runSha512sum(c *cmd) int { return c.hashsum(sha512.New) }

// hashsum is md5sum and the sha*sums: "HASH  FILE" lines, or with -c the check of them.
func (c *cmd) hashsum(newHash func() hash.Hash) int {
	o, args := c.getopt("cswb", nil)
	if len(args) == 0 {
		args = []string{"-"}
	}
	sum := func(name string) (string, bool) {
		r, err := c.open(name)
		if err != nil {
			c.perror(err, "can't open '%s'", name)
			return "", false
		}
		h := newHash()
		if _, err := io.Copy(h, r); err != nil {
			c.perror(err, "%s", name)
			return "", false
		}
		return hex.EncodeToString(h.Sum(nil)), true
	}
	status := 0
	if !o.Has('c') {
		for _, name := range args {
			c.tick()
			s, ok := sum(name)
			if !ok {
				status = 1
				continue
			}
			c.printf("%s  %s\n", s, name)
		}
		return status
	}
	for _, list := range args {
		r, err := c.open(list)
		if err != nil {
			c.perror(err, "can't open '%s'", list)
			status = 1
			continue
		}
		total, bad, lines := 0, 0, 0
		c.lines(r, func(s string) bool {
			line := strings.TrimSuffix(s, "\n")
			want, file, ok := strings.Cut(line, "  ")
			if !ok {
				want, file, ok = strings.Cut(line, " *")
			}
			if !ok || len(want) != newHash().Size()*2 {
				if o.Has('w') {
					c.errorf("invalid format")
				}
				return true
			}
			lines++
			total++
			got, ok := sum(file)
			if !ok || got != strings.ToLower(want) {
				bad++
				if !o.Has('s') {
					c.printf("%s: FAILED\n", file)
				}
			} else if !o.Has('s') {
				c.printf("%s: OK\n", file)
			}
			return true
		})
		if bad > 0 {
			status = 1
			if !o.Has('s') {
				c.errorf("WARNING: %d of %d computed checksums did NOT match", bad, total)
			}
		}
		if lines == 0 {
			c.errorf("%s: no checksum lines found", list)
			status = 1
		}
	}
	return status
}
