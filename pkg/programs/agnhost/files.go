package agnhost

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// newEtcHosts is `agnhost etc-hosts`: it prints /etc/hosts (the kubelet's, with the pod's
// hostAliases) and exits, as upstream's, which the hostAliases specs read back.
func newEtcHosts(r *run) *cobra.Command {
	return &cobra.Command{
		Use:   "etc-hosts",
		Short: "Prints the host's /etc/hosts file",
		Long:  "Prints the \"effective\" /etc/hosts file.",
		Run: func(cmd *cobra.Command, args []string) {
			data, err := r.p.FS().ReadFile("/etc/hosts")
			if err != nil {
				goFatal(r.p, "open /etc/hosts: %v", goErrno(err))
			}
			fmt.Fprint(r.p.Stdout(), string(data))
			r.p.Exit(0)
		},
	}
}

// resolvConf reads the search list and nameservers of /etc/resolv.conf.
func resolvConf(r *run) (search, servers []string) {
	data, err := r.p.FS().ReadFile("/etc/resolv.conf")
	if err != nil {
		goFatal(r.p, "open /etc/resolv.conf: %v", goErrno(err))
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		switch f[0] {
		case "search":
			search = f[1:]
		case "nameserver":
			servers = append(servers, f[1])
		}
	}
	return search, servers
}

// newDNSSuffix is `agnhost dns-suffix`: the search list of /etc/resolv.conf, joined by
// commas, as upstream prints it.
func newDNSSuffix(r *run) *cobra.Command {
	return &cobra.Command{
		Use:   "dns-suffix",
		Short: "Prints the host's DNS suffix list",
		Long:  "Prints the DNS suffixes of this host.",
		Run: func(cmd *cobra.Command, args []string) {
			search, _ := resolvConf(r)
			fmt.Fprint(r.p.Stdout(), strings.Join(search, ","))
			r.p.Exit(0)
		},
	}
}

// newDNSServerList is `agnhost dns-server-list`: the nameservers of /etc/resolv.conf.
func newDNSServerList(r *run) *cobra.Command {
	return &cobra.Command{
		Use:   "dns-server-list",
		Short: "Prints the host's DNS Server list",
		Long:  "Prints the DNS Server list of this host.",
		Run: func(cmd *cobra.Command, args []string) {
			_, servers := resolvConf(r)
			fmt.Fprint(r.p.Stdout(), strings.Join(servers, ","))
			r.p.Exit(0)
		},
	}
}
