package programs

import (
	"hash/crc32"
	"io"
)

// cksum and crc32 FILE...: busybox's coreutils/cksum.c. cksum prints POSIX's CRC (the
// polynomial 0x04C11DB7 taken high bit first over the data and then its length, least
// significant byte first, inverted) and the byte count; crc32 the zlib CRC-32 in hex.
// With no FILE they read stdin and print no name; a file that cannot be opened is
// skipped (status 1), one that cannot be read is fatal.
func runCksum(c *cmd) int {
	_, args := c.getopt("", nil)
	isCksum := c.name == "cksum"
	status := 0
	names := args
	if len(names) == 0 {
		names = []string{"-"}
	}
	buf := make([]byte, 32<<10)
	for _, name := range names {
		var r io.Reader
		if name == "-" {
			r = c.stdin()
		} else {
			f, err := c.open(name)
			if err != nil {
				c.perror(err, "can't open '%s'", name)
				status = 1
				continue
			}
			r = f
		}
		var crc uint32
		var size uint64
		if !isCksum {
			crc = 0xffffffff
		}
		for {
			c.tick()
			n, err := r.Read(buf)
			if n > 0 {
				size += uint64(n)
				if isCksum {
					crc = cksumUpdate(crc, buf[:n])
				} else {
					crc = ^crc32.Update(^crc, crc32.IEEETable, buf[:n])
				}
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				c.perror(err, "%s", name)
				c.exit(1)
			}
		}
		if isCksum {
			var length []byte
			for t := size; t != 0; t >>= 8 {
				length = append(length, byte(t))
			}
			crc = cksumUpdate(crc, length)
		}
		crc = ^crc
		switch {
		case isCksum && len(args) > 0:
			c.printf("%d %d %s\n", crc, size, name)
		case isCksum:
			c.printf("%d %d\n", crc, size)
		case len(args) > 0:
			c.printf("%08x %s\n", crc, name)
		default:
			c.printf("%08x\n", crc)
		}
	}
	return status
}

// cksumTable is POSIX cksum's CRC table: polynomial 0x04C11DB7, high bit first.
var cksumTable = func() (t [256]uint32) {
	for i := range t {
		c := uint32(i) << 24
		for j := 0; j < 8; j++ {
			if c&0x80000000 != 0 {
				c = c<<1 ^ 0x04C11DB7
			} else {
				c <<= 1
			}
		}
		t[i] = c
	}
	return t
}()

func cksumUpdate(crc uint32, b []byte) uint32 {
	for _, x := range b {
		crc = crc<<8 ^ cksumTable[byte(crc>>24)^x]
	}
	return crc
}
