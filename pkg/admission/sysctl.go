package admission

import (
	"fmt"
	"regexp"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// ReasonSysctlForbidden is the rejection of a pod that sets a sysctl the node does not allow
// (upstream sysctl.ForbiddenReason).
const ReasonSysctlForbidden = "SysctlForbidden"

// safeSysctls are the sysctls every pod may set (upstream's safe set on a v1.37 node with
// a recent kernel, so none is dropped for an old one): namespaced, and unable to affect
// other pods or the node.
var safeSysctls = []string{
	"kernel.shm_rmid_forced",
	"net.ipv4.ip_local_port_range",
	"net.ipv4.tcp_syncookies",
	"net.ipv4.ping_group_range",
	"net.ipv4.ip_unprivileged_port_start",
	"net.ipv4.ip_local_reserved_ports",
	"net.ipv4.tcp_keepalive_time",
	"net.ipv4.tcp_fin_timeout",
	"net.ipv4.tcp_keepalive_intvl",
	"net.ipv4.tcp_keepalive_probes",
	"net.ipv4.tcp_rmem",
	"net.ipv4.tcp_wmem",
	"net.ipv4.tcp_slow_start_after_idle",
	"net.ipv4.tcp_notsent_lowat",
}

// sysctlNamespace is the kernel namespace a sysctl lives in; only namespaced sysctls can be
// set per pod.
type sysctlNamespace string

const (
	ipcNamespace     sysctlNamespace = "IPC"
	netNamespace     sysctlNamespace = "Net"
	utsNamespace     sysctlNamespace = "UTS"
	userNamespace    sysctlNamespace = "User"
	unknownNamespace sysctlNamespace = ""
)

// ipcSysctls are the IPC-namespaced sysctls by name (the kernel's semaphore, shared memory
// and message queue limits; kernel.shm and kernel.msg as prefixes of them).
var ipcSysctls = map[string]bool{
	"kernel.sem": true, "kernel.shmall": true, "kernel.shmmax": true, "kernel.shmmni": true,
	"kernel.shm_rmid_forced": true, "kernel.shm": true, "kernel.msgmax": true, "kernel.msgmnb": true,
	"kernel.msgmni": true, "kernel.msg": true,
}

// namespaceOf is the namespace of a sysctl or prefix (component-helpers' namespaceOf):
// kernel.domainname is per UTS namespace, every net.* per network namespace, fs.mqueue.* per
// IPC namespace and user.* per user namespace.
func namespaceOf(name string) sysctlNamespace {
	switch {
	case name == "kernel.domainname":
		return utsNamespace
	case ipcSysctls[name]:
		return ipcNamespace
	case strings.HasPrefix(name, "net."):
		return netNamespace
	case strings.HasPrefix(name, "fs.mqueue."):
		return ipcNamespace
	case strings.HasPrefix(name, "user."):
		return userNamespace
	}
	return unknownNamespace
}

// NormalizeSysctl turns a sysctl written with slashes (net/ipv4/conf/eno2.100/rp_filter)
// into the dotted form (net.ipv4.conf.eno2/100.rp_filter), as the kernel and upstream's
// NormalizeName read it; a name whose first separator is a dot is dotted already, even
// when an interface in it holds a slash.
func NormalizeSysctl(s string) string {
	i := strings.IndexAny(s, "./")
	if i < 0 || s[i] == '.' {
		return s
	}
	return strings.Map(func(r rune) rune {
		switch r {
		case '.':
			return '/'
		case '/':
			return '.'
		}
		return r
	}, s)
}

// sysctlPatternFmt is a sysctl name or a pattern ending in *, slashes allowed (upstream's
// policy validation SysctlContainSlashPatternFmt).
const (
	sysctlSegmentFmt = "[a-z0-9]([-_a-z0-9]*[a-z0-9])?"
	sysctlPatternFmt = "(" + sysctlSegmentFmt + "[\\./])*" + "([a-z0-9][-_a-z0-9]*)?[a-z0-9*]"
	sysctlMaxLength  = 253
)

var sysctlPattern = regexp.MustCompile("^" + sysctlPatternFmt + "$")

// SysctlAllowlist admits the pods whose sysctls are safe or allowed on the node
// (allowedUnsafeSysctls), as upstream's sysctl admit handler does.
type SysctlAllowlist struct {
	names    map[string]sysctlNamespace
	prefixes map[string]sysctlNamespace
}

// NewSysctlAllowlist allows the safe sysctls and the unsafe ones given (names, or prefixes
// ending in *). A pattern that is not a sysctl name, or a sysctl the kernel does not
// namespace, is an error, as upstream refuses them at start.
func NewSysctlAllowlist(unsafe []string) (*SysctlAllowlist, error) {
	w := &SysctlAllowlist{names: map[string]sysctlNamespace{}, prefixes: map[string]sysctlNamespace{}}
	for _, p := range append(append([]string(nil), safeSysctls...), unsafe...) {
		name, ns, prefixed, err := parseSysctlPattern(p)
		if err != nil {
			return nil, err
		}
		if prefixed {
			w.prefixes[name] = ns
		} else {
			w.names[name] = ns
		}
	}
	return w, nil
}

// CheckSysctlPattern returns upstream's error for an allowedUnsafeSysctls entry that is not
// a sysctl name or prefix, or that the kernel does not namespace; nil for a good one.
func CheckSysctlPattern(p string) error {
	_, _, _, err := parseSysctlPattern(p)
	return err
}

// parseSysctlPattern reads a sysctl name or a prefix ending in *: its dotted name (the
// prefix before the * for a prefix), its namespace, and whether it is a prefix.
func parseSysctlPattern(p string) (name string, ns sysctlNamespace, prefixed bool, err error) {
	if len(p) > sysctlMaxLength || !sysctlPattern.MatchString(p) {
		return "", "", false, fmt.Errorf("sysctl %q must have at most %d characters and match regex %s", p, sysctlMaxLength, sysctlPatternFmt)
	}
	name = NormalizeSysctl(p)
	if i := strings.IndexByte(name, '*'); i >= 0 {
		name, prefixed = name[:i], true
	}
	if ns = namespaceOf(name); ns == unknownNamespace {
		return "", "", false, fmt.Errorf("the sysctls %q are not known to be namespaced", name)
	}
	return name, ns, prefixed, nil
}

// Admit rejects a pod with a sysctl that is not allowed, or that would change the node's
// own namespace (a net.* sysctl with hostNetwork, an IPC one with hostIPC, a user.* one
// without hostUsers: false).
func (w *SysctlAllowlist) Admit(pod *v1.Pod) Result {
	if pod.Spec.SecurityContext == nil {
		return Result{Admit: true}
	}
	// hostUsers defaults to true: a pod shares the node's user namespace unless it opts out.
	hostUsers := pod.Spec.HostUsers == nil || *pod.Spec.HostUsers
	for _, s := range pod.Spec.SecurityContext.Sysctls {
		if err := w.check(s.Name, pod.Spec.HostNetwork, pod.Spec.HostIPC, hostUsers); err != nil {
			return Result{Reason: ReasonSysctlForbidden, Message: "forbidden sysctl: " + err.Error()}
		}
	}
	return Result{Admit: true}
}

func (w *SysctlAllowlist) check(sysctl string, hostNet, hostIPC, hostUsers bool) error {
	sysctl = NormalizeSysctl(sysctl)
	ns, ok := w.names[sysctl]
	if !ok {
		for p, pns := range w.prefixes {
			if strings.HasPrefix(sysctl, p) {
				ns, ok = pns, true
				break
			}
		}
	}
	if !ok {
		return fmt.Errorf("%q not allowlisted", sysctl)
	}
	if (ns == ipcNamespace && hostIPC) || (ns == netNamespace && hostNet) || (ns == userNamespace && hostUsers) {
		return fmt.Errorf("%q not allowed with host %s enabled", sysctl, ns)
	}
	return nil
}

// OS admission, as upstream's predicate admit handler checks it before the resources.
const (
	ReasonPodOSSelector  = "PodOSSelectorNodeLabelDoesNotMatch"
	MessagePodOSSelector = "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label"
	ReasonPodOS          = "PodOSNotSupported"
	MessagePodOS         = "Failed to admit pod as the OS field doesn't match node OS"
)

// AdmitOS rejects a pod meant for another operating system than the node's (nodeOS, the
// node's kubernetes.io/os): a pod labelled kubernetes.io/os with another value, or whose
// spec.os.name is another.
func AdmitOS(pod *v1.Pod, nodeOS string) Result {
	if os, ok := pod.Labels[v1.LabelOSStable]; ok && os != nodeOS {
		return Result{Reason: ReasonPodOSSelector, Message: MessagePodOSSelector}
	}
	if pod.Spec.OS != nil && string(pod.Spec.OS.Name) != nodeOS {
		return Result{Reason: ReasonPodOS, Message: MessagePodOS}
	}
	return Result{Admit: true}
}
