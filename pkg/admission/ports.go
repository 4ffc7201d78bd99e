package admission

import (
	v1 "k8s.io/api/core/v1"
)

// bindAllHostIP is the host IP a port without one binds: every address of the node
// (the scheduler's DefaultBindAllHostIP).
const bindAllHostIP = "0.0.0.0"

// protocolPort is a host port of one protocol; the default protocol is TCP.
type protocolPort struct {
	protocol string
	port     int32
}

// hostPort is one (host IP, protocol, port) a pod binds on the node, with upstream's
// defaults filled (HostPortInfo.sanitize): no IP is 0.0.0.0, no protocol TCP.
type hostPort struct {
	ip string
	protocolPort
}

// hostPorts lists the host ports pod binds (schedutil.GetHostPorts): those of its app
// containers and of its sidecars (restartable init containers, which run as long as the
// pod); a plain init container's ports are not held for the pod's life, so they do not count.
func hostPorts(pod *v1.Pod) []hostPort {
	var out []hostPort
	add := func(ports []v1.ContainerPort) {
		for _, p := range ports {
			if p.HostPort <= 0 {
				continue
			}
			hp := hostPort{ip: p.HostIP, protocolPort: protocolPort{protocol: string(p.Protocol), port: p.HostPort}}
			if hp.ip == "" {
				hp.ip = bindAllHostIP
			}
			if hp.protocol == "" {
				hp.protocol = string(v1.ProtocolTCP)
			}
			out = append(out, hp)
		}
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			add(c.Ports)
		}
	}
	for i := range pod.Spec.Containers {
		add(pod.Spec.Containers[i].Ports)
	}
	return out
}

// portsInUse counts, per protocol and port, how many admitted pods bind it on each host IP.
// It is upstream's HostPortInfo with counts, so that a pod can be taken out without
// freeing a port another pod still holds.
type portsInUse map[protocolPort]map[string]int

func (u portsInUse) add(ports []hostPort, delta int) {
	for _, p := range ports {
		byIP := u[p.protocolPort]
		if byIP == nil {
			byIP = map[string]int{}
			u[p.protocolPort] = byIP
		}
		byIP[p.ip] += delta
		if byIP[p.ip] <= 0 {
			delete(byIP, p.ip)
			if len(byIP) == 0 {
				delete(u, p.protocolPort)
			}
		}
	}
}

// conflicts reports whether any of want is taken (HostPortInfo.CheckConflict): a port on
// 0.0.0.0 conflicts with the same protocol and port on any IP, a port on a given IP with
// the same one on that IP or on 0.0.0.0. Bindings in own (the pod's own, when it is
// counted already) are left out.
func (u portsInUse) conflicts(want, own []hostPort) bool {
	held := func(pp protocolPort, ip string) bool {
		n := u[pp][ip]
		for _, o := range own {
			if o.protocolPort == pp && o.ip == ip {
				n--
			}
		}
		return n > 0
	}
	for _, w := range want {
		if w.ip == bindAllHostIP {
			for ip := range u[w.protocolPort] {
				if held(w.protocolPort, ip) {
					return true
				}
			}
			continue
		}
		if held(w.protocolPort, bindAllHostIP) || held(w.protocolPort, w.ip) {
			return true
		}
	}
	return false
}
