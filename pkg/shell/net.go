package shell

import "github.com/minikubelet/minikubelet/pkg/simnet"

// NetworkNamespace is the network p's machine reaches and its pod's namespace on it (nil
// and nil without a network). A server captures them when it starts so that its handlers,
// which run in their caller's goroutine, can send requests of their own (agnhost netexec's
// /dial): the Network's methods are safe for concurrent use, unlike p's HTTP, Exchange and
// Connect, which read the machine's state.
func (p *Proc) NetworkNamespace() (*simnet.Network, *simnet.Namespace) {
	return p.m.cfg.Network, p.m.cfg.Net
}
