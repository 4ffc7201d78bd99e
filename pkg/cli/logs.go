package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	v1 "k8s.io/api/core/v1"
)

// logsCommand is `minikubelet logs POD [-c CONTAINER]`, kubectl logs against the daemon's
// /containerLogs (the daemon needs its debugging handlers, which the shipped config enables).
func (c *commands) logsCommand() *cobra.Command {
	var server, namespace, container string
	var follow, previous, timestamps bool
	var tail, limitBytes int64
	var since time.Duration
	cmd := &cobra.Command{
		Use:   "logs POD [-c CONTAINER]",
		Short: "Print a container's log, as kubectl logs",
		Long: `logs prints the log of a container of POD (its name as "get pods" shows it): the lines
its behaviour prints (logEvery, logLine) and the ones the simulator writes when it starts,
receives SIGTERM and exits. -c may be left out when the pod has one container.`,
		Args: cobra.ExactArgs(1),
		RunE: run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			var pods v1.PodList
			if err := c.get(ctx, server, "/pods", &pods); err != nil {
				return err
			}
			pod, err := findPod(pods.Items, namespace, args[0])
			if err != nil {
				return err
			}
			if container, err = defaultContainer(pod, container); err != nil {
				return err
			}
			q := url.Values{}
			if follow {
				q.Set("follow", "true")
			}
			if previous {
				q.Set("previous", "true")
			}
			if timestamps {
				q.Set("timestamps", "true")
			}
			if tail >= 0 {
				q.Set("tailLines", strconv.FormatInt(tail, 10))
			}
			if since > 0 {
				q.Set("sinceSeconds", strconv.FormatInt(int64((since+time.Second-1)/time.Second), 10))
			}
			if limitBytes > 0 {
				q.Set("limitBytes", strconv.FormatInt(limitBytes, 10))
			}
			cl, err := c.client(server)
			if err != nil {
				return err
			}
			if follow {
				// A followed log lasts as long as the container: no client timeout.
				hc := *c.opts.HTTPClient
				hc.Timeout = 0
				cl.http = &hc
			}
			path := fmt.Sprintf("/containerLogs/%s/%s/%s", url.PathEscape(pod.Namespace), url.PathEscape(pod.Name), url.PathEscape(container))
			if len(q) > 0 {
				path += "?" + q.Encode()
			}
			return cl.stream(ctx, path, cmd.OutOrStdout())
		}),
	}
	c.addServerFlag(cmd, &server)
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "", "the pod's namespace (default: the only pod of that name)")
	cmd.Flags().StringVarP(&container, "container", "c", "", "the container")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing new lines until the container exits")
	cmd.Flags().BoolVarP(&previous, "previous", "p", false, "the previous instance's log (after a restart)")
	cmd.Flags().BoolVar(&timestamps, "timestamps", false, "prefix each line with its RFC 3339 time")
	cmd.Flags().Int64Var(&tail, "tail", -1, "only the last N lines (-1: all)")
	cmd.Flags().DurationVar(&since, "since", 0, "only lines newer than this (e.g. 5m)")
	cmd.Flags().Int64Var(&limitBytes, "limit-bytes", 0, "at most this many bytes")
	return cmd
}

// defaultContainer is container, or the pod's only container when it is empty, as kubectl
// picks it.
func defaultContainer(pod *v1.Pod, container string) (string, error) {
	if container != "" {
		return container, nil
	}
	if len(pod.Spec.Containers) != 1 {
		names := make([]string, 0, len(pod.Spec.Containers))
		for _, ct := range pod.Spec.Containers {
			names = append(names, ct.Name)
		}
		return "", fmt.Errorf("a container name must be specified for pod %s, choose one of: [%s]", pod.Name, strings.Join(names, " "))
	}
	return pod.Spec.Containers[0].Name, nil
}

// stream copies the body of a GET to out as it arrives; other answers than 2xx become an
// *APIError as with do.
func (c *client) stream(ctx context.Context, path string, out io.Writer) error {
	u := *c.base
	p, rawQuery, _ := strings.Cut(path, "?")
	u.Path = strings.TrimSuffix(c.base.Path, "/") + p
	u.RawQuery = rawQuery
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return fmt.Errorf("building request GET %s: %w", path, err)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return &UnreachableError{Server: c.server, Reason: transportReason(err), Err: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return apiError(http.MethodGet, path, resp, data)
	}
	if _, err := io.Copy(out, resp.Body); err != nil && ctx.Err() == nil {
		return &UnreachableError{Server: c.server, Reason: transportReason(err), Err: err}
	}
	return nil
}
