package programs

import (
	"bytes"
	"compress/gzip"
	"strings"
	"testing"
	"time"

	"github.com/minikubelet/minikubelet/pkg/vfs"
)

// gz is s packed by Go's gzip, as another gzip would have packed it.
func gz(s string) string {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write([]byte(s))
	w.Close()
	return b.String()
}

// gzip, gunzip and zcat print what busybox 1.35's do (test/difftest's archive-applets.txtar).
func TestGzip(t *testing.T) {
	hello := gz("hello\n")
	badCRC := []byte(hello)
	badCRC[len(badCRC)-8] ^= 1
	runCases(t, []tc{
		{name: "pack and unpack", argv: []string{"sh", "-c", "gzip /a && ls / | grep a; gunzip /a.gz && cat /a"},
			files: map[string]string{"/a": "hello\n"}, setup: withSh, stdout: "a.gz\nhello\n"},
		{name: "keep", argv: []string{"gzip", "-k", "/a"}, files: map[string]string{"/a": "hello\n"},
			check: checks(fileIs("/a", "hello\n"))},
		{name: "stdout", argv: []string{"gunzip", "-c", "/a.gz"}, files: map[string]string{"/a.gz": hello}, stdout: "hello\n"},
		{name: "zcat concatenated", argv: []string{"zcat", "/a.gz"}, files: map[string]string{"/a.gz": hello + hello + "junk"}, stdout: "hello\nhello\n"},
		{name: "exists", argv: []string{"gzip", "/a"}, files: map[string]string{"/a": "x", "/a.gz": "y"},
			stderr: "gzip: can't open '/a.gz': File exists\n", status: 1},
		{name: "unknown suffix", argv: []string{"gunzip", "/a"}, files: map[string]string{"/a": "x"},
			stderr: "gunzip: /a: unknown suffix - ignored\n", status: 1},
		{name: "tgz", argv: []string{"gunzip", "/a.tgz"}, files: map[string]string{"/a.tgz": hello},
			check: checks(fileIs("/a.tar", "hello\n"), missing("/a.tgz"))},
		{name: "not gzip", argv: []string{"gunzip", "/a.gz"}, files: map[string]string{"/a.gz": "plain\n"},
			stderr: "gunzip: invalid magic\n", status: 1, check: missing("/a")},
		{name: "crc error", argv: []string{"gunzip", "/a.gz"}, files: map[string]string{"/a.gz": string(badCRC)},
			stderr: "gunzip: crc error\n", status: 1, check: checks(missing("/a"), fileIs("/a.gz", string(badCRC)))},
		{name: "truncated", argv: []string{"gunzip", "-c", "/a.gz"}, files: map[string]string{"/a.gz": hello[:12]},
			stderr: "gunzip: unexpected end of file\n", status: 1},
		{name: "zcat not gzip", argv: []string{"zcat", "/a"}, files: map[string]string{"/a": "plain\n"},
			stderr: "zcat: no gzip/bzip2/xz magic\n", status: 1},
		{name: "zcat errors keep status 0", argv: []string{"zcat", "/a.gz"}, files: map[string]string{"/a.gz": string(badCRC)},
			stdout: "hello\n", stderr: "zcat: crc error\n"},
		{name: "verbose", argv: []string{"gzip", "-v", "/a"}, files: map[string]string{"/a": "hello\n"},
			stderr: "/a: 100% - replaced with /a.gz\n"},
		{name: "-d parses as gunzip", argv: []string{"gzip", "-d", "--decompress"},
			stderr: "gzip: unrecognized option '--decompress'\n" + usage("gzip"), status: 1},
		{name: "missing", argv: []string{"gzip", "/nosuch"}, stderr: "gzip: /nosuch: No such file or directory\n", status: 1},
		{name: "big stream", argv: []string{"sh", "-c", "seq 1 100000 | gzip | zcat | tail -n 1"}, setup: withSh, stdout: "100000\n", elapsed: time.Second},
		{name: "bomb goes to the file", argv: []string{"gunzip", "/z.gz"}, files: map[string]string{"/z.gz": gz(strings.Repeat("\x00", 8<<20))},
			check: func(t *testing.T, v *vfs.View) {
				info, err := v.Stat("/z")
				if err != nil || info.Size != 8<<20 {
					t.Errorf("/z: %v %v", info.Size, err)
				}
			}},
	})
}

// crc32, cksum and base32 print what busybox's do: crc32 compared by test/difftest, cksum
// with GNU's cksum (the same POSIX CRC), base32 with GNU's base32 (Debian's busybox has
// neither).
func TestCksumBase32(t *testing.T) {
	runCases(t, []tc{
		{name: "crc32", argv: []string{"crc32", "/a"}, files: map[string]string{"/a": "hello\n"}, stdout: "363a3020 /a\n"},
		{name: "crc32 stdin", argv: []string{"crc32"}, stdin: "hi\n", stdout: "ed6f7a7a\n"},
		{name: "cksum", argv: []string{"cksum", "/a", "/e"}, files: map[string]string{"/a": "hello\n", "/e": ""},
			stdout: "3015617425 6 /a\n4294967295 0 /e\n"},
		{name: "cksum stdin", argv: []string{"cksum"}, stdin: "hello world", stdout: "1135714720 11\n"},
		{name: "cksum missing", argv: []string{"cksum", "/nosuch"}, stderr: "cksum: can't open '/nosuch': No such file or directory\n", status: 1},
		{name: "cksum directory", argv: []string{"cksum", "/tmp"}, stderr: "cksum: /tmp: Is a directory\n", status: 1},
		{name: "base32", argv: []string{"base32"}, stdin: "hello world", stdout: "NBSWY3DPEB3W64TMMQ======\n"},
		{name: "base32 wrap", argv: []string{"base32", "-w", "8"}, stdin: "abcdefghij", stdout: "MFRGGZDF\nMZTWQ2LK\n"},
		{name: "base32 one line", argv: []string{"base32", "-w0"}, stdin: "abcdefghij", stdout: "MFRGGZDFMZTWQ2LK"},
		{name: "base32 decode", argv: []string{"base32", "-d"}, stdin: "NBSWY3DPEB3W64TMMQ======\n", stdout: "hello world"},
		{name: "base32 decode lower case", argv: []string{"base32", "-d"}, stdin: "nbswy3dp", stdout: "hello"},
		{name: "base32 truncated", argv: []string{"base32", "-d"}, stdin: "NBSWY", stderr: "base32: truncated input\n", status: 1},
	})
}
