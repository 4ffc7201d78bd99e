package app

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/pkg/promrules"
	"github.com/minikubelet/minikubelet/pkg/simulate"
)

// ExitError carries the process exit code of a command that failed in a way the exit code
// tells apart (simulate: 1 when an expectation failed, 2 for an invalid scenario).
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

func newSimulateCommand(o options) *cobra.Command {
	var file, output, metricsOut, promtoolOut string
	var logs bool
	var scrapeInterval, evalInterval time.Duration
	var start string
	var ruleArgs []string
	cmd := &cobra.Command{
		Use:   "simulate -f SCENARIO",
		Short: "Replay a scenario on a virtual clock and check its expectations",
		Long: `simulate runs the whole node (same wiring and configuration handling as the daemon)
on a virtual clock: it applies the scenario's timed actions (manifest writes, runtime faults,
shutdown, kubelet restart), checks its timed expectations, and prints a timeline of every
notable change, one line per expectation (PASS/FAIL), and "N passed, M failed".

The same file gives byte-identical output on every run. Exit status: 0 when every
expectation passed, 1 when any failed, 2 when the file is invalid. See docs/simulate.md.`,
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				return &ExitError{Code: 2, Err: errors.New("flag -f/--file is required: the scenario file")}
			}
			if output != "text" && output != "json" {
				return &ExitError{Code: 2, Err: fmt.Errorf("flag -o/--output: %q is not text or json", output)}
			}
			if scrapeInterval < simulate.MinScrapeInterval {
				return &ExitError{Code: 2, Err: fmt.Errorf("flag --scrape-interval: %v is below the %v minimum", scrapeInterval, simulate.MinScrapeInterval)}
			}
			if metricsOut == "" && len(ruleArgs) == 0 && promtoolOut == "" && cmd.Flags().Changed("scrape-interval") {
				return &ExitError{Code: 2, Err: errors.New("flag --scrape-interval needs --metrics-out or --rules")}
			}
			if evalInterval <= 0 {
				return &ExitError{Code: 2, Err: fmt.Errorf("flag --evaluation-interval: %v must be positive", evalInterval)}
			}
			startTime := simulate.Epoch
			if start != "" {
				t, err := time.Parse(time.RFC3339, start)
				if err != nil {
					return &ExitError{Code: 2, Err: fmt.Errorf("flag --start: %q is not an RFC 3339 time such as 2024-01-01T00:00:00Z", start)}
				}
				// The runtime's timestamps count from the Unix epoch, where 0 means "unset".
				if t.Before(time.Unix(86400, 0)) {
					return &ExitError{Code: 2, Err: fmt.Errorf("flag --start: %s is before 1970-01-02: the runtime's timestamps would read as unset", start)}
				}
				startTime = t
			}
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			if !logs {
				// The timeline is the output; the kubelet's logs would drown it.
				ctx = klog.NewContext(ctx, logr.Discard())
				restore := quietKlog()
				defer restore()
			}
			if start != "" && promtoolOut != "" {
				return &ExitError{Code: 2, Err: errors.New("flags --start, --emit-promtool-test: a run that emits a promtool test starts at " + simulate.PromtoolStart.Format(time.RFC3339))}
			}
			if promtoolOut != "" {
				startTime = time.Time{} // simulate starts it at the Unix epoch
			}
			var metrics *metricsFile
			if metricsOut != "" {
				metrics = &metricsFile{path: metricsOut, interval: scrapeInterval}
			}
			rs := ruleSettings{args: ruleArgs, given: cmd.Flags().Changed("rules"), evalInterval: evalInterval,
				scrapeInterval: scrapeInterval, promtoolOut: promtoolOut}
			return runSimulate(ctx, file, output, startTime, metrics, rs, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "The scenario file (YAML). See docs/simulate.md.")
	cmd.Flags().StringVarP(&output, "output", "o", "text", "Output format: text or json.")
	cmd.Flags().StringVar(&metricsOut, "metrics-out", "", "Also write every metric series, sampled each --scrape-interval of virtual time, to this file as OpenMetrics with timestamps (for `promtool tsdb create-blocks-from openmetrics`). See docs/monitoring.md.")
	cmd.Flags().DurationVar(&scrapeInterval, "scrape-interval", simulate.DefaultScrapeInterval, "The virtual scrape interval of --metrics-out and of the series --rules evaluate.")
	cmd.Flags().StringSliceVar(&ruleArgs, "rules", nil, "Evaluate these Prometheus rule files (or directories of them; Prometheus rule files or PrometheusRule objects) over the run's series with Prometheus' engine, every --evaluation-interval of virtual time: the alerts' transitions join the timeline, and alert expectations are checked. \"shipped\" names the rules of configs/prometheus/rules/, which a scenario with alert expectations evaluates when --rules is not given. See docs/simulate.md.")
	cmd.Flags().DurationVar(&evalInterval, "evaluation-interval", promrules.DefaultInterval, "The evaluation interval of the rule groups that set none (Prometheus' evaluation_interval).")
	cmd.Flags().StringVar(&promtoolOut, "emit-promtool-test", "", "Also write a `promtool test rules` file replaying the run: its series as input_series, and the alerts firing at every evaluation where an alert changed state. The run starts at 1970-01-01T01:00:00Z (promtool's series start at the Unix epoch; those of the test are padded until then).")
	cmd.Flags().StringVar(&start, "start", "", "The virtual wall-clock time of T+0, RFC 3339 (default "+simulate.Epoch.Format(time.RFC3339)+"). It moves the metrics' timestamps, e.g. to backfill an incident as if it happened today.")
	cmd.Flags().BoolVar(&logs, "logs", false, "Also write the kubelet's logs to stderr (-v sets their verbosity).")
	cmd.Flags().AddFlagSet(klogFlags())
	return cmd
}

// quietKlog sends klog's global logger (used by code without a context logger) nowhere
// until the returned function restores it.
func quietKlog() func() {
	klog.SetLogger(logr.Discard())
	return func() { klog.ClearLogger() }
}

// metricsFile is where --metrics-out writes, and how often it samples.
type metricsFile struct {
	path     string
	interval time.Duration
}

func runSimulate(ctx context.Context, file, output string, start time.Time, metrics *metricsFile, rs ruleSettings, out io.Writer) error {
	info, err := os.Stat(file)
	if err != nil {
		return &ExitError{Code: 2, Err: fmt.Errorf("read scenario: %w", err)}
	}
	if info.Size() > simulate.MaxScenarioSize {
		return &ExitError{Code: 2, Err: fmt.Errorf("scenario %s: %d bytes is over the %d byte limit", file, info.Size(), simulate.MaxScenarioSize)}
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return &ExitError{Code: 2, Err: fmt.Errorf("read scenario: %w", err)}
	}
	sc, err := simulate.Parse(data)
	if err != nil {
		return &ExitError{Code: 2, Err: fileError(file, err)}
	}
	opts := simulate.Options{Start: start}
	var promtoolBuf strings.Builder
	if opts.Rules, err = rs.options(sc, &promtoolBuf); err != nil {
		return &ExitError{Code: 2, Err: err}
	}
	var buf *bufio.Writer
	if metrics != nil {
		f, err := os.Create(metrics.path)
		if err != nil {
			return &ExitError{Code: 2, Err: fmt.Errorf("flag --metrics-out: %w", err)}
		}
		defer f.Close()
		buf = bufio.NewWriterSize(f, 1<<20)
		opts.Metrics = &simulate.MetricsOptions{Out: buf, Interval: metrics.interval}
	}
	res, err := simulate.Run(ctx, sc, opts)
	if err == nil && buf != nil {
		if err = buf.Flush(); err != nil {
			err = fmt.Errorf("write %s: %w", metrics.path, err)
		}
	}
	if err != nil {
		if metrics != nil {
			os.Remove(metrics.path) // no half-written file to backfill
		}
		var inv *simulate.InvalidError
		if errors.As(err, &inv) {
			return &ExitError{Code: 2, Err: fileError(file, err)}
		}
		var rerr *simulate.RulesError
		if errors.As(err, &rerr) {
			return &ExitError{Code: 2, Err: err}
		}
		return &ExitError{Code: 1, Err: fmt.Errorf("scenario %s: %w", file, err)}
	}
	if rs.promtoolOut != "" {
		if err := rs.writePromtool(promtoolBuf.String()); err != nil {
			return &ExitError{Code: 1, Err: err}
		}
	}
	if output == "json" {
		err = res.WriteJSON(out)
	} else {
		err = res.WriteText(out)
	}
	if err != nil {
		return fmt.Errorf("write the result: %w", err)
	}
	if !res.OK() {
		return &ExitError{Code: 1, Err: fmt.Errorf("scenario %s: %d of %d expectations failed", file, res.Failed, res.Passed+res.Failed)}
	}
	return nil
}

func fileError(file string, err error) error {
	var inv *simulate.InvalidError
	if errors.As(err, &inv) {
		inv.File = file
		return inv
	}
	return err
}
