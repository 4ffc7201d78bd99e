package agnhost

import (
	goflag "flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/minikubelet/minikubelet/pkg/shell"
)

// Version is what `agnhost --version` reports: the agnhost of Kubernetes v1.37's e2e
// images (test/utils/image/manifest.go: Agnhost 2.66.1).
const Version = "2.66.1"

// subcommand is one agnhost subcommand: its cobra command, built afresh for each run
// (flags bind to the run's own variables), or nil when it is not simulated.
type subcommand struct {
	use, short string
	build      func(r *run) *cobra.Command
}

// subcommands are agnhost 2.66.1's, in its registration order, with their upstream Use
// and Short (the root's help lists them). Those without a build function are not
// simulated (guestbook, nettest, webhook...): they wait to be stopped.
var subcommands = []subcommand{
	{"audit-proxy", "Listens on port 8080 for incoming audit events", nil},
	{"connect [host:port]", "Attempts a TCP, UDP or SCTP connection and returns useful errors", newConnect},
	{"crd-conversion-webhook", "Starts HTTP server on port 443 for testing CustomResourceConversionWebhook", nil},
	{"dns-suffix", "Prints the host's DNS suffix list", newDNSSuffix},
	{"dns-server-list", "Prints the host's DNS Server list", newDNSServerList},
	{"etc-hosts", "Prints the host's /etc/hosts file", newEtcHosts},
	{"entrypoint-tester", "Prints the args it's passed and exits", newEntrypointTester},
	{"fake-gitserver", "Fakes a git server", nil},
	{"fake-registry-server", "Starts a fake registry server for testing", nil},
	{"guestbook", "Creates a HTTP server with various endpoints representing a guestbook app", nil},
	{"inclusterclient", "Periodically poll the Kubernetes \"/healthz\" endpoint", nil},
	{"liveness", "Starts a server that is alive for 10 seconds", newLiveness},
	{"logs-generator", "Outputs lines of logs to stdout uniformly", newLogsGenerator},
	{"mounttest", "Creates files with given permissions and outputs FS type, owner, mode, permissions, contents of files", newMounttest},
	{"net", "Creates webserver or runner for various networking tests", nil},
	{"netexec", "Creates HTTP(S), UDP, and (optionally) SCTP servers with various endpoints", newNetexec},
	{"nettest", "Starts a tiny web server for checking networking connectivity", nil},
	{"no-snat-test", "Creates the /checknosnat and /whoami endpoints", nil},
	{"no-snat-test-proxy", "Creates a proxy for the /checknosnat endpoint", nil},
	{"pause", "Pauses the execution", newPause},
	{"porter", "Serves requested data on ports specified in ENV variables", newPorter},
	{"port-forward-tester", "Creates a TCP server that sends chunks of data", nil},
	{"resource-consumer-controller", "Starts a HTTP server that spreads requests around resource consumers", nil},
	{"serve-hostname", "Serves the hostname", newServeHostname},
	{"test-webserver", "Starts a simple HTTP fileserver", newTestWebserver},
	{"tcp-reset", "Serves on a tcp port and RST the connections received", nil},
	{"webhook", "Starts a HTTP server, useful for testing MutatingAdmissionWebhook and ValidatingAdmissionWebhook", nil},
	{"test-service-account-issuer-discovery", "Tests the ServiceAccountIssuerDiscovery feature", nil},
	{"grpc-health-checking", "Starts a simple grpc health checking endpoint", newGrpcHealthChecking},
	{"h2c-server", "Starts a simple HTTP/2 cleartext (h2c) server", nil},
	{"stress", "Lightweight compute resource stress utlity", nil},
	{"podcertificatesigner", "Sign PodCertificateRequests addressed to a given signer", nil},
	{"mtlsclient", "Client is configured to build mTLS with server", nil},
	{"mtlsserver", "Server is configured to build mTLS with client and echo client's spiffe identity", nil},
	{"nonewprivs", "Prints the UID of the running process", nil},
	{"external-metrics", "Starts an external metrics server for testing", nil},
}

func (s subcommand) name() string { return strings.Fields(s.use)[0] }

// Simulated reports whether the agnhost subcommand name does what upstream's does. The
// others run (so that a pod using them starts) but only wait to be stopped, as a server
// nobody connects to: a runtime may prefer not to simulate such a container at all.
func Simulated(name string) bool {
	i := slices.IndexFunc(subcommands, func(s subcommand) bool { return s.name() == name })
	return i >= 0 && subcommands[i].build != nil
}

// run is one execution of agnhost: its process and the status it exits with.
type run struct {
	p      *shell.Proc
	status int
}

// Program is the agnhost binary (a shell.Program; the image's /agnhost runs it).
// argv[1] is the subcommand; argv[0] is what it was started as (/agnhost, /agnhost-2).
func Program(p *shell.Proc) int {
	r := &run{p: p}
	root := r.root()
	if err := r.execute(root); err != nil {
		fmt.Fprintf(p.Stderr(), "Error: %v\n", err)
		return 1
	}
	return r.status
}

// root builds agnhost's root command as its main does.
func (r *run) root() *cobra.Command {
	root := &cobra.Command{Use: "app", Version: Version}
	for _, s := range subcommands {
		if s.build != nil {
			root.AddCommand(s.build(r))
		} else {
			root.AddCommand(r.notSimulated(s))
		}
	}
	return root
}

// execute is component-base's cli.Run, which agnhost's main calls: flags accept "_" for
// "-", the logging flags are added, a flag error prints the usage first, and the error
// itself is printed by the caller ("Error: ...", exit 1).
func (r *run) execute(root *cobra.Command) error {
	root.SetGlobalNormalizationFunc(wordSepNormalizeFunc)
	if !root.SilenceUsage {
		root.SilenceUsage = true
		root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
			c.SilenceUsage = false
			return err
		})
	}
	root.SilenceErrors = true
	addLogFlags(root.PersistentFlags())
	root.SetArgs(slices.Clone(r.p.Args()[1:]))
	root.SetIn(r.p.Stdin())
	root.SetOut(r.p.Stdout())
	root.SetErr(r.p.Stderr())
	return root.Execute()
}

// wordSepNormalizeFunc is cliflag.WordSepNormalizeFunc: --fs_type is --fs-type.
func wordSepNormalizeFunc(_ *pflag.FlagSet, name string) pflag.NormalizedName {
	return pflag.NormalizedName(strings.ReplaceAll(name, "_", "-"))
}

// addLogFlags adds the flags component-base's logs.AddFlags adds (-v, --vmodule,
// --log-flush-frequency), as Go flags converted the same way so that their help reads the
// same; they bind to this run's own variables, never to the simulator's klog.
func addLogFlags(fs *pflag.FlagSet) {
	var gfs goflag.FlagSet
	gfs.Duration("log-flush-frequency", 5*time.Second, "Maximum number of seconds between log flushes")
	gfs.Var(new(levelFlag), "v", "number for the log level verbosity")
	gfs.Var(new(moduleSpecFlag), "vmodule", "comma-separated list of pattern=N settings for file-filtered logging (only works for the default text log format)")
	gfs.VisitAll(func(f *goflag.Flag) {
		if fs.Lookup(f.Name) == nil {
			fs.AddFlag(pflag.PFlagFromGoFlag(f))
		}
	})
}

// levelFlag and moduleSpecFlag stand for klog's flag values, with the type names pflag
// shows for those in help ("-v, --v Level").
type levelFlag int32

func (l *levelFlag) String() string { return strconv.Itoa(int(*l)) }
func (l *levelFlag) Type() string   { return "Level" }
func (l *levelFlag) Set(s string) error {
	v, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return err
	}
	*l = levelFlag(v)
	return nil
}

type moduleSpecFlag struct{ s string }

func (m *moduleSpecFlag) String() string     { return m.s }
func (m *moduleSpecFlag) Type() string       { return "moduleSpec" }
func (m *moduleSpecFlag) Set(s string) error { m.s = s; return nil }

// notSimulated stands for a subcommand nobody simulates: it takes any arguments, says so
// on stderr and waits to be stopped, as a server that never answers.
func (r *run) notSimulated(s subcommand) *cobra.Command {
	return &cobra.Command{
		Use:                s.use,
		Short:              s.short,
		DisableFlagParsing: true,
		Run: func(cmd *cobra.Command, args []string) {
			fmt.Fprintf(r.p.Stderr(), "minikubelet: agnhost %s is not simulated; it waits to be stopped\n", s.name())
			for {
				r.p.Sleep(idleWake)
			}
		},
	}
}

// idleWake is how often a process that waits forever wakes to sleep again: waiting
// costs nothing, and a finite sleep never asks the simulation to jump to the far future.
const idleWake = 24 * time.Hour
