package programs

import (
	"archive/tar"
	"bytes"
	"encoding/base64"
	"strings"
	"testing"
	"time"
)

// tarOf is an archive of the given entries, as another tar would have written it.
func tarOf(entries ...tar.Header) string {
	var b bytes.Buffer
	w := tar.NewWriter(&b)
	for _, h := range entries {
		h := h
		body := h.Linkname
		if h.Typeflag == tar.TypeReg {
			h.Linkname = ""
			h.Size = int64(len(body))
		}
		w.WriteHeader(&h)
		if h.Typeflag == tar.TypeReg {
			w.Write([]byte(body))
		}
	}
	w.Close()
	return b.String()
}

// tar lists and extracts as busybox 1.35's does (test/difftest's archive-applets.txtar).
func TestTar(t *testing.T) {
	when := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	archive := tarOf(
		tar.Header{Name: "d/", Typeflag: tar.TypeDir, Mode: 0o755, Uname: "root", Gname: "root", ModTime: when},
		tar.Header{Name: "d/f", Typeflag: tar.TypeReg, Mode: 0o640, Uid: 33, Gid: 33, Uname: "www-data", Gname: "www-data", ModTime: when, Linkname: "hello\n"},
		tar.Header{Name: "d/l", Typeflag: tar.TypeSymlink, Mode: 0o777, Linkname: "f", ModTime: when},
		tar.Header{Name: strings.Repeat("x", 120), Typeflag: tar.TypeReg, Mode: 0o644, ModTime: when, Linkname: "long\n", Format: tar.FormatPAX},
	)
	// busybox's "tar cjf x.tbz f" of f holding "hi\n".
	tbz, _ := base64.StdEncoding.DecodeString("QlpoOTFBWSZTWcfXSisAADJ7hMkQAEBAAG+AAADhYJ4AAACACCAAVEQaNAAA0GRNE9QaMQ0ZerrL" +
		"BESiEgdTcTDxPCEqfFhdVYA2gBKrWaMbNVhpKSJLIVhZJ8oHQ6zhiBmxCPi7kinChIY+ulFY")
	files := map[string]string{"/a.tar": archive, "/src/f": "data\n", "/src/sub/g": "g\n"}
	runCases(t, []tc{
		{name: "list", argv: []string{"tar", "tf", "/a.tar"}, files: files,
			stdout: "d/\nd/f\nd/l\n" + strings.Repeat("x", 120) + "\n"},
		{name: "list verbose", argv: []string{"tar", "-tvf", "/a.tar", "d"}, files: files,
			stdout: "drwxr-xr-x root/root         0 2020-01-02 03:04:05 d/\n" +
				"-rw-r----- www-data/www-data         6 2020-01-02 03:04:05 d/f\n" +
				"lrwxrwxrwx 0/0         0 2020-01-02 03:04:05 d/l -> f\n"},
		{name: "extract", argv: []string{"tar", "xf", "/a.tar", "-C", "/out"}, files: map[string]string{"/a.tar": archive, "/out/": ""},
			check: checks(fileIs("/out/d/f", "hello\n"), fileIs("/out/"+strings.Repeat("x", 120), "long\n"))},
		{name: "extract to stdout", argv: []string{"tar", "xOf", "/a.tar", "d/f"}, files: files, stdout: "hello\n"},
		{name: "to-command", argv: []string{"sh", "-c", `tar xf /a.tar -C /out --to-command='echo "$TAR_FILENAME $TAR_MODE $TAR_SIZE $TAR_UNAME:$TAR_GNAME"; cat' d; ls /out`},
			files: map[string]string{"/a.tar": archive, "/out/": ""}, setup: withSh, stdout: "d/f 100640 6 www-data:www-data\nhello\n"},
		{name: "to-command fails", argv: []string{"tar", "xf", "/a.tar", "--to-command=exit 3", "d/f"}, files: files, setup: withSh,
			stderr: "tar: 'exit 3' returned status 3\n", status: 1},
		{name: "list with -O prints the data too", argv: []string{"tar", "tOf", "/a.tar", "d/f"}, files: files, stdout: "hello\nd/f\n"},
		{name: "not in archive", argv: []string{"tar", "tf", "/a.tar", "nosuch"}, files: files,
			stdout: "", stderr: "tar: nosuch: not found in archive\n", status: 1},
		{name: "create", argv: []string{"tar", "cvf", "/b.tar", "-C", "/", "src"}, files: files,
			stdout: "src/\nsrc/f\nsrc/sub/\nsrc/sub/g\n"},
		{name: "create missing", argv: []string{"tar", "cf", "/b.tar", "/nosuch"},
			stderr: "tar: /nosuch: No such file or directory\ntar: error exit delayed from previous errors\n", status: 1},
		{name: "strip components", argv: []string{"tar", "xf", "/a.tar", "-C", "/out", "--strip-components=1", "d/f"},
			files: map[string]string{"/a.tar": archive, "/out/": ""}, check: fileIs("/out/f", "hello\n")},
		{name: "bzip2", argv: []string{"tar", "tjf", "/x.tbz"}, files: map[string]string{"/x.tbz": string(tbz)}, stdout: "f\n"},
		{name: "bzip2 autodetected", argv: []string{"tar", "xOf", "/x.tbz"}, files: map[string]string{"/x.tbz": string(tbz)}, stdout: "hi\n"},
		{name: "bzip2 packing", argv: []string{"tar", "cjf", "/x.tbz", "/src"}, files: files,
			stderr: "tar: can't execute 'bzip2': No such file or directory\n", status: 1},
		{name: "big gzip autodetected", argv: []string{"tar", "tf", "/big.tgz"}, files: map[string]string{"/big.tgz": gz(tarOf(
			tar.Header{Name: "r", Typeflag: tar.TypeReg, Mode: 0o644, Linkname: noise(4096)}))}, stdout: "r\n"},
		{name: "empty archive", argv: []string{"tar", "cf", "/b.tar"}, stderr: "tar: empty archive\n", status: 1},
		{name: "not tar", argv: []string{"tar", "tf", "/src/f"}, files: files, stderr: "tar: invalid tar magic\n", status: 1},
		{name: "missing archive", argv: []string{"tar", "tf", "/nosuch.tar"},
			stderr: "tar: can't open '/nosuch.tar': No such file or directory\n", status: 1},
		{name: "gzip round trip", argv: []string{"sh", "-c", "cd /src && tar czf /b.tgz f sub && tar tzf /b.tgz && tar xzOf /b.tgz sub/g"},
			files: files, setup: withSh, stdout: "f\nsub/\nsub/g\ng\n"},
		{name: "gzip autodetected", argv: []string{"sh", "-c", "tar cf - /src/f | gzip > /c.tgz; tar tf /c.tgz"},
			files: files, setup: withSh, stdout: "src/f\n", stderr: "tar: removing leading '/' from member names\n"},
	})
}

// noise is n bytes that do not compress.
func noise(n int) string {
	b := make([]byte, n)
	x := uint32(1)
	for i := range b {
		x = x*1664525 + 1013904223
		b[i] = byte(x >> 24)
	}
	return string(b)
}
