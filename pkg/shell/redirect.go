package shell

import (
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"

	"github.com/minikubelet/minikubelet/pkg/vfs"
)

// redirect applies a statement's redirections to the shell's process. restore puts the
// descriptors back (and closes what the redirections opened); ok is false when one failed,
// after it reported why and set the status (the command does not run).
func (s *shell) redirect(rs []*syntax.Redirect) (restore func(), ok bool) {
	if len(rs) == 0 {
		return func() {}, true
	}
	type saved struct {
		n int
		f *fd
	}
	var undo []saved
	restore = func() {
		for i := len(undo) - 1; i >= 0; i-- {
			s.p.fds[undo[i].n].close()
			s.p.fds[undo[i].n] = undo[i].f
		}
	}
	set := func(n int, f *fd) {
		undo = append(undo, saved{n, s.p.fds[n]})
		s.p.fds[n] = f
	}
	for _, r := range rs {
		n := 1
		switch r.Op {
		case syntax.RdrIn, syntax.RdrInOut, syntax.DplIn, syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc:
			n = 0
		}
		if r.N != nil {
			v, err := strconv.Atoi(r.N.Value)
			if err != nil || v < 0 || v >= len(s.p.fds) {
				s.errorf("%s: bad file descriptor", r.N.Value)
				s.status = 1
				return restore, false
			}
			n = v
		}
		f, err := s.open(r)
		if err != nil {
			s.errorf("%v", err)
			s.status = 1
			return restore, false
		}
		switch {
		case f == nil: // n>&-
			set(n, nil)
		case r.Op == syntax.RdrAll || r.Op == syntax.AppAll:
			set(1, f)
			set(2, f.dup())
		default:
			set(n, f)
		}
	}
	return restore, true
}

type redirError struct{ msg string }

func (e redirError) Error() string { return e.msg }

// open opens what a redirection names.
func (s *shell) open(r *syntax.Redirect) (*fd, error) {
	switch r.Op {
	case syntax.Hdoc, syntax.DashHdoc:
		body := ""
		if r.Hdoc != nil {
			var err error
			if quotedDelimiter(r.Word) {
				body = lit(r.Hdoc)
			} else if body, err = expand.Document(s.cfg(), r.Hdoc); err != nil {
				return nil, err
			}
		}
		if r.Op == syntax.DashHdoc {
			body = stripTabs(body)
		}
		return &fd{kind: fdBytes, fdState: &fdState{data: []byte(body)}, refs: 1}, nil
	}
	word, err := expand.Literal(s.cfg(), r.Word)
	if err != nil {
		return nil, err
	}
	switch r.Op {
	case syntax.WordHdoc:
		return &fd{kind: fdBytes, fdState: &fdState{data: []byte(word + "\n")}, refs: 1}, nil
	case syntax.DplIn, syntax.DplOut:
		if word == "-" {
			return nil, nil
		}
		m, err := strconv.Atoi(word)
		if err != nil || m < 0 || m >= len(s.p.fds) || s.p.fds[m] == nil {
			if r.Op == syntax.DplOut && err != nil { // >&file is &>file
				return s.openFile(word, false, true)
			}
			return nil, redirError{word + ": bad file descriptor"}
		}
		return s.p.fds[m].dup(), nil
	case syntax.RdrIn:
		return s.openRead(word)
	case syntax.RdrInOut:
		if _, err := s.p.FS().Stat(s.p.Abs(word)); err != nil {
			if _, err := s.openFile(word, true, true); err != nil {
				return nil, err
			}
		}
		return s.openRead(word)
	case syntax.AppOut, syntax.AppAll:
		return s.openFile(word, true, true)
	case syntax.RdrOut:
		if s.noclobber {
			if info, err := s.p.FS().Stat(s.p.Abs(word)); err == nil && info.Mode.IsRegular() {
				return nil, redirError{"can't create " + word + ": File exists"}
			}
		}
		return s.openFile(word, false, true)
	default: // >|, &>
		return s.openFile(word, false, true)
	}
}

// stripTabs is a <<- here-document's body: the leading tabs of its lines removed.
func stripTabs(body string) string {
	lines := strings.SplitAfter(body, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimLeft(l, "\t")
	}
	return strings.Join(lines, "")
}

// redirErrno is how ash words a redirection's failure: its own words for a missing file or
// directory (errmsg), strerror otherwise.
func redirErrno(err error, missing string) string {
	if e := vfs.ErrnoOf(err); e == vfs.ENOENT || e == vfs.ENOTDIR {
		return missing
	}
	return err.Error()
}

func quotedDelimiter(w *syntax.Word) bool {
	if w == nil {
		return false
	}
	for _, p := range w.Parts {
		switch p.(type) {
		case *syntax.SglQuoted, *syntax.DblQuoted:
			return true
		case *syntax.Lit:
			if strings.Contains(p.(*syntax.Lit).Value, `\`) {
				return true
			}
		}
	}
	return false
}

// lit is the literal text of a word (a quoted here-document's body).
func lit(w *syntax.Word) string {
	var b strings.Builder
	for _, p := range w.Parts {
		if l, ok := p.(*syntax.Lit); ok {
			b.WriteString(l.Value)
		}
	}
	return b.String()
}

// devices are the files of /dev a redirection may name.
func (s *shell) device(name string) (*fd, bool) {
	switch name {
	case "/dev/null":
		return &fd{kind: fdNull, refs: 1}, true
	case "/dev/stdin", "/proc/self/fd/0", "/dev/fd/0":
		return s.p.fds[0].dup(), true
	case "/dev/stdout", "/proc/self/fd/1", "/dev/fd/1":
		return s.p.fds[1].dup(), true
	case "/dev/stderr", "/proc/self/fd/2", "/dev/fd/2":
		return s.p.fds[2].dup(), true
	}
	// Another process's standard streams, /proc/<pid>/fd/<0-2>: a hook or an exec writing
	// to /proc/1/fd/1 writes to the container's log, as the main process's stdout.
	if rest, ok := strings.CutPrefix(name, "/proc/"); ok {
		if pid, n, ok := strings.Cut(rest, "/fd/"); ok {
			pidN, err1 := strconv.Atoi(pid)
			fdN, err2 := strconv.Atoi(n)
			if err1 == nil && err2 == nil && fdN >= 0 && fdN < len(s.p.fds) {
				if p := s.p.m.find(pidN); p != nil && !p.exited && p.fds[fdN] != nil {
					return p.fds[fdN].dup(), true
				}
			}
		}
	}
	return nil, false
}

func (s *shell) openRead(name string) (*fd, error) {
	abs := s.p.Abs(name)
	if f, ok := s.device(abs); ok {
		return f, nil
	}
	// The file is read where it lies, not copied: "< big" of a 4 GB file costs a reader.
	r, err := s.p.FS().Open(abs)
	if err != nil {
		return nil, redirError{"can't open " + name + ": " + redirErrno(err, "no such file")}
	}
	return &fd{kind: fdReader, fdState: &fdState{file: r}, refs: 1}, nil
}

// openFile opens name for writing: created (owned by the shell's user) or truncated, or
// appended to.
func (s *shell) openFile(name string, appending, create bool) (*fd, error) {
	abs := s.p.Abs(name)
	if f, ok := s.device(abs); ok {
		return f, nil
	}
	id := s.p.Identity()
	if err := s.p.FS().WriteFile(abs, nil, 0o666&^s.p.umask, appending, id.UID, id.GID); err != nil {
		return nil, redirError{"can't create " + name + ": " + redirErrno(err, "nonexistent directory")}
	}
	return &fd{kind: fdFile, fdState: &fdState{fs: s.p.FS(), path: abs}, refs: 1}, nil
}
