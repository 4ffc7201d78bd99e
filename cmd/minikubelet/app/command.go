package app

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/pkg/cli"
	"github.com/minikubelet/minikubelet/pkg/config"
	"github.com/minikubelet/minikubelet/pkg/featuregate"
	"github.com/minikubelet/minikubelet/pkg/features"
)

// options are what a command needs from its surroundings; tests replace them.
type options struct {
	// gate receives --feature-gates and the config file's featureGates.
	gate featuregate.MutableFeatureGate
	// out and errOut receive command output.
	out, errOut io.Writer
	// run starts the daemon once the configuration is loaded and valid.
	run func(ctx context.Context, cfg *config.Config) error
}

// NewCommand returns the minikubelet root command. Without a subcommand it runs the
// daemon; the flags are parsed by config.Load, not by cobra, because the kubelet's flag
// precedence needs the raw arguments twice.
func NewCommand() *cobra.Command {
	return newCommand(options{
		gate:   features.DefaultMutableFeatureGate,
		out:    os.Stdout,
		errOut: os.Stderr,
		run:    runDaemon,
	})
}

// subcommands lists every subcommand.
func subcommands(o options) []*cobra.Command {
	cmds := []*cobra.Command{
		newVersionCommand(o),
		newFeatureGatesCommand(o),
		newSimulateCommand(o),
		newClusterCommand(o),
	}
	// get, describe and fault: clients of a running daemon's HTTP API.
	return append(cmds, cli.NewCommands(cli.Options{})...)
}

func newCommand(o options) *cobra.Command {
	globals := klogFlags()
	cmd := &cobra.Command{
		Use:   "minikubelet [flags]",
		Short: "A miniature kubelet: the kubelet's control loops over an in-memory container runtime",
		Long: `minikubelet reproduces the kubelet's control loops (PLEG, syncLoop, pod workers, node
status) over an in-memory, CRI-shaped container runtime that can be broken on purpose.

Configuration comes, as for the kubelet, from built-in defaults, then the --config file
(a KubeletConfiguration and an optional SimulatorConfiguration document), then flags:
a flag always wins over the file, and --feature-gates is merged with the file's
featureGates key by key.`,
		// The kubelet parses flags itself (see config.Load); cobra only routes subcommands.
		DisableFlagParsing: true,
		Args:               cobra.ArbitraryArgs,
		SilenceUsage:       true,
		SilenceErrors:      true,
		CompletionOptions:  cobra.CompletionOptions{DisableDefaultCmd: true},
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := config.Load(args, o.gate, globals)
			if errors.Is(err, pflag.ErrHelp) {
				return cmd.Help()
			}
			if vr := (*config.VersionRequest)(nil); errors.As(err, &vr) {
				return printVersion(cmd.OutOrStdout(), vr.Release)
			}
			if err != nil {
				return err
			}
			logStartup(klog.FromContext(cmd.Context()), cfg)
			return o.run(cmd.Context(), cfg)
		},
	}
	cmd.SetOut(o.out)
	cmd.SetErr(o.errOut)
	// Registered for --help only; config.Load parses its own copy.
	cmd.Flags().AddFlagSet(config.NewFlagSet("minikubelet", o.gate.KnownFeatures()))
	cmd.Flags().AddFlagSet(globals)
	for _, sub := range subcommands(o) {
		cmd.AddCommand(sub)
	}
	return cmd
}

// klogFlags returns the klog flags the daemon exposes (-v and --vmodule, the ones the
// kubelet keeps), bound to klog's global settings.
func klogFlags() *pflag.FlagSet {
	goFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(goFlags)
	fs := pflag.NewFlagSet("klog", pflag.ContinueOnError)
	for _, name := range []string{"v", "vmodule"} {
		fs.AddGoFlag(goFlags.Lookup(name))
	}
	return fs
}

// logStartup logs the effective configuration and, once, the config file fields that
// have no effect in the simulator.
func logStartup(logger klog.Logger, cfg *config.Config) {
	// As the kubelet's first line (cmd/kubelet/app/server.go), of the emulated release.
	logger.Info("Kubelet version", "kubeletVersion", cfg.Simulator.Release().KubeletVersion())
	if data, err := json.Marshal(cfg); err != nil {
		// Logging must not stop the start.
		logger.Error(err, "Failed to encode the effective configuration for logging")
	} else {
		logger.Info("Effective configuration", "config", string(data))
	}
	if len(cfg.UnsimulatedFields) > 0 {
		klog.Warningf("Config file %s sets fields the simulator accepts but does not simulate (they have no effect): %s",
			cfg.ConfigFile, strings.Join(cfg.UnsimulatedFields, ", "))
	}
	if len(cfg.UnsimulatedFlags) > 0 {
		klog.Warningf("Kubelet flags the simulator accepts but does not simulate (they have no effect): %s",
			strings.Join(cfg.UnsimulatedFlags, ", "))
	}
	if len(cfg.UnsimulatedGates) > 0 {
		klog.Warningf("Feature gates the simulator accepts but does not simulate (they have no effect): %s",
			strings.Join(cfg.UnsimulatedGates, ", "))
	}
}
