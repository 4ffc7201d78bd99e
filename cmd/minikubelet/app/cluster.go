package app

import (
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/pkg/localcluster"
)

func newClusterCommand(o options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Create, list and delete a local Kubernetes v1.37 cluster whose nodes are minikubelet nodes",
		Long: `A whole cluster on this machine, on 127.0.0.1: etcd (from PATH), kube-apiserver,
kube-controller-manager and kube-scheduler v1.37 (from --bin-dir, PATH or ./_output/bin, which
make controlplane fills), with a CA and certificates of their own, and minikubelet nodes that
join by TLS bootstrap with a bootstrap token, each with its own system:node:<name> identity.
State lives in the user's cache directory (minikubelet/clusters/<name>), nothing in /etc or
/var. See docs/cluster.md.`,
	}
	root := ""
	cmd.PersistentFlags().StringVar(&root, "root", "", "Where clusters keep their state (default: <user cache dir>/minikubelet/clusters).")
	rootDir := func() (string, error) {
		if root != "" {
			return root, nil
		}
		return localcluster.DefaultRoot()
	}

	create := localcluster.Options{}
	createCmd := &cobra.Command{
		Use:   "create [--nodes N] [--name NAME] [--kubernetes-version v1.3x]",
		Short: "Start a control plane and N minikubelet nodes, and write a kubeconfig",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, err := rootDir()
			if err != nil {
				return err
			}
			self, err := os.Executable()
			if err != nil {
				return fmt.Errorf("find the minikubelet binary the nodes run: %w", err)
			}
			opts := create
			opts.Root, opts.Self, opts.Out, opts.Clock = r, self, cmd.OutOrStdout(), clock.RealClock{}
			if opts.Nodes < 1 {
				return fmt.Errorf("--nodes %d: must be at least 1", opts.Nodes)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Creating cluster %q with %d node(s) in %s\n", nameOr(opts.Name), opts.Nodes, r)
			_, err = localcluster.Create(cmd.Context(), opts)
			return err
		},
	}
	createCmd.Flags().StringVar(&create.Name, "name", "minikubelet", "The cluster's name; its nodes are <name>-worker (or <name>-worker-<i> with several).")
	createCmd.Flags().IntVar(&create.Nodes, "nodes", 1, "How many minikubelet nodes join (one process runs them all).")
	createCmd.Flags().StringVar(&create.BinDir, "bin-dir", "", "A directory with kube-apiserver, kube-controller-manager, kube-scheduler (and etcd), searched before PATH and ./_output/bin.")
	createCmd.Flags().StringVar(&create.KubernetesVersion, "kubernetes-version", "", "The control plane's release, v1.34 to v1.37 (v1.35.4 also reads as v1.35): its programs are looked for in --bin-dir, PATH, ./_output/<release>/bin (make controlplane KUBE_VERSION=...) and ./_output/bin, and the nodes emulate it. Default: the first control plane found, and nodes of its release.")
	createCmd.Flags().IntVar(&create.APIPort, "api-port", 0, "The API server's port on 127.0.0.1; 0 picks a free one.")
	createCmd.Flags().DurationVar(&create.Timeout, "wait", 0, "How long to wait for each part (default 2m).")

	name := ""
	deleteCmd := &cobra.Command{
		Use:   "delete [--name NAME]",
		Short: "Stop every process of a cluster and remove its state",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, err := rootDir()
			if err != nil {
				return err
			}
			return localcluster.Delete(r, name, clock.RealClock{}, cmd.OutOrStdout())
		},
	}
	deleteCmd.Flags().StringVar(&name, "name", "minikubelet", "The cluster to delete.")

	listCmd := &cobra.Command{
		Use:   "list",
		Short: "List the clusters, their nodes and whether their processes run",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, err := rootDir()
			if err != nil {
				return err
			}
			clusters, err := localcluster.List(r)
			if err != nil {
				return err
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 3, ' ', 0)
			fmt.Fprintln(w, "NAME\tVERSION\tNODES\tPROCESSES\tSERVER\tKUBECONFIG")
			for _, c := range clusters {
				fmt.Fprintf(w, "%s\t%s\t%d\t%d/%d running\t%s\t%s\n", c.Name, orUnknown(c.ControlPlaneVersion), len(c.Nodes), c.Running, len(c.Processes), c.Server, c.Kubeconfig)
			}
			return w.Flush()
		},
	}
	cmd.AddCommand(createCmd, deleteCmd, listCmd)
	return cmd
}

func nameOr(n string) string {
	if n == "" {
		return "minikubelet"
	}
	return n
}

// orUnknown is a cluster's version as list shows it: a cluster created before versions
// were recorded has none.
func orUnknown(v string) string {
	if v == "" {
		return "<unknown>"
	}
	return v
}
