package shell

import "github.com/minikubelet/minikubelet/pkg/memcg"

// A container's programs hold memory in its cgroup (Config.Memory): every byte a program
// keeps (a shell's variables and positional parameters, the values an expansion copies,
// a pipe's buffer, a command substitution's output, an applet's working data) is charged
// before it is allocated, so the daemon never holds more for a container than its limit
// allows. A charge the cgroup refuses is the kernel's OOM kill: every process of the
// machine dies of SIGKILL at once (memory.oom.group, as the kubelet sets it), the
// charging program unwinds where it stands, and the runtime reports the container
// OOMKilled.
//
// Charges are made where memory is kept, not where Go happens to allocate: the figure is
// the model's, close to what the same program would hold in a real container. What a
// process holds is given back when it exits; what a subshell in the same process held
// when the subshell ends; a pipe's buffer as it is read.

// Charge accounts n more bytes held by p, before they are allocated (n < 0 gives bytes
// back). Past the container's memory limit the container is OOM-killed and p's program
// unwinds: Charge does not return.
func (p *Proc) Charge(n int64) {
	if g := p.m.cfg.Memory; g != nil && !account(g, &p.held, n) {
		p.m.oomKill()
	}
}

// account charges g n more bytes (n < 0 gives back, at most what *held says was charged)
// and keeps *held; false when g refuses (the OOM kill).
func account(g *memcg.Group, held *int64, n int64) bool {
	if n < 0 {
		n = max(n, -*held)
		*held += n
		g.Uncharge(-n)
		return true
	}
	if n == 0 || !g.Charge(n) {
		return n == 0
	}
	*held += n
	return true
}

// Held is what p holds now by its charges.
func (p *Proc) Held() int64 { return p.held }

// chargeTransient accounts n bytes an expansion is about to copy: held until the
// expansion's result is kept (a variable, charged then) or dropped (releaseTransient).
func (p *Proc) chargeTransient(n int64) {
	if p.m.cfg.Memory == nil || n <= 0 {
		return
	}
	p.transient += n
	p.Charge(n)
}

// releaseTransient gives back what the last expansion copied.
func (p *Proc) releaseTransient() {
	if p.transient != 0 {
		p.Charge(-p.transient)
		p.transient = 0
	}
}

// chargeMachine accounts n bytes the machine holds outside any process (a pipe's buffer);
// n < 0 gives them back. A refused charge is the OOM kill, unwinding the running program.
func (m *Machine) chargeMachine(n int64) {
	if g := m.cfg.Memory; g != nil && !account(g, &m.held, n) {
		m.oomKill()
	}
}

// oomKill is the OOM killer's kill of the container: every process dies of SIGKILL, the
// one running now at once (outside a Step, at the next).
func (m *Machine) oomKill() {
	m.oom = true
	for _, q := range m.procs {
		if !q.exited {
			q.killSig = SIGKILL
		}
	}
	if m.stepped {
		panic(errKilled{})
	}
}

// OOMKilled reports whether the machine's cgroup was OOM-killed.
func (m *Machine) OOMKilled() bool {
	return m.oom || m.cfg.Memory != nil && m.cfg.Memory.Killed()
}

// account charges the shell's process for what its variables, saved variables and
// positional parameters hold beyond what it inherited (a subshell shares its parent's
// until it changes them, as a forked process shares its pages).
func (s *shell) account() {
	if s.p.m.cfg.Memory == nil {
		return
	}
	// The expansion's copy has become a value kept here: it is charged as that now.
	s.p.releaseTransient()
	want := max(s.vars.bytes+s.savedBytes+s.paramBytes-s.inherited, 0)
	if want != s.charged {
		d := want - s.charged
		s.charged = want
		s.p.Charge(d)
	}
}

// setParams sets the positional parameters.
func (s *shell) setParams(params []string) {
	s.params = params
	n := int64(0)
	for _, a := range params {
		n += int64(len(a)) + 16
	}
	s.paramBytes = n
	s.account()
}

// release gives back what a subshell run in its parent's process charged (its
// variables are gone with it).
func (s *shell) release() {
	if s.charged != 0 {
		s.p.Charge(-s.charged)
		s.charged = 0
	}
}

// savedSize is what saved variables hold.
func savedSize(saved []savedVar) int64 {
	n := int64(0)
	for i := range saved {
		n += varBytes(saved[i].name, &saved[i].v)
	}
	return n
}
