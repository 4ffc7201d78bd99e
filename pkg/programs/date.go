package programs

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/minikubelet/minikubelet/pkg/programs/internal/getopt"
)

// Time zones: a busybox image has no zoneinfo, and a pod's TZ is seldom set, so every
// time is shown in UTC ("UTC", +0000), as such a container shows it.

func runDate(c *cmd) int {
	// -I takes an optional argument attached to it (-Iseconds), which getopt cannot
	// say: take it out of the arguments first.
	isoSpec, iso := "", false
	var rest []string
	for _, a := range c.args {
		if s, ok := strings.CutPrefix(a, "-I"); ok {
			isoSpec, iso = s, true
		} else if s, ok := strings.CutPrefix(a, "--iso-8601"); ok && (s == "" || s[0] == '=') {
			isoSpec, iso = strings.TrimPrefix(s, "="), true
		} else {
			rest = append(rest, a)
		}
	}
	c.args = rest
	o, args := c.getopt("Rs:ud:r:D:", []getopt.Long{
		{Name: "rfc-822", Key: 'R'}, {Name: "rfc-2822", Key: 'R'}, {Name: "set=", Key: 's'},
		{Name: "utc", Key: 'u'}, {Name: "date=", Key: 'd'}, {Name: "reference=", Key: 'r'},
	})
	format := ""
	if len(args) > 0 && strings.HasPrefix(args[0], "+") {
		format = args[0][1:]
		args = args[1:]
	}
	dateStr, setting := "", false
	switch {
	case o.Has('d'):
		dateStr = o.Val('d')
	case o.Has('s'):
		dateStr, setting = o.Val('s'), true
	case len(args) > 0:
		dateStr, setting = args[0], true
		args = args[1:]
		// The MMDDhhmm[[CC]YY][.ss] form moves its year to the front.
		n := len(dateStr) - len(strings.TrimLeft(dateStr, "0123456789"))
		rest := dateStr[n:]
		if rest == "" || len(rest) == 3 && rest[0] == '.' && isDigits(rest[1:]) {
			y := n - 8
			if y < 0 || y > 4 || y&1 != 0 {
				c.die("invalid date '%s'", dateStr)
			}
			dateStr = dateStr[8:n] + dateStr[:8] + rest
		}
	}
	if len(args) > 0 {
		c.showUsage(1)
	}
	t := c.p.Now().UTC()
	if r := o.Val('r'); r != "" {
		info, err := c.fs().Stat(c.abs(r))
		if err != nil {
			c.perror(err, "can't stat '%s'", r)
			c.exit(1)
		}
		t = info.ModTime.UTC()
	}
	if dateStr != "" {
		t = c.parseDate(dateStr, t)
		if setting {
			// Setting the clock needs CAP_SYS_TIME, which a container lacks.
			c.errorf("can't set date: Operation not permitted")
		}
	}
	switch {
	case format != "":
	case iso:
		format = "%Y-%m-%d"
		switch isoSpec {
		case "", "date":
		case "hours":
			format = "%Y-%m-%dT%H+00:00"
		case "minutes":
			format = "%Y-%m-%dT%H:%M+00:00"
		case "seconds":
			format = "%Y-%m-%dT%H:%M:%S+00:00"
		case "ns":
			format = "%Y-%m-%dT%H:%M:%S,%N+00:00"
		default:
			c.showUsage(1)
		}
	case o.Has('R'):
		format = "%a, %d %b %Y %H:%M:%S %z"
	default:
		format = "%a %b %e %H:%M:%S %Z %Y"
	}
	c.write(strftime(format, t) + "\n")
	return 0
}

func isDigits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// parseDate parses a date as busybox's parse_datestr (for date -d and -s, and touch -d),
// with now giving what the string leaves out. A string it cannot parse dies with
// "invalid date".
func (c *cmd) parseDate(s string, now time.Time) time.Time {
	if n, ok := strings.CutPrefix(s, "@"); ok {
		secs, err := strconv.ParseInt(n, 10, 64)
		if err != nil {
			c.die("invalid date '%s'", s)
		}
		return time.Unix(secs, 0).UTC()
	}
	y, mo, d := now.Date()
	midnight := time.Date(y, mo, d, 0, 0, 0, 0, time.UTC)
	layouts := []struct {
		layout string
		keep   string // what comes from now: "ymd" (date) or "y" (year)
	}{
		{"15:04", "ymd"}, {"15:04:05", "ymd"},
		{"01.02-15:04", "y"}, {"01.02-15:04:05", "y"},
		{"2006.01.02-15:04", ""}, {"2006.01.02-15:04:05", ""},
		{"Jan 2 15:04:05 2006", ""},
		{"2006-01-02 15:04", ""}, {"2006-01-02 15:04:05", ""},
		{"2006-01-02 15:04 -0700", ""}, {"2006-01-02 15:04:05 -0700", ""},
		{"2006-01-02 15", ""}, {"2006-01-02", ""},
	}
	for _, l := range layouts {
		t, err := time.Parse(l.layout, s)
		if err != nil {
			continue
		}
		t = t.UTC()
		switch l.keep {
		case "ymd":
			return midnight.Add(time.Duration(t.Hour())*time.Hour + time.Duration(t.Minute())*time.Minute + time.Duration(t.Second())*time.Second)
		case "y":
			return time.Date(y, t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), 0, time.UTC)
		}
		return t
	}
	return c.parseDigitsDate(s, now)
}

// parseDigitsDate parses touch -t's [[[[[YY]YY]MM]DD]hh]mm[.ss].
func (c *cmd) parseDigitsDate(s string, now time.Time) time.Time {
	digits, secs, hasSecs := strings.Cut(s, ".")
	bad := func() { c.die("invalid date '%s'", s) }
	if !isDigits(digits) || hasSecs && !isDigits(secs) {
		bad()
	}
	num := func(from, n int) int {
		v, _ := strconv.Atoi(digits[from : from+n])
		return v
	}
	year, month, day := now.Year(), int(now.Month()), now.Day()
	hour, minute := now.Hour(), now.Minute()
	switch len(digits) {
	case 2:
		minute = num(0, 2)
	case 4:
		hour, minute = num(0, 2), num(2, 2)
	case 6:
		day, hour, minute = num(0, 2), num(2, 2), num(4, 2)
	case 8:
		month, day, hour, minute = num(0, 2), num(2, 2), num(4, 2), num(6, 2)
	case 10:
		year, month, day, hour, minute = num(0, 2), num(2, 2), num(4, 2), num(6, 2), num(8, 2)
		// Two-digit years land within 50 years of now.
		cur := now.Year()
		year += cur / 100 * 100
		if year < cur-50 {
			year += 100
		}
		if year > cur+50 {
			year -= 100
		}
	case 12:
		year, month, day, hour, minute = num(0, 4), num(4, 2), num(6, 2), num(8, 2), num(10, 2)
	default:
		bad()
	}
	sec := 0
	if hasSecs {
		sec, _ = strconv.Atoi(secs)
	}
	if sec > 60 || minute > 59 || hour > 23 || day > 31 || month < 1 || month > 12 {
		bad()
	}
	return time.Date(year, time.Month(month), day, hour, minute, sec, 0, time.UTC)
}

var (
	weekdays = []string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"}
	months   = []string{"January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"}
)

// strftime formats t as C's strftime in the C locale and UTC, with glibc's padding flags
// (%-d, %_d, %0e) and busybox date's %N (nanoseconds, %3N for the first three digits).
func strftime(format string, t time.Time) string {
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		if format[i] != '%' || i+1 >= len(format) {
			b.WriteByte(format[i])
			continue
		}
		i++
		flag := byte(0)
		if strings.IndexByte("-_0^#", format[i]) >= 0 && i+1 < len(format) {
			flag = format[i]
			i++
		}
		width := 0
		for i < len(format) && format[i] >= '0' && format[i] <= '9' {
			width = width*10 + int(format[i]-'0')
			i++
		}
		if i >= len(format) {
			break
		}
		num := func(v, w int, pad byte) {
			switch flag {
			case '-':
				w = 0
			case '_':
				pad = ' '
			case '0':
				pad = '0'
			}
			if width > 0 {
				w = width
			}
			s := strconv.Itoa(v)
			for len(s) < w {
				s = string(pad) + s
			}
			b.WriteString(s)
		}
		str := func(s string) {
			if flag == '^' {
				s = strings.ToUpper(s)
			}
			for len(s) < width {
				s = " " + s
			}
			b.WriteString(s)
		}
		hour12 := t.Hour() % 12
		if hour12 == 0 {
			hour12 = 12
		}
		switch format[i] {
		case 'a':
			str(weekdays[t.Weekday()][:3])
		case 'A':
			str(weekdays[t.Weekday()])
		case 'b', 'h':
			str(months[t.Month()-1][:3])
		case 'B':
			str(months[t.Month()-1])
		case 'c':
			str(strftime("%a %b %e %H:%M:%S %Y", t))
		case 'C':
			num(t.Year()/100, 2, '0')
		case 'd':
			num(t.Day(), 2, '0')
		case 'D':
			str(strftime("%m/%d/%y", t))
		case 'e':
			num(t.Day(), 2, ' ')
		case 'F':
			str(strftime("%Y-%m-%d", t))
		case 'g':
			y, _ := t.ISOWeek()
			num(y%100, 2, '0')
		case 'G':
			y, _ := t.ISOWeek()
			num(y, 1, '0')
		case 'H':
			num(t.Hour(), 2, '0')
		case 'I':
			num(hour12, 2, '0')
		case 'j':
			num(t.YearDay(), 3, '0')
		case 'k':
			num(t.Hour(), 2, ' ')
		case 'l':
			num(hour12, 2, ' ')
		case 'm':
			num(int(t.Month()), 2, '0')
		case 'M':
			num(t.Minute(), 2, '0')
		case 'n':
			b.WriteByte('\n')
		case 'N':
			ns := fmt.Sprintf("%09d", t.Nanosecond())
			if width > 0 && width < 9 {
				ns = ns[:width]
			}
			b.WriteString(ns)
		case 'p':
			if t.Hour() < 12 {
				str("AM")
			} else {
				str("PM")
			}
		case 'P':
			if t.Hour() < 12 {
				str("am")
			} else {
				str("pm")
			}
		case 'r':
			str(strftime("%I:%M:%S %p", t))
		case 'R':
			str(strftime("%H:%M", t))
		case 's':
			num(int(t.Unix()), 1, '0')
		case 'S':
			num(t.Second(), 2, '0')
		case 't':
			b.WriteByte('\t')
		case 'T':
			str(strftime("%H:%M:%S", t))
		case 'u':
			wd := int(t.Weekday())
			if wd == 0 {
				wd = 7
			}
			num(wd, 1, '0')
		case 'U':
			num((t.YearDay()+6-int(t.Weekday()))/7, 2, '0')
		case 'V':
			_, w := t.ISOWeek()
			num(w, 2, '0')
		case 'w':
			num(int(t.Weekday()), 1, '0')
		case 'W':
			num((t.YearDay()+6-(int(t.Weekday())+6)%7)/7, 2, '0')
		case 'x':
			str(strftime("%m/%d/%y", t))
		case 'X':
			str(strftime("%H:%M:%S", t))
		case 'y':
			num(t.Year()%100, 2, '0')
		case 'Y':
			num(t.Year(), 1, '0')
		case 'z':
			str("+0000")
		case 'Z':
			str("UTC")
		case '%':
			b.WriteByte('%')
		default:
			b.WriteByte('%')
			b.WriteByte(format[i])
		}
	}
	return b.String()
}
