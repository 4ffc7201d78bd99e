package programs

import (
	"bytes"
	"encoding/base64"
	"io"
)

func runBase64(c *cmd) int {
	decode, col, r := c.baseNUMArgs()
	data, err := io.ReadAll(c.p.Holding(r))
	if err != nil {
		c.perror(err, "read error")
		c.exit(1)
	}
	if decode {
		clean := bytes.Map(func(r rune) rune {
			if r <= ' ' {
				return -1
			}
			return r
		}, data)
		out := make([]byte, base64.StdEncoding.DecodedLen(len(clean)))
		n, err := base64.StdEncoding.Decode(out, clean)
		c.out.Write(out[:n])
		if err != nil {
			c.die("truncated input")
		}
		return 0
	}
	enc := base64.StdEncoding.EncodeToString(data)
	if col == 0 {
		c.write(enc)
		return 0
	}
	for len(enc) > 0 {
		n := min(col, len(enc))
		c.write(enc[:n] + "\n")
		enc = enc[n:]
	}
	return 0
}
