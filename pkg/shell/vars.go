package shell

import (
	"slices"

	"mvdan.cc/sh/v3/expand"
)

// varTable is a shell's variables, in the order they were set (the order of the
// environment its children get). A sleeping shell holds its variables for as long as its
// container runs, so they are kept small: a string variable is a name, a few flags and its
// value (an expand.Variable in a map took four times that); arrays keep the whole
// Variable. A few variables are found by a scan, many through an index.
type varTable struct {
	vars  []shellVar
	index map[string]int // by name, once there are more than smallTable
	// bytes is what the variables' names and values take, the memory the shell is
	// charged for them (memory.go).
	bytes int64
}

const smallTable = 16

type shellVar struct {
	name  string
	flags uint8
	kind  expand.ValueKind
	str   string
	full  *expand.Variable // an array: the variable as it is
}

const (
	varSet = 1 << iota
	varLocal
	varExported
	varReadOnly
)

func packVar(name string, v expand.Variable) shellVar {
	sv := shellVar{name: name, kind: v.Kind, str: v.Str}
	if v.List != nil || v.Map != nil || v.Indexes != nil {
		sv.full = &v
	}
	if v.Set {
		sv.flags |= varSet
	}
	if v.Local {
		sv.flags |= varLocal
	}
	if v.Exported {
		sv.flags |= varExported
	}
	if v.ReadOnly {
		sv.flags |= varReadOnly
	}
	return sv
}

// varBytes is what a variable named name with value v holds: its name and its string,
// or its elements.
func varBytes(name string, v *expand.Variable) int64 {
	n := int64(len(name) + len(v.Str))
	for _, e := range v.List {
		n += int64(len(e)) + 16 // a string header per element
	}
	for k, e := range v.Map {
		n += int64(len(k)+len(e)) + 32
	}
	return n
}

func (sv *shellVar) variable() expand.Variable {
	if sv.full != nil {
		return *sv.full
	}
	return expand.Variable{Set: sv.flags&varSet != 0, Local: sv.flags&varLocal != 0, Exported: sv.flags&varExported != 0,
		ReadOnly: sv.flags&varReadOnly != 0, Kind: sv.kind, Str: sv.str}
}

func (t *varTable) find(name string) int {
	if t.index != nil {
		if i, ok := t.index[name]; ok {
			return i
		}
		return -1
	}
	for i := range t.vars {
		if t.vars[i].name == name {
			return i
		}
	}
	return -1
}

// lookup returns the variable name and whether it exists.
func (t *varTable) lookup(name string) (expand.Variable, bool) {
	if i := t.find(name); i >= 0 {
		return t.vars[i].variable(), true
	}
	return expand.Variable{}, false
}

// get returns the variable name, the zero Variable when there is none.
func (t *varTable) get(name string) expand.Variable {
	v, _ := t.lookup(name)
	return v
}

// set sets name to v, in its place when it exists, else last.
func (t *varTable) set(name string, v expand.Variable) {
	t.bytes += varBytes(name, &v)
	if i := t.find(name); i >= 0 {
		old := t.vars[i].variable()
		t.bytes -= varBytes(name, &old)
		t.vars[i] = packVar(name, v)
		return
	}
	t.vars = append(t.vars, packVar(name, v))
	if t.index != nil {
		t.index[name] = len(t.vars) - 1
	} else if len(t.vars) > smallTable {
		t.reindex()
	}
}

// del removes name.
func (t *varTable) del(name string) {
	i := t.find(name)
	if i < 0 {
		return
	}
	old := t.vars[i].variable()
	t.bytes -= varBytes(name, &old)
	t.vars = slices.Delete(t.vars, i, i+1)
	if t.index != nil {
		t.reindex()
	}
}

func (t *varTable) reindex() {
	t.index = make(map[string]int, len(t.vars))
	for i := range t.vars {
		t.index[t.vars[i].name] = i
	}
}

// each calls f with every variable in order until it returns false.
func (t *varTable) each(f func(name string, v expand.Variable) bool) {
	for i := range t.vars {
		if !f(t.vars[i].name, t.vars[i].variable()) {
			return
		}
	}
}

// clone is an independent copy (a subshell's).
func (t *varTable) clone() varTable {
	// Room for a few more: a subshell or command substitution usually sets some.
	c := varTable{vars: append(make([]shellVar, 0, len(t.vars)+4), t.vars...), bytes: t.bytes}
	if t.index != nil {
		c.reindex()
	}
	return c
}
