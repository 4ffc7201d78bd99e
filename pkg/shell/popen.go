package shell

import "errors"

// PipeEnd is the parent's end of a pipe to a child started by Popen: reading waits while
// the pipe is empty and the child may still write; writing waits while it is full, and a
// write nobody will read kills the writer with SIGPIPE, as a pipe's end does.
type PipeEnd struct {
	p *Proc
	f *fd
}

// Popen starts the child s connected to p by a pipe, as popen(3): write false reads the
// child's standard output, write true feeds its standard input. Its other streams are p's
// unless s says otherwise.
func (p *Proc) Popen(s Spec, write bool) (*Proc, *PipeEnd, error) {
	c, err := p.StartChild(s)
	if err != nil {
		return nil, nil, err
	}
	r, w := newPipe()
	end := &PipeEnd{p, r}
	if write {
		c.setFD(0, r)
		end.f = w
	} else {
		c.setFD(1, w)
	}
	// The end closes when p exits, as its descriptors do (the child then reads the end
	// of its input, or its writes fail).
	p.cleanups = append(p.cleanups, func() { end.f.close() })
	return c, end, nil
}

func (e *PipeEnd) Read(b []byte) (int, error) { return e.f.read(e.p, b) }

func (e *PipeEnd) Write(b []byte) (int, error) {
	n, err := e.f.write(e.p, b)
	if errors.Is(err, errBrokenPipe) && e.p.killSig != 0 {
		panic(errKilled{}) // SIGPIPE's default action
	}
	return n, err
}

// Close closes the parent's end: the child reads end of file, or its writes fail.
func (e *PipeEnd) Close() error {
	e.f.close()
	return nil
}
