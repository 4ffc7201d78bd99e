package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/yaml"

	"github.com/minikubelet/minikubelet/pkg/runtime/fault"
)

// DefaultServer is the daemon's default read-only address.
const DefaultServer = "http://127.0.0.1:10255"

// Options configures the client commands.
type Options struct {
	// Clock gives "now" for ages; default the real clock.
	Clock clock.PassiveClock
	// HTTPClient talks to the daemon; default a client with a 10s timeout.
	HTTPClient *http.Client
	// DefaultServer is the --server default; default DefaultServer.
	DefaultServer string
}

// ExitError is returned by a client command that failed after it started running. It is
// not printed by the command: the program's main prints every returned error once (one
// line on stderr) and exits with ExitCode.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

// ExitCode maps a command error to the process exit code: 0 for nil, ExitError.Code, else 1.
func ExitCode(err error) int {
	if err == nil {
		return 0
	}
	var e *ExitError
	if errors.As(err, &e) {
		return e.Code
	}
	return 1
}

// AddCommands adds get, describe, fault and logs to root.
func AddCommands(root *cobra.Command, opts Options) {
	root.AddCommand(NewCommands(opts)...)
}

// NewCommands returns the get, describe, fault and logs commands.
func NewCommands(opts Options) []*cobra.Command {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	if opts.DefaultServer == "" {
		opts.DefaultServer = DefaultServer
	}
	c := &commands{opts: opts}
	return []*cobra.Command{c.getCommand(), c.describeCommand(), c.faultCommand(), c.logsCommand(), c.execCommand()}
}

type commands struct {
	opts Options
}

func (c *commands) addServerFlag(cmd *cobra.Command, server *string) {
	cmd.PersistentFlags().StringVar(server, "server", c.opts.DefaultServer, "address of the minikubelet daemon's HTTP API")
}

// run wraps a command body: a failure is returned as an ExitError for main to print, and
// cobra prints neither the error (main does, once) nor the usage (the arguments were
// fine; the work failed).
func run(fn func(ctx context.Context, cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		err := fn(cmd.Context(), cmd, args)
		if err == nil {
			return nil
		}
		cmd.SilenceErrors = true
		cmd.SilenceUsage = true
		var exit *ExitError
		if errors.As(err, &exit) {
			return exit // its own code (exec: the command's)
		}
		return &ExitError{Code: 1, Err: err}
	}
}

// parentRunE runs a parent command (get, describe, fault): alone it shows its help; with an
// unknown subcommand ("get foo") it fails naming the choices, rather than printing the
// help and exiting 0 as cobra does for a command without a Run.
func parentRunE(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return cmd.Help()
	}
	var names []string
	for _, sub := range cmd.Commands() {
		if sub.IsAvailableCommand() {
			names = append(names, sub.Name())
		}
	}
	cmd.SilenceUsage = true
	return fmt.Errorf("unknown command %q for %q (one of: %s)", args[0], cmd.CommandPath(), strings.Join(names, ", "))
}

func checkOutput(format string) error {
	switch format {
	case "", "json", "yaml":
		return nil
	}
	return fmt.Errorf("unknown output format %q (use json or yaml)", format)
}

// printObject prints v as indented JSON or as YAML.
func printObject(out io.Writer, format string, v any) error {
	data, err := json.MarshalIndent(v, "", "    ")
	if err != nil {
		return fmt.Errorf("encoding the output: %w", err)
	}
	if format == "yaml" {
		if data, err = yaml.JSONToYAML(data); err != nil {
			return fmt.Errorf("encoding the output as YAML: %w", err)
		}
		_, err = out.Write(data)
		return err
	}
	_, err = fmt.Fprintf(out, "%s\n", data)
	return err
}

func (c *commands) client(server string) (*client, error) {
	return newClient(server, c.opts.HTTPClient)
}

// get fetches one JSON document from the daemon at server into into.
func (c *commands) get(ctx context.Context, server, path string, into any) error {
	cl, err := c.client(server)
	if err != nil {
		return err
	}
	return cl.getJSON(ctx, path, into)
}

func (c *commands) getCommand() *cobra.Command {
	var server string
	cmd := &cobra.Command{
		Use:   "get (pods | node | events)",
		Short: "Display the daemon's pods, node or events (like kubectl get)",
		Args:  cobra.ArbitraryArgs,
		RunE:  parentRunE,
	}
	c.addServerFlag(cmd, &server)

	var podsOut, namespace string
	var allNamespaces bool
	pods := &cobra.Command{
		Use:     "pods",
		Aliases: []string{"pod", "po"},
		Short:   "List the pods with NAME READY STATUS RESTARTS AGE",
		Args:    cobra.NoArgs,
		RunE: run(func(ctx context.Context, cmd *cobra.Command, _ []string) error {
			if err := checkOutput(podsOut); err != nil {
				return err
			}
			var list v1.PodList
			if err := c.get(ctx, server, "/pods", &list); err != nil {
				return err
			}
			if namespace != "" {
				kept := list.Items[:0]
				for _, p := range list.Items {
					if p.Namespace == namespace {
						kept = append(kept, p)
					}
				}
				list.Items = kept
			}
			sortPods(list.Items, allNamespaces || podsOut != "")
			if podsOut != "" {
				return printObject(cmd.OutOrStdout(), podsOut, &list)
			}
			if len(list.Items) == 0 {
				fmt.Fprintln(cmd.ErrOrStderr(), "No resources found.")
				return nil
			}
			return printPodTable(cmd.OutOrStdout(), list.Items, c.opts.Clock.Now(), allNamespaces)
		}),
	}
	pods.Flags().StringVarP(&podsOut, "output", "o", "", "output format: json or yaml (default a table)")
	pods.Flags().StringVarP(&namespace, "namespace", "n", "", "only pods in this namespace (default all)")
	pods.Flags().BoolVarP(&allNamespaces, "all-namespaces", "A", false, "add a NAMESPACE column")

	var nodeOut string
	node := &cobra.Command{
		Use:     "node",
		Aliases: []string{"nodes", "no"},
		Short:   "Show the node (NAME STATUS ROLES AGE VERSION) and its conditions",
		Args:    cobra.MaximumNArgs(1),
		RunE: run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			if err := checkOutput(nodeOut); err != nil {
				return err
			}
			var n v1.Node
			if err := c.get(ctx, server, "/node", &n); err != nil {
				return err
			}
			if len(args) == 1 && args[0] != n.Name {
				return fmt.Errorf("node %q not found (this daemon runs node %q)", args[0], n.Name)
			}
			if nodeOut != "" {
				return printObject(cmd.OutOrStdout(), nodeOut, &n)
			}
			return printNodeTable(cmd.OutOrStdout(), &n, c.opts.Clock.Now())
		}),
	}
	node.Flags().StringVarP(&nodeOut, "output", "o", "", "output format: json or yaml (default a table)")

	var eventsOut string
	var limit int
	evs := &cobra.Command{
		Use:     "events",
		Aliases: []string{"event", "ev"},
		Short:   "List the recorded events, newest last",
		Args:    cobra.NoArgs,
		RunE: run(func(ctx context.Context, cmd *cobra.Command, _ []string) error {
			if err := checkOutput(eventsOut); err != nil {
				return err
			}
			if limit < 0 {
				return fmt.Errorf("--limit must not be negative, got %d", limit)
			}
			path := "/events"
			if limit > 0 {
				path = fmt.Sprintf("/events?limit=%d", limit)
			}
			var list v1.EventList
			if err := c.get(ctx, server, path, &list); err != nil {
				return err
			}
			if eventsOut != "" {
				return printObject(cmd.OutOrStdout(), eventsOut, &list)
			}
			if len(list.Items) == 0 {
				fmt.Fprintln(cmd.ErrOrStderr(), "No events found.")
				return nil
			}
			return printEventTable(cmd.OutOrStdout(), list.Items, c.opts.Clock.Now())
		}),
	}
	evs.Flags().StringVarP(&eventsOut, "output", "o", "", "output format: json or yaml (default a table)")
	evs.Flags().IntVar(&limit, "limit", 0, "only the newest N events (0: all)")

	cmd.AddCommand(pods, node, evs)
	return cmd
}

// findPod returns the pod called name (in namespace, or in any namespace when it is
// unique there).
func findPod(pods []v1.Pod, namespace, name string) (*v1.Pod, error) {
	var found []*v1.Pod
	for i := range pods {
		p := &pods[i]
		if p.Name == name && (namespace == "" || p.Namespace == namespace) {
			found = append(found, p)
		}
	}
	switch len(found) {
	case 0:
		if namespace != "" {
			return nil, fmt.Errorf("pod %q not found in namespace %q", name, namespace)
		}
		names := make([]string, 0, len(pods))
		for _, p := range pods {
			names = append(names, p.Name)
		}
		sort.Strings(names)
		if len(names) == 0 {
			return nil, fmt.Errorf("pod %q not found (the daemon runs no pods)", name)
		}
		return nil, fmt.Errorf("pod %q not found (pods: %s)", name, strings.Join(names, ", "))
	case 1:
		return found[0], nil
	}
	var ns []string
	for _, p := range found {
		ns = append(ns, p.Namespace)
	}
	return nil, fmt.Errorf("pod %q exists in several namespaces (%s): choose one with -n", name, strings.Join(ns, ", "))
}

func eventsAbout(events []v1.Event, kind, namespace, name string) []v1.Event {
	var out []v1.Event
	for _, e := range events {
		o := e.InvolvedObject
		if o.Kind == kind && o.Name == name && (kind == "Node" || o.Namespace == namespace) {
			out = append(out, e)
		}
	}
	return out
}

func (c *commands) describeCommand() *cobra.Command {
	var server string
	cmd := &cobra.Command{
		Use:   "describe (pod NAME | node)",
		Short: "Show details of a pod or the node (like kubectl describe)",
		Args:  cobra.ArbitraryArgs,
		RunE:  parentRunE,
	}
	c.addServerFlag(cmd, &server)

	var namespace string
	pod := &cobra.Command{
		Use:     "pod NAME",
		Aliases: []string{"pods", "po"},
		Short:   "Describe a pod: containers, states, conditions and its events",
		Args:    cobra.ExactArgs(1),
		RunE: run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			cl, err := c.client(server)
			if err != nil {
				return err
			}
			var pods v1.PodList
			if err := cl.getJSON(ctx, "/pods", &pods); err != nil {
				return err
			}
			p, err := findPod(pods.Items, namespace, args[0])
			if err != nil {
				return err
			}
			var events v1.EventList
			if err := cl.getJSON(ctx, "/events", &events); err != nil {
				return err
			}
			return describePod(cmd.OutOrStdout(), p, eventsAbout(events.Items, "Pod", p.Namespace, p.Name), c.opts.Clock.Now())
		}),
	}
	pod.Flags().StringVarP(&namespace, "namespace", "n", "", "namespace of the pod (default: any, if the name is unique)")

	node := &cobra.Command{
		Use:     "node [NAME]",
		Aliases: []string{"nodes", "no"},
		Short:   "Describe the node: conditions, lease, capacity, pods and its events",
		Args:    cobra.MaximumNArgs(1),
		RunE: run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			cl, err := c.client(server)
			if err != nil {
				return err
			}
			var n v1.Node
			if err := cl.getJSON(ctx, "/node", &n); err != nil {
				return err
			}
			if len(args) == 1 && args[0] != n.Name {
				return fmt.Errorf("node %q not found (this daemon runs node %q)", args[0], n.Name)
			}
			var lease *coordinationv1.Lease
			var l coordinationv1.Lease
			if err := cl.getJSON(ctx, "/lease", &l); err == nil {
				lease = &l
			} else {
				var apiErr *APIError
				if !errors.As(err, &apiErr) {
					return err
				}
			}
			var pods v1.PodList
			if err := cl.getJSON(ctx, "/pods", &pods); err != nil {
				return err
			}
			sortPods(pods.Items, true)
			var events v1.EventList
			if err := cl.getJSON(ctx, "/events", &events); err != nil {
				return err
			}
			return describeNode(cmd.OutOrStdout(), &n, lease, pods.Items, eventsAbout(events.Items, "Node", "", n.Name), c.opts.Clock.Now())
		}),
	}
	cmd.AddCommand(pod, node)
	return cmd
}

// FaultList is the body of GET /debug/faults.
type FaultList struct {
	Items []fault.Spec `json:"items"`
}

func faultDetails(f fault.Spec) string {
	var parts []string
	if f.Delay.Duration != 0 {
		parts = append(parts, "delay="+f.Delay.Duration.String())
	}
	if f.PerContainer.Duration != 0 {
		parts = append(parts, "perContainer="+f.PerContainer.Duration.String())
	}
	if f.Message != "" {
		parts = append(parts, fmt.Sprintf("message=%q", f.Message))
	}
	if f.Count != 0 {
		parts = append(parts, fmt.Sprintf("count=%d", f.Count))
	}
	if f.Rate != 0 {
		parts = append(parts, fmt.Sprintf("rate=%g", f.Rate))
	}
	if f.For.Duration != 0 {
		parts = append(parts, "for="+f.For.Duration.String())
	}
	if f.Condition != "" {
		parts = append(parts, "condition="+f.Condition)
	}
	if len(parts) == 0 {
		return "<none>"
	}
	return strings.Join(parts, " ")
}

// readFaultFile reads one fault from a JSON or YAML file ("-" for stdin), strictly.
func readFaultFile(path string, stdin io.Reader) (fault.Spec, error) {
	var data []byte
	var err error
	if path == "-" {
		data, err = io.ReadAll(stdin)
	} else {
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return fault.Spec{}, fmt.Errorf("reading fault file: %w", err)
	}
	var spec fault.Spec
	if err := yaml.UnmarshalStrict(data, &spec); err != nil {
		return fault.Spec{}, fmt.Errorf("fault file %s: %w", path, err)
	}
	return spec, nil
}

func (c *commands) faultCommand() *cobra.Command {
	var server string
	cmd := &cobra.Command{
		Use:   "fault (add | list | clear)",
		Short: "Inject, list and clear runtime faults (needs a daemon started with --enable-debugging-handlers)",
		Args:  cobra.ArbitraryArgs,
		RunE:  parentRunE,
	}
	c.addServerFlag(cmd, &server)

	var spec fault.Spec
	var file, addOut string
	add := &cobra.Command{
		Use:   "add (--method M --type T [flags] | -f FILE)",
		Short: "Inject one fault into the fake runtime",
		Example: `  minikubelet fault add --method ListPodSandbox --type hang
  minikubelet fault add --method '*' --type latency --delay 2s
  minikubelet fault add --method StartContainer --type error --message "no space left" --count 3
  minikubelet fault add --method Status --type notReady --condition NetworkReady
  minikubelet fault add --method ListContainers --type hang --for 1m
  minikubelet fault add -f fault.yaml`,
		Args: cobra.NoArgs,
		RunE: run(func(ctx context.Context, cmd *cobra.Command, _ []string) error {
			if err := checkOutput(addOut); err != nil {
				return err
			}
			s := spec
			if file != "" {
				for _, name := range []string{"method", "type", "delay", "per-container", "message", "count", "rate", "for", "condition"} {
					if cmd.Flags().Changed(name) {
						return fmt.Errorf("--%s cannot be combined with -f: put it in the file", name)
					}
				}
				var err error
				if s, err = readFaultFile(file, cmd.InOrStdin()); err != nil {
					return err
				}
			}
			if err := s.Validate(); err != nil {
				return fmt.Errorf("invalid fault: %w", err)
			}
			body, err := json.Marshal(s)
			if err != nil {
				return fmt.Errorf("encoding the fault: %w", err)
			}
			cl, err := c.client(server)
			if err != nil {
				return err
			}
			data, err := cl.do(ctx, http.MethodPost, "/debug/faults", bytes.NewReader(body))
			if err != nil {
				return err
			}
			var stored fault.Spec
			if err := json.Unmarshal(data, &stored); err != nil {
				return fmt.Errorf("decoding the answer of POST /debug/faults: %w", err)
			}
			if addOut != "" {
				return printObject(cmd.OutOrStdout(), addOut, stored)
			}
			line := fmt.Sprintf("fault %s added: %s %s", stored.ID, stored.Method, stored.Type)
			if d := faultDetails(stored); d != "<none>" {
				line += " " + d
			}
			fmt.Fprintln(cmd.OutOrStdout(), line)
			return nil
		}),
	}
	f := add.Flags()
	f.StringVar(&spec.Method, "method", "", `runtime method to break (a CRI method name, or "*" for all)`)
	f.StringVar((*string)(&spec.Type), "type", "", "fault type: latency, error, hang, notReady or streamError")
	f.DurationVar(&spec.Delay.Duration, "delay", 0, "latency: delay added to every matching call")
	f.DurationVar(&spec.PerContainer.Duration, "per-container", 0, "latency: extra delay per container the call touches")
	f.StringVar(&spec.Message, "message", "", `error: the error text (default "injected fault")`)
	f.IntVar(&spec.Count, "count", 0, "error, streamError: fire this many times, then retire (0: unlimited for error, 1 for streamError)")
	f.Float64Var(&spec.Rate, "rate", 0, "error: probability in (0,1] that a matching call fails")
	f.DurationVar(&spec.For.Duration, "for", 0, "hang: the longest a call blocks (0: until cleared)")
	f.StringVar(&spec.Condition, "condition", "", "notReady: RuntimeReady or NetworkReady")
	f.StringVarP(&file, "filename", "f", "", `read the fault from a JSON or YAML file ("-" for stdin)`)
	f.StringVarP(&addOut, "output", "o", "", "print the stored fault as json or yaml")

	var listOut string
	list := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls", "get"},
		Short:   "List the active faults",
		Args:    cobra.NoArgs,
		RunE: run(func(ctx context.Context, cmd *cobra.Command, _ []string) error {
			if err := checkOutput(listOut); err != nil {
				return err
			}
			var faults FaultList
			if err := c.get(ctx, server, "/debug/faults", &faults); err != nil {
				return err
			}
			if listOut != "" {
				return printObject(cmd.OutOrStdout(), listOut, faults)
			}
			if len(faults.Items) == 0 {
				fmt.Fprintln(cmd.ErrOrStderr(), "No faults injected.")
				return nil
			}
			w := newTableWriter(cmd.OutOrStdout())
			fmt.Fprintln(w, "ID\tMETHOD\tTYPE\tDETAILS")
			for _, f := range faults.Items {
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", f.ID, f.Method, f.Type, faultDetails(f))
			}
			return w.Flush()
		}),
	}
	list.Flags().StringVarP(&listOut, "output", "o", "", "output format: json or yaml (default a table)")

	clearCmd := &cobra.Command{
		Use:   "clear [ID]",
		Short: "Remove one fault, or all of them",
		Args:  cobra.MaximumNArgs(1),
		RunE: run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			cl, err := c.client(server)
			if err != nil {
				return err
			}
			if len(args) == 1 {
				if _, err := cl.do(ctx, http.MethodDelete, "/debug/faults/"+args[0], nil); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "fault %s cleared\n", args[0])
				return nil
			}
			data, err := cl.do(ctx, http.MethodDelete, "/debug/faults", nil)
			if err != nil {
				return err
			}
			var res struct {
				Cleared int `json:"cleared"`
			}
			if err := json.Unmarshal(data, &res); err != nil {
				return fmt.Errorf("decoding the answer of DELETE /debug/faults: %w", err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%d fault(s) cleared\n", res.Cleared)
			return nil
		}),
	}
	cmd.AddCommand(add, list, clearCmd)
	return cmd
}
