package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"

	"github.com/spf13/cobra"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"
)

// execCommand is `minikubelet exec POD [-c CONTAINER] [-i] -- COMMAND [ARGS...]`, kubectl
// exec against the daemon's secure port, with the SPDY protocol kubectl and the API server
// use. The secure port is found from the node's kubelet endpoint (GET /node on --server).
func (c *commands) execCommand() *cobra.Command {
	var server, namespace, container, token string
	var stdin bool
	cmd := &cobra.Command{
		Use:   "exec POD [-c CONTAINER] [-i] -- COMMAND [ARGS...]",
		Short: "Run a command in a container, as kubectl exec",
		Long: `exec runs COMMAND in a running container of POD (its name as "get pods" shows it)
through the daemon's secure port, and exits with the command's exit code. Containers run
a small table of simulated commands: echo, cat (stdin, /etc/hostname, mounted ConfigMaps),
env, printenv, hostname, date (on the node's clock), sleep, true, false, exit N and sh -c
over those; anything else exits 127 with "command not found" (docs/exec.md).
-i sends this program's standard input to the command.`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.ArgsLenAtDash() != 1 {
				cmd.SilenceUsage = false
				return errors.New("exec needs POD, then -- and the command: minikubelet exec POD -- COMMAND [ARGS...]")
			}
			return run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
				return c.exec(ctx, cmd, server, namespace, container, token, stdin, args[0], args[1:])
			})(cmd, args)
		},
	}
	c.addServerFlag(cmd, &server)
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "", "the pod's namespace (default: the only pod of that name)")
	cmd.Flags().StringVarP(&container, "container", "c", "", "the container (default: the only one)")
	cmd.Flags().BoolVarP(&stdin, "stdin", "i", false, "pass standard input to the command")
	cmd.Flags().StringVar(&token, "token", "", "bearer token for the secure port (when its authentication is the API server's webhook)")
	return cmd
}

func (c *commands) exec(ctx context.Context, cmd *cobra.Command, server, namespace, container, token string, stdin bool, podName string, command []string) error {
	var pods v1.PodList
	if err := c.get(ctx, server, "/pods", &pods); err != nil {
		return err
	}
	pod, err := findPod(pods.Items, namespace, podName)
	if err != nil {
		return err
	}
	if container, err = defaultContainer(pod, container); err != nil {
		return err
	}
	var node v1.Node
	if err := c.get(ctx, server, "/node", &node); err != nil {
		return err
	}
	secure, err := secureURL(server, node.Status.DaemonEndpoints.KubeletEndpoint.Port)
	if err != nil {
		return err
	}
	// The kubelet's query names (the API server translates pods/exec's stdin, stdout and
	// stderr into input, output and error).
	q := url.Values{"command": command, "output": {"1"}, "error": {"1"}}
	if stdin {
		q.Set("input", "1")
	}
	u := *secure
	u.Path = fmt.Sprintf("/exec/%s/%s/%s", url.PathEscape(pod.Namespace), url.PathEscape(pod.Name), url.PathEscape(container))
	u.RawQuery = q.Encode()
	// The daemon's certificate is self-signed unless configured: the secure port is reached
	// on the address the read-only port was, so the name is not checked.
	cfg := &rest.Config{Host: secure.String(), BearerToken: token, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
	ex, err := remotecommand.NewSPDYExecutor(cfg, "POST", &u)
	if err != nil {
		return err
	}
	opts := remotecommand.StreamOptions{Stdout: cmd.OutOrStdout(), Stderr: cmd.ErrOrStderr()}
	if stdin {
		opts.Stdin = cmd.InOrStdin()
	}
	err = ex.StreamWithContext(ctx, opts)
	var exit utilexec.CodeExitError
	if errors.As(err, &exit) {
		return &ExitError{Code: exit.Code, Err: fmt.Errorf("command terminated with exit code %d", exit.Code)}
	}
	if err != nil {
		return fmt.Errorf("exec in %s/%s container %s via %s: %w", pod.Namespace, pod.Name, container, secure.Host, err)
	}
	return nil
}

// secureURL is the secure port on --server's host.
func secureURL(server string, port int32) (*url.URL, error) {
	if port <= 0 {
		return nil, fmt.Errorf("the node at %s reports no kubelet endpoint port", server)
	}
	base, err := url.Parse(server)
	if err != nil || base.Host == "" {
		return nil, fmt.Errorf("--server %q: not a URL", server)
	}
	return &url.URL{Scheme: "https", Host: net.JoinHostPort(base.Hostname(), strconv.Itoa(int(port)))}, nil
}
