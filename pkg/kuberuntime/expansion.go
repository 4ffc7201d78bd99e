package kuberuntime

import (
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/pkg/cri"
)

// Expand replaces the $(NAME) references in s with lookup's values, with the semantics of
// the kubelet's forked expansion package (third_party/forked/golang/expansion): "$$" is a
// literal "$", a reference lookup does not know stays as written ("$(NAME)"), and a "$"
// that starts neither ("$x", a trailing "$", an unclosed "$(") is kept as is. The kubelet
// uses it for command and args, env values and subPathExpr.
func Expand(s string, lookup func(name string) (string, bool)) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch next := s[i+1]; next {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				// Unclosed: upstream copies "$(" and carries on after it.
				b.WriteString("$(")
				i++
				continue
			}
			name := s[i+2 : i+2+end]
			if v, ok := lookup(name); ok {
				b.WriteString(v)
			} else {
				b.WriteString("$(" + name + ")")
			}
			i += 2 + end
		default:
			b.WriteByte('$')
			b.WriteByte(next)
			i++
		}
	}
	return b.String()
}

// EnvLookup looks names up in a container's environment, the last definition of a name
// winning (upstream's EnvVarsToMap).
func EnvLookup(envs []cri.KeyValue) func(string) (string, bool) {
	m := make(map[string]string, len(envs))
	for _, e := range envs {
		m[e.Key] = e.Value
	}
	return func(name string) (string, bool) {
		v, ok := m[name]
		return v, ok
	}
}

// expandCommandAndArgs is upstream's ExpandContainerCommandAndArgs: the container's command
// and args with $(VAR) references to its environment expanded; nil stays nil, so the
// runtime falls back to the image's entrypoint and cmd.
func expandCommandAndArgs(c *v1.Container, envs []cri.KeyValue) (command, args []string) {
	lookup := EnvLookup(envs)
	for _, s := range c.Command {
		command = append(command, Expand(s, lookup))
	}
	for _, s := range c.Args {
		args = append(args, Expand(s, lookup))
	}
	return command, args
}
