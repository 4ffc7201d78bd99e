package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
)

// UnreachableError means the daemon could not be contacted at all.
type UnreachableError struct {
	Server string
	Reason string
	Err    error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("cannot reach minikubelet at %s: %s (is the daemon running? start it with \"make run\")", e.Server, e.Reason)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// APIError is an error answer of the daemon ({"error": "..."}).
type APIError struct {
	Method, Path string
	StatusCode   int
	Message      string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("%s %s: %s", e.Method, e.Path, e.Message)
}

type client struct {
	server string
	base   *url.URL
	http   *http.Client
}

func newClient(server string, hc *http.Client) (*client, error) {
	u, err := url.Parse(server)
	if err != nil {
		return nil, fmt.Errorf("invalid --server %q: %w", server, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("invalid --server %q: want http://HOST:PORT", server)
	}
	return &client{server: strings.TrimSuffix(server, "/"), base: u, http: hc}, nil
}

// do sends one request and returns the body of a 2xx answer; other answers become an
// *APIError, transport failures an *UnreachableError.
func (c *client) do(ctx context.Context, method, path string, body io.Reader) ([]byte, error) {
	u := *c.base
	u.Path = strings.TrimSuffix(u.Path, "/") + path
	if i := strings.IndexByte(path, '?'); i >= 0 {
		u.Path = strings.TrimSuffix(c.base.Path, "/") + path[:i]
		u.RawQuery = path[i+1:]
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return nil, fmt.Errorf("building request %s %s: %w", method, path, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, &UnreachableError{Server: c.server, Reason: transportReason(err), Err: err}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, &UnreachableError{Server: c.server, Reason: transportReason(err), Err: err}
	}
	if resp.StatusCode/100 != 2 {
		return nil, apiError(method, path, resp, data)
	}
	return data, nil
}

// apiError is the *APIError of a non-2xx answer: the daemon's {"error": ...} message, else
// the body, else the status.
func apiError(method, path string, resp *http.Response, data []byte) error {
	var e struct {
		Error string `json:"error"`
	}
	msg := strings.TrimSpace(string(data))
	if json.Unmarshal(data, &e) == nil && e.Error != "" {
		msg = e.Error
	}
	if msg == "" {
		msg = resp.Status
	}
	return &APIError{Method: method, Path: path, StatusCode: resp.StatusCode, Message: msg}
}

func (c *client) getJSON(ctx context.Context, path string, into any) error {
	data, err := c.do(ctx, http.MethodGet, path, nil)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, into); err != nil {
		return fmt.Errorf("decoding the answer of GET %s: %w", path, err)
	}
	return nil
}

// transportReason is the short cause of a failed connection ("connection refused").
func transportReason(err error) string {
	var dnsErr *net.DNSError
	var netErr net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.As(err, &dnsErr):
		return dnsErr.Error()
	case errors.As(err, &netErr) && netErr.Timeout():
		return "timed out"
	}
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		return urlErr.Err.Error()
	}
	return err.Error()
}
