package programs

import (
	"bufio"
	"bytes"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"hash"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/minikubelet/minikubelet/pkg/vfs"
)

// parseCount parses a count with busybox's bkm suffixes (b 512, k 1024, m 1 MiB), dying
// with "invalid number" on a bad one.
func (c *cmd) parseCount(s string) int64 {
	mult := int64(1)
	num := s
	switch {
	case strings.HasSuffix(s, "b"):
		mult, num = 512, s[:len(s)-1]
	case strings.HasSuffix(s, "k"):
		mult, num = 1024, s[:len(s)-1]
	case strings.HasSuffix(s, "m"):
		mult, num = 1<<20, s[:len(s)-1]
	}
	n, err := strconv.ParseUint(num, 10, 63)
	if err != nil || !isDigits(num) {
		c.die("invalid number '%s'", s)
	}
	if n > math.MaxInt64/uint64(mult) {
		return math.MaxInt64
	}
	return int64(n) * mult
}

func runHead(c *cmd) int {
	// The legacy "-N" form is taken before options.
	count := int64(10)
	bytesMode, negative := false, false
	eat := func(s string) {
		if strings.HasPrefix(s, "-") {
			negative = true
			s = s[1:]
		}
		count = c.parseCount(s)
	}
	if len(c.args) > 0 && len(c.args[0]) > 1 && c.args[0][0] == '-' && c.args[0][1] >= '0' && c.args[0][1] <= '9' {
		eat(c.args[0][1:])
		c.args = c.args[1:]
	}
	o, args := c.getopt("n:c:qv", nil)
	for _, a := range o.seq {
		switch a.opt {
		case 'n':
			bytesMode = false
			eat(a.arg)
		case 'c':
			bytesMode = true
			eat(a.arg)
		}
	}
	if len(args) == 0 {
		args = []string{"-"}
	}
	headers := len(args) > 1 && !o.has('q') || o.has('v')
	status := 0
	first := true
	for _, name := range args {
		r, err := c.open(name)
		wasFirst := first
		// busybox's header gains its leading blank line after the first operand, even
		// one it could not open.
		first = false
		if err != nil {
			c.perror(err, "%s", name)
			status = 1
			continue
		}
		if headers {
			shown := name
			if name == "-" {
				shown = "standard input"
			}
			if !wasFirst {
				c.write("\n")
			}
			c.printf("==> %s <==\n", shown)
		}
		fr, isFile := r.(*vfs.Reader)
		switch {
		case negative && bytesMode && isFile:
			c.copyRange(fr, 0, max(fr.Size()-count, 0)) // its size known, it is not held
		case negative && bytesMode:
			data, _ := io.ReadAll(c.p.Holding(r))
			c.out.Write(data[:max(int64(len(data))-count, 0)])
		case negative:
			var kept []string
			c.lines(r, func(line string) bool {
				kept = append(kept, line)
				if int64(len(kept)) > count {
					c.write(kept[0])
					kept = kept[1:]
				}
				return true
			})
		case bytesMode:
			data, _ := io.ReadAll(io.LimitReader(r, count))
			c.out.Write(data)
		default:
			n := int64(0)
			if count > 0 {
				c.lines(r, func(line string) bool {
					c.write(line)
					n++
					return n < count
				})
			}
		}
	}
	return status
}

func runTail(c *cmd) int {
	count := int64(10)
	fromTop := false
	eat := func(s string) {
		switch {
		case strings.HasPrefix(s, "-"):
			s = s[1:]
		case strings.HasPrefix(s, "+"):
			s = s[1:]
			fromTop = true
		}
		count = c.parseCount(s)
	}
	if len(c.args) > 0 && len(c.args[0]) > 1 && (c.args[0][0] == '-' || c.args[0][0] == '+') && c.args[0][1] >= '0' && c.args[0][1] <= '9' {
		eat(c.args[0])
		c.args = c.args[1:]
	}
	o, args := c.getopt("fc:n:qs:vF", nil)
	bytesMode := o.has('c')
	if o.has('c') {
		eat(o.val('c'))
	}
	if o.has('n') {
		eat(o.val('n'))
	}
	period := time.Second
	if s := o.val('s'); s != "" {
		period = seconds(c.parseDuration(s))
	}
	follow := o.has('f') || o.has('F')
	if len(args) == 0 {
		// stdin is a pipe (or nothing): there is no file to follow.
		follow = false
		args = []string{"-"}
	}
	status := 0
	type followed struct {
		name string
		off  int
	}
	var files []followed
	for _, name := range args {
		if name == "-" {
			files = append(files, followed{name: name})
			continue
		}
		if _, err := c.open(name); err != nil {
			c.perror(err, "can't open '%s'", name)
			status = 1
			if !o.has('F') {
				continue
			}
		}
		files = append(files, followed{name: name})
	}
	if len(files) == 0 {
		c.die("no files")
	}
	headers := len(files) > 1 && !o.has('q') || o.has('v')
	header := func(name string, first bool) {
		if name == "-" {
			name = "standard input"
		}
		if !first {
			c.write("\n")
		}
		c.printf("==> %s <==\n", name)
	}
	for i := range files {
		f := &files[i]
		if headers {
			header(f.name, i == 0)
		}
		r, err := c.open(f.name)
		if err != nil {
			continue
		}
		if fr, ok := r.(*vfs.Reader); ok {
			f.off = int(fr.Size())
			c.tailFile(fr, count, fromTop, bytesMode)
			continue
		}
		data, rerr := io.ReadAll(c.p.Holding(r))
		if rerr != nil && rerr != io.EOF {
			c.perror(rerr, "read error")
			status = 1
		}
		f.off = len(data)
		c.out.Write(tailOf(data, count, fromTop, bytesMode))
	}
	if !follow {
		return status
	}
	last := files[len(files)-1].name
	// Devices never grow: "tail -f /dev/null", which keeps many a container running,
	// waits without waking every second.
	growable := false
	for _, f := range files {
		if f.name != "-" && !isDevice(c.abs(f.name)) {
			growable = true
		}
	}
	if !growable {
		c.out.Flush()
		for {
			c.sleep(math.MaxInt32 * time.Second)
		}
	}
	for {
		c.sleep(period)
		for i := range files {
			f := &files[i]
			if f.name == "-" || isDevice(c.abs(f.name)) {
				continue
			}
			c.tick()
			fr, err := c.fs().Open(c.abs(f.name))
			if err != nil {
				continue
			}
			size := int(fr.Size())
			if size < f.off {
				f.off = 0 // truncated: follow from its start
			}
			if size == f.off {
				continue
			}
			if headers && f.name != last {
				header(f.name, false)
				last = f.name
			}
			c.copyRange(fr, int64(f.off), int64(size))
			f.off = size
		}
		c.out.Flush()
	}
}

// tailOf is the end of data that tail prints: its last count lines or bytes, or from the
// count-th on (+N).
// tailFile prints what tailOf would print of file r, reading no more of it than it must:
// the tail of a 4000 MiB file reads its end, and "tail -n +2" skips lines it keeps none of.
func (c *cmd) tailFile(r *vfs.Reader, count int64, fromTop, bytesMode bool) {
	size := r.Size()
	switch {
	case fromTop && bytesMode:
		c.copyRange(r, min(max(count-1, 0), size), size)
	case fromTop:
		// Lines are skipped as they are read: tail keeps none of them.
		br := bufio.NewReaderSize(io.NewSectionReader(r, 0, size), 64<<10)
		start := int64(0)
		for line := int64(1); line < count && start < size; line++ {
			n, ok := skipLine(br)
			if !ok {
				return // fewer lines than that: nothing, as tailOf
			}
			start += n
		}
		c.copyRange(r, start, size)
	case bytesMode:
		c.copyRange(r, max(size-count, 0), size)
	case count > 0 && size > 0:
		c.copyRange(r, c.linesStart(r, size, count), size)
	}
}

// linesStart is where the last count lines of r begin, as tailOf finds them: it reads back
// from the end a piece at a time, and keeps none of it.
func (c *cmd) linesStart(r io.ReaderAt, size, count int64) int64 {
	end := size
	var last [1]byte
	if r.ReadAt(last[:], size-1); last[0] == '\n' {
		end--
	}
	buf := make([]byte, min(end, 64<<10))
	for end > 0 {
		n := min(end, int64(len(buf)))
		r.ReadAt(buf[:n], end-n)
		for piece := buf[:n]; ; {
			i := bytes.LastIndexByte(piece, '\n')
			if i < 0 {
				break
			}
			if count--; count == 0 {
				return end - n + int64(i) + 1
			}
			piece = piece[:i]
		}
		if end -= n; end > 0 {
			c.tick()
		}
	}
	return 0
}

// skipLine reads br past its next newline and says how many bytes that was; false when
// the input ends first.
func skipLine(br *bufio.Reader) (int64, bool) {
	n := int64(0)
	for {
		b, err := br.ReadSlice('\n')
		n += int64(len(b))
		switch err {
		case nil:
			return n, true
		case bufio.ErrBufferFull:
		default:
			return n, false
		}
	}
}

// copyRange copies bytes [from, to) of r to stdout a piece at a time, ticking between
// pieces as cat does (a range of one piece does not tick).
func (c *cmd) copyRange(r io.ReaderAt, from, to int64) {
	if from >= to {
		return
	}
	buf := make([]byte, min(to-from, 64<<10))
	for from < to {
		n, _ := r.ReadAt(buf[:min(to-from, int64(len(buf)))], from)
		if n == 0 {
			return
		}
		c.out.Write(buf[:n])
		if from += int64(n); from < to {
			c.tick()
		}
	}
}

func tailOf(data []byte, count int64, fromTop, bytesMode bool) []byte {
	if bytesMode {
		if fromTop {
			return data[min(max(count-1, 0), int64(len(data))):]
		}
		return data[max(int64(len(data))-count, 0):]
	}
	if fromTop {
		start, line := 0, int64(1)
		for line < count && start < len(data) {
			i := bytes.IndexByte(data[start:], '\n')
			if i < 0 {
				return nil
			}
			start += i + 1
			line++
		}
		return data[start:]
	}
	if count == 0 {
		return nil
	}
	end := len(data)
	if end > 0 && data[end-1] == '\n' {
		end--
	}
	start := end
	for n := int64(0); n < count; n++ {
		i := bytes.LastIndexByte(data[:start], '\n')
		if i < 0 {
			return data
		}
		start = i
	}
	return data[start+1:]
}

func runWc(c *cmd) int {
	o, args := c.getopt("lwmcL", nil)
	kinds := []byte("lwmcL")
	var want []int
	for i, k := range kinds {
		if o.has(k) {
			want = append(want, i)
		}
	}
	if len(want) == 0 {
		want = []int{0, 1, 3}
	}
	nameFmt := true
	if len(args) == 0 {
		args = []string{"-"}
		nameFmt = false
	}
	padded := !(len(args) == 1 && len(want) == 1)
	var totals [5]int64
	status := 0
	print := func(counts [5]int64, name string) {
		var b strings.Builder
		for i, k := range want {
			s := strconv.FormatInt(counts[k], 10)
			if padded || i > 0 {
				s = padLeft(s, 9)
			}
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(s)
		}
		if nameFmt {
			b.WriteString(" " + name)
		}
		b.WriteByte('\n')
		c.write(b.String())
	}
	for _, name := range args {
		r, err := c.open(name)
		if err != nil {
			c.perror(err, "%s", name)
			status = 1
			continue
		}
		counts := wcCount(c, r)
		totals[4] = max(totals[4], counts[4])
		for i := 0; i < 4; i++ {
			totals[i] += counts[i]
		}
		print(counts, name)
	}
	if len(args) > 1 {
		print(totals, "total")
	}
	return status
}

// wcCount counts lines, words, characters, bytes and the longest line as busybox's wc.
func wcCount(c *cmd, r io.Reader) [5]int64 {
	var n [5]int64
	br := bufio.NewReaderSize(r, 64<<10)
	linepos, inWord := int64(0), false
	endLine := func(ch int) {
		n[4] = max(n[4], linepos)
		if ch == '\n' {
			n[0]++
		}
		if ch != '\v' {
			linepos = 0
		}
	}
	for {
		b, err := br.ReadByte()
		if err != nil {
			endLine(-1)
			if inWord {
				n[1]++
			}
			return n
		}
		n[3]++
		if b&0xc0 != 0x80 {
			n[2]++
		}
		if b == '\n' {
			c.tick()
		}
		switch {
		case b >= 0x20 && b < 0x7f:
			linepos++
			if b != ' ' {
				inWord = true
				continue
			}
		case b >= 9 && b <= 13:
			if b == '\t' {
				linepos = (linepos | 7) + 1
			} else {
				endLine(int(b))
			}
		default:
			continue
		}
		if inWord {
			n[1]++
		}
		inWord = false
	}
}

func runTee(c *cmd) int {
	o, args := c.getopt("aip", nil)
	status := 0
	var outs []string
	for _, name := range args {
		if name == "-" {
			continue
		}
		err := c.writeFile(name, nil, o.has('a'))
		if err != nil {
			c.perror(err, "%s", name)
			status = 1
			continue
		}
		outs = append(outs, name)
	}
	buf := make([]byte, 64<<10)
	in := c.p.Stdin()
	for {
		c.tick()
		n, err := in.Read(buf)
		if n > 0 {
			c.out.Write(buf[:n])
			c.out.Flush()
			for _, name := range outs {
				c.writeFile(name, buf[:n], true)
			}
		}
		if err != nil {
			break
		}
	}
	return status
}

// cutRange is one N, N-, -M or N-M of cut's list, 0-based and inclusive.
type cutRange struct{ from, to int }

func runCut(c *cmd) int {
	o, args := c.getopt("b:c:f:d:O:sDn", nil)
	lists := 0
	list := ""
	mode := byte(0)
	for _, b := range []byte("bcf") {
		if o.has(b) {
			lists++
			list, mode = o.val(b), b
		}
	}
	if lists == 0 {
		c.die("expected a list of bytes, characters, or fields")
	}
	if lists > 1 {
		c.showUsage(1)
	}
	if mode != 'f' {
		if o.has('s') {
			c.die("suppressing non-delimited lines makes sense only when operating on fields")
		}
		if o.has('d') {
			c.die("a delimiter may be specified only when operating on fields")
		}
	}
	delim := "\t"
	if d := o.val('d'); d != "" {
		delim = d[:1]
	}
	odelim := delim
	if o.has('O') {
		odelim = o.val('O')
	}
	var ranges []cutRange
	for _, tok := range strings.Split(list, ",") {
		if tok == "" {
			continue
		}
		startS, endS, isRange := strings.Cut(tok, "-")
		r := cutRange{}
		if startS != "" {
			n := c.positive(startS)
			if n > 0 {
				n--
			}
			r.from = n
		}
		switch {
		case !isRange:
			r.to = r.from
		case endS == "":
			r.to = math.MaxInt
		default:
			e := c.positive(endS)
			if e-1 < r.from && e < r.from {
				c.die("%d<%d", e, r.from)
			}
			r.to = e - 1
		}
		ranges = append(ranges, r)
	}
	if len(ranges) == 0 {
		c.die("missing list of positions")
	}
	if !o.has('D') {
		slices.SortStableFunc(ranges, func(a, b cutRange) int { return a.from - b.from })
	}
	selected := func(i int) bool {
		for _, r := range ranges {
			if i >= r.from && i <= r.to {
				return true
			}
		}
		return false
	}
	if len(args) == 0 {
		args = []string{"-"}
	}
	status := 0
	for _, name := range args {
		r, err := c.open(name)
		if err != nil {
			c.perror(err, "%s", name)
			status = 1
			continue
		}
		c.lines(r, func(s string) bool {
			line := strings.TrimSuffix(s, "\n")
			var b strings.Builder
			if mode != 'f' {
				for i := 0; i < len(line); i++ {
					if selected(i) {
						b.WriteByte(line[i])
					}
				}
			} else {
				if !strings.Contains(line, delim) {
					if o.has('s') {
						return true
					}
					c.write(line + "\n")
					return true
				}
				out := 0
				for i, f := range strings.Split(line, delim) {
					if selected(i) {
						if out > 0 {
							b.WriteString(odelim)
						}
						b.WriteString(f)
						out++
					}
				}
			}
			b.WriteByte('\n')
			c.write(b.String())
			return true
		})
	}
	return status
}

// positive is busybox's xatoi_positive: a non-negative int or death.
func (c *cmd) positive(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || !isDigits(s) {
		c.die("invalid number '%s'", s)
	}
	return n
}

func runTr(c *cmd) int {
	o, args := c.getopt("+Ccds", nil)
	if len(args) == 0 {
		c.showUsage(1)
	}
	set1 := trExpand(args[0])
	if o.has('c') || o.has('C') {
		in := map[byte]bool{}
		for _, b := range set1 {
			in[b] = true
		}
		set1 = nil
		for i := 0; i < 256; i++ {
			if !in[byte(i)] {
				set1 = append(set1, byte(i))
			}
		}
	}
	var vector [256]byte
	for i := range vector {
		vector[i] = byte(i)
	}
	var inSet1, inSet2 [256]bool
	var set2 []byte
	if len(args) > 1 {
		if args[1] == "" {
			c.die("STRING2 cannot be empty")
		}
		set2 = trExpand(args[1])
		last := byte('0')
		for i, b := range set1 {
			if i < len(set2) {
				last = set2[i]
			}
			vector[b] = last
		}
	}
	for _, b := range set1 {
		inSet1[b] = true
	}
	for _, b := range set2 {
		inSet2[b] = true
	}
	del, squeeze := o.has('d'), o.has('s')
	last := -1
	buf := make([]byte, 64<<10)
	in := c.stdin()
	for {
		n, err := in.Read(buf)
		out := make([]byte, 0, n)
		for _, ch := range buf[:n] {
			if del && inSet1[ch] {
				continue
			}
			coded := vector[ch]
			if squeeze && last == int(coded) && (inSet1[ch] || inSet2[coded]) {
				continue
			}
			out = append(out, coded)
			last = int(coded)
		}
		c.out.Write(out)
		if err != nil {
			return 0
		}
		c.tick()
	}
}

// trExpand expands tr's set: escapes, ranges (a-z), classes ([:digit:]) and [c*n].
func trExpand(s string) []byte {
	var out []byte
	classes := map[string]func(b byte) bool{
		"alpha": func(b byte) bool { return unicode.IsLetter(rune(b)) && b < 128 },
		"alnum": func(b byte) bool { return b < 128 && (unicode.IsLetter(rune(b)) || unicode.IsDigit(rune(b))) },
		"digit": func(b byte) bool { return b >= '0' && b <= '9' },
		"lower": func(b byte) bool { return b >= 'a' && b <= 'z' },
		"upper": func(b byte) bool { return b >= 'A' && b <= 'Z' },
		"space": func(b byte) bool { return b == ' ' || b >= 9 && b <= 13 },
		"blank": func(b byte) bool { return b == ' ' || b == '\t' },
		"punct": func(b byte) bool { return b > 32 && b < 127 && !unicode.IsLetter(rune(b)) && !unicode.IsDigit(rune(b)) },
		"cntrl": func(b byte) bool { return b < 32 || b == 127 },
		"xdigit": func(b byte) bool {
			return b >= '0' && b <= '9' || b >= 'a' && b <= 'f' || b >= 'A' && b <= 'F'
		},
	}
	// The class order busybox uses: digits, upper, lower (so [:upper:] maps onto
	// [:lower:] letter for letter).
	classOrder := func(f func(byte) bool) []byte {
		var bs []byte
		for _, r := range [][2]byte{{'0', '9'}, {'A', 'Z'}, {'a', 'z'}} {
			for b := int(r[0]); b <= int(r[1]); b++ {
				if f(byte(b)) {
					bs = append(bs, byte(b))
				}
			}
		}
		for b := 0; b < 128; b++ {
			if f(byte(b)) && !(b >= '0' && b <= '9' || b >= 'A' && b <= 'Z' || b >= 'a' && b <= 'z') {
				bs = append(bs, byte(b))
			}
		}
		return bs
	}
	for i := 0; i < len(s); {
		if s[i] == '[' && i+1 < len(s) && s[i+1] == ':' {
			if end := strings.Index(s[i:], ":]"); end > 0 {
				if f, ok := classes[s[i+2:i+end]]; ok {
					out = append(out, classOrder(f)...)
					i += end + 2
					continue
				}
			}
		}
		if s[i] == '[' && i+3 < len(s) && s[i+2] == '*' {
			if end := strings.IndexByte(s[i:], ']'); end > 0 {
				n, err := strconv.Atoi(s[i+3 : i+end])
				if s[i+3:i+end] == "" {
					n, err = 1, nil
				}
				if err == nil {
					out = append(out, bytes.Repeat([]byte{s[i+1]}, n)...)
					i += end + 1
					continue
				}
			}
		}
		ch := s[i]
		i++
		if ch == '\\' {
			ch, i = escape(s, i)
		}
		if i+1 < len(s) && s[i] == '-' {
			hi := s[i+1]
			j := i + 2
			if hi == '\\' {
				hi, j = escape(s, i+2)
			}
			for b := int(ch); b <= int(hi); b++ {
				out = append(out, byte(b))
			}
			i = j
			continue
		}
		out = append(out, ch)
	}
	return out
}

// sortKey is one -k POS1[,POS2] with its own flags.
type sortKey struct {
	range_ [4]int
	flags  string
}

func runSort(c *cmd) int {
	c.errStatus = 2 // as GNU sort: 1 is "not sorted" (-c)
	// -m merges sorted files: sorting them all gives the same lines.
	o, args := c.getopt("nrugMcszbdfit:k:o:T:S:hVm", nil)
	fail := c.die
	sep := byte(0)
	if o.has('t') {
		t := o.val('t')
		if len(t) != 1 {
			fail("bad -t parameter")
		}
		sep = t[0]
	}
	globalFlags := ""
	for _, f := range "nrbdfigMhV" {
		if o.has(byte(f)) {
			globalFlags += string(f)
		}
	}
	var keys []sortKey
	for _, k := range o.vals('k') {
		key := sortKey{}
		i := 0
		s := k
		for s != "" {
			n := 0
			for n < len(s) && s[n] >= '0' && s[n] <= '9' {
				n++
			}
			key.range_[2*i], _ = strconv.Atoi(s[:n])
			s = s[n:]
			if strings.HasPrefix(s, ".") {
				s = s[1:]
				n = 0
				for n < len(s) && s[n] >= '0' && s[n] <= '9' {
					n++
				}
				key.range_[2*i+1], _ = strconv.Atoi(s[:n])
				s = s[n:]
			}
			for s != "" {
				if s[0] == ',' && i == 0 {
					i++
					s = s[1:]
					break
				}
				if strings.IndexByte("nrbdfigMhV", s[0]) < 0 {
					if strings.IndexByte("nrugMcszbdfiokt", s[0]) < 0 {
						fail("unknown key option")
					}
					fail("unknown sort type")
				}
				f := string(s[0])
				if i == 1 && f == "b" {
					f = "B" // b after the comma strips trailing blanks
				}
				key.flags += f
				s = s[1:]
			}
		}
		if key.range_[0] == 0 {
			fail("bad field specification")
		}
		keys = append(keys, key)
	}
	if len(keys) == 0 {
		keys = []sortKey{{range_: [4]int{1, 0, 0, 0}}}
	}
	if len(args) == 0 {
		args = []string{"-"}
	}
	var lines []string
	for _, name := range args {
		r, err := c.open(name)
		if err != nil {
			c.perror(err, "can't open '%s'", name)
			c.exit(c.errStatus)
		}
		c.lines(c.p.Holding(r), func(s string) bool {
			lines = append(lines, strings.TrimSuffix(s, "\n"))
			return true
		})
	}
	globalB := strings.Contains(globalFlags, "b")
	cmp := func(x, y string, tieBreak bool) int {
		r := 0
		flags := globalFlags
		for _, k := range keys {
			if k.flags != "" {
				flags = k.flags
			} else {
				flags = globalFlags
			}
			if globalB && k.flags == "" {
				flags += "B"
			}
			kx, ky := sortKeyOf(x, k, flags, sep), sortKeyOf(y, k, flags, sep)
			r = compareSortKeys(kx, ky, flags)
			if strings.Contains(flags, "r") {
				r = -r
			}
			if r != 0 {
				return r
			}
		}
		if o.has('s') || !tieBreak {
			return 0
		}
		r = strings.Compare(x, y)
		if o.has('r') {
			r = -r
		}
		return r
	}
	if o.has('c') {
		limit := 0
		if o.has('u') {
			limit = -1
		}
		for i := 1; i < len(lines); i++ {
			if cmp(lines[i-1], lines[i], !o.has('u')) > limit {
				c.out.Flush()
				io.WriteString(c.p.Stderr(), "Check line "+strconv.Itoa(i)+"\n")
				return 1
			}
		}
		return 0
	}
	slices.SortStableFunc(lines, func(a, b string) int { return cmp(a, b, !o.has('u')) })
	if o.has('u') {
		out := lines[:0]
		for i, l := range lines {
			if i > 0 && cmp(out[len(out)-1], l, false) == 0 {
				continue
			}
			out = append(out, l)
		}
		lines = out
	}
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l)
		if o.has('z') {
			b.WriteByte(0)
		} else {
			b.WriteByte('\n')
		}
	}
	if f := o.val('o'); f != "" {
		if err := c.writeFile(f, []byte(b.String()), false); err != nil {
			c.perror(err, "can't open '%s'", f)
			c.exit(c.errStatus)
		}
		return 0
	}
	c.write(b.String())
	return 0
}

// sortKeyOf is busybox's get_key: the part of line a key selects, with -b, -d, -i and -f
// applied.
func sortKeyOf(line string, k sortKey, flags string, sep byte) string {
	isSpace := func(b byte) bool { return b == ' ' || b >= 9 && b <= 13 }
	if k.range_ == [4]int{1, 0, 0, 0} && strings.IndexAny(flags, "bdfiB") < 0 {
		return line
	}
	var start, end int
	for j := 0; j < 2; j++ {
		if k.range_[2*j] == 0 {
			end = len(line)
		} else {
			end = 0
			var ch byte
			for i := 1; i < k.range_[2*j]+j; i++ {
				if sep != 0 {
					for end < len(line) {
						ch = line[end]
						end++
						if ch == sep {
							break
						}
					}
					if end >= len(line) && (end == 0 || line[end-1] != sep) {
						ch = 0
					}
				} else {
					for end < len(line) && isSpace(line[end]) {
						end++
					}
					for end < len(line) && !isSpace(line[end]) {
						end++
					}
				}
			}
			if j == 1 && ch != 0 && sep != 0 {
				end--
			}
		}
		if j == 0 {
			start = end
		}
	}
	if strings.Contains(flags, "b") {
		for start < len(line) && isSpace(line[start]) {
			start++
		}
	}
	if strings.Contains(flags, "B") {
		for end > start && isSpace(line[end-1]) {
			end--
		}
	}
	if k.range_[3] != 0 {
		end = min(k.range_[3], len(line))
	}
	if k.range_[1] != 0 {
		start = min(start+k.range_[1]-1, len(line))
	}
	if end < start {
		end = start
	}
	s := line[start:end]
	if strings.Contains(flags, "d") {
		s = strings.Map(func(r rune) rune {
			if r < 128 && (unicode.IsSpace(r) || unicode.IsLetter(r) || unicode.IsDigit(r)) {
				return r
			}
			return -1
		}, s)
	}
	if strings.Contains(flags, "i") {
		s = strings.Map(func(r rune) rune {
			if r >= 32 && r < 127 {
				return r
			}
			return -1
		}, s)
	}
	if strings.Contains(flags, "f") {
		s = strings.ToUpper(s)
	}
	return s
}

func compareSortKeys(x, y, flags string) int {
	switch {
	case strings.Contains(flags, "n"):
		dx, dy := atof(x), atof(y)
		return cmpFloat(dx, dy)
	case strings.Contains(flags, "g") || strings.Contains(flags, "h"):
		dx, okx := strtod(x)
		dy, oky := strtod(y)
		switch {
		case !okx && !oky:
			return 0
		case !okx:
			return -1
		case !oky:
			return 1
		}
		return cmpFloat(dx, dy)
	case strings.Contains(flags, "M"):
		mx, my := monthOf(x), monthOf(y)
		return mx - my
	case strings.Contains(flags, "V"):
		return versionCompare(x, y)
	}
	return strings.Compare(x, y)
}

// versionCompare orders x and y as strverscmp does (sort -V): runs of digits by their
// numbers, the rest byte by byte ("v1.9" before "v1.10"). Runs with leading zeros are
// compared by value too, not as strverscmp's fractions ("02" sorts before "2" there).
func versionCompare(x, y string) int {
	isDigit := func(b byte) bool { return b >= '0' && b <= '9' }
	i, j := 0, 0
	for i < len(x) && j < len(y) {
		if isDigit(x[i]) && isDigit(y[j]) {
			a, b := i, j
			for i < len(x) && isDigit(x[i]) {
				i++
			}
			for j < len(y) && isDigit(y[j]) {
				j++
			}
			nx, ny := strings.TrimLeft(x[a:i], "0"), strings.TrimLeft(y[b:j], "0")
			if len(nx) != len(ny) {
				return cmpInt(len(nx), len(ny))
			}
			if c := strings.Compare(nx, ny); c != 0 {
				return c
			}
			continue
		}
		if x[i] != y[j] {
			return cmpInt(int(x[i]), int(y[j]))
		}
		i++
		j++
	}
	return cmpInt(len(x)-i, len(y)-j)
}

func cmpInt(a, b int) int {
	switch {
	case a > b:
		return 1
	case a < b:
		return -1
	}
	return 0
}

func cmpFloat(a, b float64) int {
	switch {
	case a > b:
		return 1
	case a < b:
		return -1
	}
	return 0
}

// atof is C's atof: the longest numeric prefix after blanks, 0 when there is none.
func atof(s string) float64 {
	v, _ := strtod(s)
	return v
}

// strtod parses the longest floating-point prefix of s (after leading blanks).
func strtod(s string) (float64, bool) {
	s = strings.TrimLeft(s, " \t\n\v\f\r")
	end := 0
	if end < len(s) && (s[end] == '+' || s[end] == '-') {
		end++
	}
	digits := 0
	for end < len(s) && s[end] >= '0' && s[end] <= '9' {
		end++
		digits++
	}
	if end < len(s) && s[end] == '.' {
		end++
		for end < len(s) && s[end] >= '0' && s[end] <= '9' {
			end++
			digits++
		}
	}
	if digits == 0 {
		return 0, false
	}
	if end < len(s) && (s[end] == 'e' || s[end] == 'E') {
		e := end + 1
		if e < len(s) && (s[e] == '+' || s[e] == '-') {
			e++
		}
		if e < len(s) && s[e] >= '0' && s[e] <= '9' {
			for e < len(s) && s[e] >= '0' && s[e] <= '9' {
				e++
			}
			end = e
		}
	}
	v, _ := strconv.ParseFloat(s[:end], 64)
	return v, true
}

func monthOf(s string) int {
	s = strings.TrimLeft(s, " \t")
	if len(s) < 3 {
		return -1
	}
	for i, m := range months {
		if strings.EqualFold(s[:3], m[:3]) {
			return i
		}
	}
	return -1
}

func runUniq(c *cmd) int {
	o, args := c.getopt("cduf:s:w:iz", nil)
	skipFields, skipChars, maxChars := 0, 0, math.MaxInt
	if o.has('f') {
		skipFields = c.positive(o.val('f'))
	}
	if o.has('s') {
		skipChars = c.positive(o.val('s'))
	}
	if o.has('w') {
		maxChars = c.positive(o.val('w'))
	}
	if len(args) > 2 {
		c.showUsage(1)
	}
	in := "-"
	if len(args) > 0 {
		in = args[0]
	}
	r, err := c.open(in)
	if err != nil {
		c.perror(err, "can't open '%s'", in)
		c.exit(1)
	}
	eol := "\n"
	if o.has('z') {
		eol = "\x00"
	}
	keyOf := func(line string) string {
		s := line
		for i := 0; i < skipFields; i++ {
			s = strings.TrimLeft(s, " \t")
			j := strings.IndexAny(s, " \t")
			if j < 0 {
				s = ""
				break
			}
			s = s[j:]
		}
		s = s[min(skipChars, len(s)):]
		if len(s) > maxChars {
			s = s[:maxChars]
		}
		if o.has('i') {
			s = strings.ToLower(s)
		}
		return s
	}
	var out strings.Builder
	var prev string
	dups := -1
	flush := func() {
		if dups < 0 {
			return
		}
		if o.has('d') && dups == 0 || o.has('u') && dups > 0 {
			return
		}
		if o.has('c') {
			out.WriteString(padLeft(strconv.Itoa(dups+1), 7) + " ")
		}
		out.WriteString(prev + eol)
	}
	c.lines(r, func(s string) bool {
		line := strings.TrimSuffix(s, "\n")
		if dups >= 0 && keyOf(line) == keyOf(prev) {
			dups++
			return true
		}
		flush()
		prev, dups = line, 0
		if out.Len() > 4096 {
			c.write(out.String())
			out.Reset()
		}
		return true
	})
	flush()
	if len(args) == 2 {
		if err := c.writeFile(args[1], []byte(out.String()), false); err != nil {
			c.perror(err, "can't open '%s'", args[1])
			c.exit(1)
		}
		return 0
	}
	c.write(out.String())
	return 0
}

func runSeq(c *cmd) int {
	o, args := c.getopt("+ws:", nil)
	sep := "\n"
	if o.has('s') {
		sep = o.val('s')
	}
	parse := func(s string) float64 {
		v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil {
			c.showUsage(1)
		}
		return v
	}
	first, inc := 1.0, 1.0
	var last float64
	switch len(args) {
	case 3:
		inc = parse(args[1])
		first = parse(args[0])
		last = parse(args[2])
	case 2:
		first = parse(args[0])
		last = parse(args[1])
	case 1:
		last = parse(args[0])
	default:
		c.showUsage(1)
	}
	width, frac := 0, 0
	for i, a := range args {
		dot := strings.IndexByte(a, '.')
		if dot < 0 {
			dot = len(a)
		}
		width = max(width, dot)
		if i == len(args)-1 {
			break
		}
		frac = max(frac, len(a)-dot)
	}
	if frac > 0 {
		frac--
		if frac > 0 {
			width += frac + 1
		}
	}
	if !o.has('w') {
		width = 0
	}
	format := "%0*.*f"
	n := 0
	for v := first; inc >= 0 && v <= last || inc < 0 && v >= last; v = first + float64(n)*inc {
		c.tick()
		if n > 0 {
			c.write(sep)
		}
		c.printf(format, width, frac, v)
		n++
	}
	if n > 0 {
		c.write("\n")
	}
	return 0
}

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

func runMd5sum(c *cmd) int    { return c.hashsum(md5.New) }
func runSha1sum(c *cmd) int   { return c.hashsum(sha1.New) }
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
	if !o.has('c') {
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
				if o.has('w') {
					c.errorf("invalid format")
				}
				return true
			}
			lines++
			total++
			got, ok := sum(file)
			if !ok || got != strings.ToLower(want) {
				bad++
				if !o.has('s') {
					c.printf("%s: FAILED\n", file)
				}
			} else if !o.has('s') {
				c.printf("%s: OK\n", file)
			}
			return true
		})
		if bad > 0 {
			status = 1
			if !o.has('s') {
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

func runCmp(c *cmd) int {
	o, args := c.getopt("lsn:", map[string]byte{"bytes=": 'n', "quiet": 's', "silent": 's', "verbose": 'l'})
	if len(args) < 1 || len(args) > 2 {
		c.showUsage(1)
	}
	name1, name2 := args[0], "-"
	if len(args) == 2 {
		name2 = args[1]
	}
	c.errStatus = 2 // a missing file; 1 is "they differ"
	read := func(name string) []byte {
		data, err := c.readAll(name)
		if err != nil && vfs.ErrnoOf(err) != vfs.EISDIR {
			if !o.has('s') {
				c.perror(err, "can't open '%s'", name)
			}
			c.exit(c.errStatus)
		}
		return data
	}
	a, b := read(name1), read(name2)
	limit := math.MaxInt
	if o.has('n') {
		limit = c.positive(o.val('n'))
	}
	line := 1
	status := 0
	n := min(len(a), len(b), limit)
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			status = 1
			if o.has('s') {
				return 1
			}
			if !o.has('l') {
				c.printf("%s %s differ: char %d, line %d\n", name1, name2, i+1, line)
				return 1
			}
			c.printf("%d %3o %3o\n", i+1, a[i], b[i])
		}
		if a[i] == '\n' {
			line++
		}
	}
	if len(a) != len(b) && n < limit {
		if !o.has('s') {
			short := name1
			if len(b) < len(a) {
				short = name2
			}
			c.out.Flush()
			io.WriteString(c.p.Stderr(), "cmp: EOF on "+short+"\n")
		}
		return 1
	}
	return status
}
