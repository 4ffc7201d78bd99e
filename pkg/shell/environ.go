package shell

import (
	"strconv"
	"strings"
	"time"

	"mvdan.cc/sh/v3/expand"
)

// environ is the shell seen by the expand package: its variables and special parameters.
type environ shell

var _ expand.WriteEnviron = (*environ)(nil)

func str(v string) expand.Variable { return expand.Variable{Set: true, Kind: expand.String, Str: v} }

func (e *environ) Get(name string) expand.Variable {
	s := (*shell)(e)
	switch name {
	case "#":
		return str(strconv.Itoa(len(s.params)))
	case "@", "*":
		s.p.chargeTransient(s.paramBytes) // the expansion copies them
		return expand.Variable{Set: true, Kind: expand.Indexed, List: s.params}
	case "?":
		return str(strconv.Itoa(s.status))
	case "$":
		return str(strconv.Itoa(s.pid))
	case "!":
		if s.lastBG == 0 {
			return expand.Variable{}
		}
		return str(strconv.Itoa(s.lastBG))
	case "0":
		return str(s.name)
	case "-":
		// In ash's order: its option list read backwards (u a C x c s f e; allexport, not
		// kept, never shows), checked against busybox 1.35.
		var b strings.Builder
		for _, f := range []struct {
			c  byte
			on bool
		}{{'u', s.nounset}, {'C', s.noclobber}, {'x', s.xtrace}, {'c', s.scriptFrom == 'c'}, {'s', s.scriptFrom == 's'}, {'f', s.noglob}, {'e', s.errexit}} {
			if f.on {
				b.WriteByte(f.c)
			}
		}
		return str(b.String())
	case "RANDOM":
		if v, ok := s.vars.lookup(name); ok && !v.IsSet() {
			return v
		}
		return str(strconv.Itoa(s.p.Rand().IntN(32768)))
	case "SECONDS":
		return str(strconv.FormatInt((s.p.m.now-s.started)/int64(time.Second), 10))
	}
	if name != "" && name[0] >= '1' && name[0] <= '9' { // a positional parameter
		n, err := strconv.Atoi(name)
		if err != nil {
			return expand.Variable{}
		}
		if n <= len(s.params) {
			return str(s.params[n-1])
		}
		return expand.Variable{}
	}
	v := s.vars.get(name)
	// The expansion copies the value: charged before it does (memory.go).
	s.p.chargeTransient(varBytes("", &v))
	return v
}

func (e *environ) Each(f func(name string, vr expand.Variable) bool) {
	s := (*shell)(e)
	s.vars.each(f)
}

func (e *environ) Set(name string, vr expand.Variable) error {
	s := (*shell)(e)
	if !vr.IsSet() && vr.Kind != expand.KeepValue && !vr.Declared() {
		if old, ok := s.vars.lookup(name); ok && old.ReadOnly {
			return readonlyError{name}
		}
		s.vars.del(name)
		s.envCache = nil
		s.account()
		return nil
	}
	return s.setVar(name, vr)
}
