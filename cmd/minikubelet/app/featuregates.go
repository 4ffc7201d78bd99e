package app

import (
	"errors"
	"fmt"
	"sort"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/minikubelet/minikubelet/pkg/config"
	"github.com/minikubelet/minikubelet/pkg/featuregate"
	"github.com/minikubelet/minikubelet/pkg/features"
)

func newFeatureGatesCommand(o options) *cobra.Command {
	globals := klogFlags()
	cmd := &cobra.Command{
		Use:   "feature-gates [--config FILE] [--feature-gates KEY=BOOL,...]",
		Short: "Print every feature gate with its stage, default and the value the daemon would use",
		Long: `Print every feature gate of kubelet v1.37 (or of the release --emulated-version or the
file's emulatedVersion names) with its stage, default, whether it is locked,
the value the daemon would run with given the same --config and flags (same precedence: the
file's featureGates, then --feature-gates on top, key by key), and whether the simulator
models it (the others are accepted as the kubelet accepts them, and change nothing). The
whole configuration is validated, so errors that would stop the daemon are reported here too.`,
		DisableFlagParsing: true,
		Args:               cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := config.Load(args, o.gate, globals); err != nil {
				if errors.Is(err, pflag.ErrHelp) {
					return cmd.Help()
				}
				return err
			}
			return printFeatureGates(cmd, o.gate)
		},
	}
	cmd.Flags().AddFlagSet(config.NewFlagSet("feature-gates", o.gate.KnownFeatures()))
	cmd.Flags().AddFlagSet(globals)
	return cmd
}

// printFeatureGates writes the table. The AllAlpha/AllBeta switches are not features and
// are left out.
func printFeatureGates(cmd *cobra.Command, gate featuregate.MutableFeatureGate) error {
	all := gate.GetAll()
	names := make([]string, 0, len(all))
	for name := range all {
		if name == "AllAlpha" || name == "AllBeta" {
			continue
		}
		names = append(names, string(name))
	}
	sort.Strings(names)

	w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 3, ' ', 0)
	fmt.Fprintln(w, "NAME\tSTAGE\tDEFAULT\tLOCKED\tENABLED\tSIMULATED")
	for _, name := range names {
		spec := all[featuregate.Feature(name)]
		stage := string(spec.PreRelease)
		if spec.PreRelease == featuregate.GA {
			stage = "GA"
		}
		fmt.Fprintf(w, "%s\t%s\t%t\t%t\t%t\t%t\n", name, stage, spec.Default, spec.LockToDefault,
			gate.Enabled(featuregate.Feature(name)), features.Simulated(featuregate.Feature(name)))
	}
	return w.Flush()
}
