package admission

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func sysctlPod(hostNet, hostIPC bool, names ...string) *v1.Pod {
	p := &v1.Pod{Spec: v1.PodSpec{HostNetwork: hostNet, HostIPC: hostIPC}}
	if names != nil {
		p.Spec.SecurityContext = &v1.PodSecurityContext{}
		for _, n := range names {
			p.Spec.SecurityContext.Sysctls = append(p.Spec.SecurityContext.Sysctls, v1.Sysctl{Name: n, Value: "1"})
		}
	}
	return p
}

func hostUsers(v bool, p *v1.Pod) *v1.Pod {
	p.Spec.HostUsers = &v
	return p
}

func TestSysctlAllowlist(t *testing.T) {
	tests := []struct {
		name    string
		unsafe  []string
		pod     *v1.Pod
		message string // empty: admitted
	}{
		{"no security context", nil, sysctlPod(false, false), ""},
		{"safe sysctl", nil, sysctlPod(false, false, "kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range"), ""},
		{"safe sysctl written with slashes", nil, sysctlPod(false, false, "net/ipv4/tcp_syncookies"), ""},
		{"unsafe sysctl", nil, sysctlPod(false, false, "kernel.shm_rmid_forced", "kernel.msgmax"), `forbidden sysctl: "kernel.msgmax" not allowlisted`},
		{"unsafe sysctl allowed by name", []string{"kernel.msgmax"}, sysctlPod(false, false, "kernel.msgmax"), ""},
		{"unsafe sysctl allowed by prefix", []string{"net.core.*"}, sysctlPod(false, false, "net.core.somaxconn"), ""},
		{"prefix does not allow a sibling", []string{"net.core.*"}, sysctlPod(false, false, "net.ipv6.conf.all.forwarding"), `forbidden sysctl: "net.ipv6.conf.all.forwarding" not allowlisted`},
		{"net sysctl with host network", nil, sysctlPod(true, false, "net.ipv4.tcp_syncookies"), `forbidden sysctl: "net.ipv4.tcp_syncookies" not allowed with host Net enabled`},
		{"IPC sysctl with host IPC", nil, sysctlPod(false, true, "kernel.shm_rmid_forced"), `forbidden sysctl: "kernel.shm_rmid_forced" not allowed with host IPC enabled`},
		{"net sysctl with host IPC only", nil, sysctlPod(false, true, "net.ipv4.tcp_syncookies"), ""},
		{"safe since v1.37's list: tcp_rmem, tcp_wmem, slow start, notsent_lowat", nil,
			sysctlPod(false, false, "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem", "net.ipv4.tcp_slow_start_after_idle", "net.ipv4.tcp_notsent_lowat"), ""},
		{"UTS sysctl allowed by name", []string{"kernel.domainname"}, sysctlPod(false, false, "kernel.domainname"), ""},
		{"user sysctl in the host's user namespace", []string{"user.*"}, sysctlPod(false, false, "user.max_user_namespaces"),
			`forbidden sysctl: "user.max_user_namespaces" not allowed with host User enabled`},
		{"user sysctl with hostUsers: true", []string{"user.max_user_namespaces"}, hostUsers(true, sysctlPod(false, false, "user.max_user_namespaces")),
			`forbidden sysctl: "user.max_user_namespaces" not allowed with host User enabled`},
		{"user sysctl with hostUsers: false", []string{"user.*"}, hostUsers(false, sysctlPod(false, false, "user.max_user_namespaces")), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := NewSysctlAllowlist(tt.unsafe)
			if err != nil {
				t.Fatal(err)
			}
			got := w.Admit(tt.pod)
			if tt.message == "" {
				if !got.Admit {
					t.Errorf("rejected: %+v", got)
				}
				return
			}
			if got.Admit || got.Reason != ReasonSysctlForbidden || got.Message != tt.message {
				t.Errorf("got %+v, want rejected %s %q", got, ReasonSysctlForbidden, tt.message)
			}
		})
	}
}

func TestNewSysctlAllowlistRefuses(t *testing.T) {
	for pattern, want := range map[string]string{
		"Kernel.MsgMax":          "must have at most 253 characters and match regex",
		"net..core":              "must have at most 253 characters and match regex",
		"*":                      `the sysctls "" are not known to be namespaced`,
		"kernel.panic":           `the sysctls "kernel.panic" are not known to be namespaced`,
		"vm.*":                   `the sysctls "vm." are not known to be namespaced`,
		"kernel.hostname":        `the sysctls "kernel.hostname" are not known to be namespaced`,
		strings.Repeat("a", 254): "must have at most 253 characters",
	} {
		if _, err := NewSysctlAllowlist([]string{pattern}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("NewSysctlAllowlist(%q) = %v, want an error containing %q", pattern, err, want)
		}
	}
}

func TestAdmitOS(t *testing.T) {
	tests := []struct {
		name   string
		labels map[string]string
		os     v1.OSName
		reason string
	}{
		{"nothing said", nil, "", ""},
		{"same OS field", nil, "linux", ""},
		{"other OS field", nil, "windows", ReasonPodOS},
		{"same OS label", map[string]string{v1.LabelOSStable: "linux"}, "", ""},
		{"other OS label", map[string]string{v1.LabelOSStable: "windows"}, "linux", ReasonPodOSSelector},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: tt.labels}}
			if tt.os != "" {
				p.Spec.OS = &v1.PodOS{Name: tt.os}
			}
			got := AdmitOS(p, "linux")
			if got.Admit != (tt.reason == "") || got.Reason != tt.reason {
				t.Errorf("AdmitOS = %+v, want reason %q", got, tt.reason)
			}
		})
	}
}

// A sysctl's name reaches the runtime dotted, whichever form the pod wrote it in; a dotted
// name keeps the slash of an interface name (upstream's NormalizeName).
func TestNormalizeSysctl(t *testing.T) {
	for in, want := range map[string]string{
		"kernel.shm_rmid_forced":           "kernel.shm_rmid_forced",
		"kernel/shm_rmid_forced":           "kernel.shm_rmid_forced",
		"net/ipv4/conf/eno2.100/rp_filter": "net.ipv4.conf.eno2/100.rp_filter",
		"net.ipv4.conf.eno2/100.rp_filter": "net.ipv4.conf.eno2/100.rp_filter",
		"kernel":                           "kernel",
	} {
		if got := NormalizeSysctl(in); got != want {
			t.Errorf("NormalizeSysctl(%q) = %q, want %q", in, got, want)
		}
	}
}
