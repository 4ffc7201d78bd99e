package shell

import (
	"time"

	"github.com/minikubelet/minikubelet/pkg/simnet"
)

// NetworkNamespace is the network p's machine reaches and its pod's namespace on it (nil
// and nil without a network). A server captures them when it starts so that its handlers,
// which run in their caller's goroutine, can send requests of their own (agnhost netexec's
// /dial): the Network's methods are safe for concurrent use, unlike p's HTTP, Exchange and
// Connect, which read the machine's state.
func (p *Proc) NetworkNamespace() (*simnet.Network, *simnet.Namespace) {
	return p.m.cfg.Network, p.m.cfg.Net
}

// detachedLine is a line a server's handler wrote, waiting for the machine's owner.
type detachedLine struct {
	f    *fd
	at   int64
	line []byte
}

// StampedOutput is an Output that can take a line written at another instant than the
// machine's (a handler's line, stamped with its request's time).
type StampedOutput interface {
	Output
	WriteStamped(b []byte, at int64)
}

// Detached returns a function that writes a line to p's descriptor n (1 or 2) and is safe
// to call from any goroutine: a server's handlers, which run in their caller's goroutine,
// log their requests with it (netexec's "GET /echo?msg=..."). The line reaches a log when
// the machine's owner next drains it (Config.OnDetached tells it to), stamped with at; a
// file gets it at once; a pipe never (nobody could be waiting for it in order).
func (p *Proc) Detached(n int) func(at time.Time, line string) {
	f := p.fds[n]
	m := p.m
	return func(at time.Time, line string) {
		if f == nil || f.closed {
			return
		}
		switch f.kind {
		case fdFile:
			_ = f.fs.WriteFile(f.path, []byte(line+"\n"), 0o666&^p.umask, true, p.id.UID, p.id.GID)
		case fdOutput:
			m.mailbox.Lock()
			m.detached = append(m.detached, detachedLine{f: f, at: at.UnixNano(), line: []byte(line + "\n")})
			m.mailbox.Unlock()
			if m.cfg.OnDetached != nil {
				m.cfg.OnDetached()
			}
		}
	}
}

// DrainDetached writes the lines handlers wrote since the last drain to their outputs.
// The machine's owner calls it (not concurrently with Step).
func (m *Machine) DrainDetached() {
	m.mailbox.Lock()
	lines := m.detached
	m.detached = nil
	m.mailbox.Unlock()
	for _, l := range lines {
		if so, ok := l.f.out.(StampedOutput); ok {
			so.WriteStamped(l.line, l.at)
			continue
		}
		_, _ = l.f.out.Write(l.line)
	}
}
