package images

import (
	"fmt"
	"net"
	"path"
	"slices"
	"strings"
)

// PullError is a pull that fails, with the message containerd's CRI plugin gives (what the
// kubelet shows in its Failed event and the container's waiting message).
type PullError struct {
	// Code is the gRPC status code the CRI call fails with: "NotFound" when the registry
	// answers that the manifest does not exist, "Unknown" for anything else (containerd
	// passes other errors through errdefs.ToGRPC, which maps them to Unknown).
	Code    string
	Message string
}

func (e *PullError) Error() string { return e.Message }

// gRPC codes of PullError.
const (
	CodeNotFound = "NotFound"
	CodeUnknown  = "Unknown"
)

// reservedTLDs are top-level domains no public DNS answers for (RFC 2606 and 6761, mDNS's
// .local, and the private-use .internal and .home.arpa): a registry there never resolves
// from a node.
var reservedTLDs = []string{"test", "example", "invalid", "localhost", "local", "internal", "home.arpa"}

// exampleDomains answer for their apex only: names under them do not resolve.
var exampleDomains = []string{"example.com", "example.net", "example.org"}

// Exists says what a registry says when a node pulls ref: nil if the image can be
// pulled, else a *PullError with containerd's message. The rules, in order:
//
//  1. A malformed reference fails to parse (containerd's ParseDockerRef errors).
//  2. The registry host must resolve. "localhost" and IP addresses resolve, but no
//     registry listens in the simulated world: connection refused. A host without a dot,
//     one under a reserved TLD (.test, .example, .invalid, .localhost, .local, .internal,
//     .home.arpa) or under example.com/.net/.org, and an unknown host under a registry's
//     own domain (invalid.registry.k8s.io) do not resolve: "no such host". Any other
//     host with a dot resolves (a registry the catalogue knows nothing of).
//  3. A private repository (gcr.io/authenticated-image-pulling/..., as the e2e "private
//     registry without secret" spec pulls) refuses anonymous pulls: 403 Forbidden.
//  4. On Docker Hub a one-component name (nginx, library/nginx) exists only if it is a
//     Docker Official Image; any other is "pull access denied". Names under a user or
//     organisation (bitnami/redis) exist: the catalogue cannot know them.
//  5. A registry that lists its repositories (registry.k8s.io) has no others: not found.
//  6. A catalogued repository has only the tags its entries list: another tag is not
//     found. An uncatalogued one has every tag; a digest always exists (the catalogue
//     knows no digests).
//
// Exists is safe for concurrent use.
func Exists(ref string) error { return theCatalogue.exists(ref, false) }

// ExistsWithAuth is Exists for a pull with credentials for the registry: a private
// repository then serves (the simulator cannot check them; any credentials for the
// registry are taken as the right ones).
func ExistsWithAuth(ref string, authenticated bool) error {
	return theCatalogue.exists(ref, authenticated)
}

func (c *catalogue) exists(ref string, authenticated bool) error {
	r, err := ParseReference(ref)
	if err != nil {
		return &PullError{Code: CodeUnknown, Message: fmt.Sprintf("failed to parse image reference %q: %v", ref, err)}
	}
	full := r.String()
	fail := func(code, reason string) error {
		return &PullError{Code: code, Message: fmt.Sprintf("failed to pull and unpack image %q: failed to resolve reference %q: %s", full, full, reason)}
	}
	version := r.Tag
	if r.Digest != "" {
		version = r.Digest
	}
	url := fmt.Sprintf("https://%s/v2/%s/manifests/%s", c.endpoint(r.Domain), r.Path, version)
	host, port := splitHostPort(r.Domain)
	switch c.resolve(host) {
	case unresolved:
		return fail(CodeUnknown, fmt.Sprintf("failed to do request: Head %q: dial tcp: lookup %s: no such host", url, host))
	case refused:
		if port == "" {
			port = "443"
		}
		addr := strings.Trim(host, "[]")
		if addr == "localhost" {
			addr = "127.0.0.1"
		}
		return fail(CodeUnknown, fmt.Sprintf("failed to do request: Head %q: dial tcp %s: connect: connection refused", url, net.JoinHostPort(addr, port)))
	}
	reg := c.registryFor(r.Domain)
	if reg != nil && matchAny(reg.Private, r.Path) && !authenticated {
		return fail(CodeUnknown, fmt.Sprintf("unexpected status from HEAD request to %s: 403 Forbidden", url))
	}
	if reg != nil && reg.Host == defaultDomain {
		// Docker Hub's one-component names live under library/ (a name given through
		// registry-1.docker.io is not normalised: without library/ it names nothing).
		name, official := strings.CutPrefix(r.Path, officialRepoPrefix)
		if official && !c.official[name] || !strings.Contains(r.Path, "/") {
			return fail(CodeUnknown, "pull access denied, repository does not exist or may require authorization: server message: insufficient_scope: authorization failed")
		}
	}
	catalogued := c.catalogued(r)
	if reg != nil && len(reg.Repositories) > 0 && !catalogued && !matchAny(reg.Repositories, r.Path) {
		return fail(CodeNotFound, full+": not found")
	}
	if catalogued && r.Digest == "" && c.entryFor(r) == nil {
		return fail(CodeNotFound, full+": not found")
	}
	return nil
}

// endpoint is the host containerd sends a registry's API requests to: Docker Hub's API is
// registry-1.docker.io.
func (c *catalogue) endpoint(domain string) string {
	if domain == defaultDomain {
		return "registry-1.docker.io"
	}
	return domain
}

// registryFor is the registry record of host (by its main host or an alias), or nil.
func (c *catalogue) registryFor(host string) *registry {
	for i := range c.Registries {
		r := &c.Registries[i]
		if r.Host == host || slices.Contains(r.Aliases, host) {
			return r
		}
	}
	return nil
}

type resolution uint8

const (
	resolved   resolution = iota
	unresolved            // no such host
	refused               // resolves to this machine or a literal address: nothing listens
)

// resolve says whether a registry host name resolves from a node (rule 2 of Exists).
func (c *catalogue) resolve(host string) resolution {
	h := strings.ToLower(strings.Trim(host, "[]"))
	if h == "localhost" || net.ParseIP(h) != nil {
		return refused
	}
	if !strings.Contains(h, ".") {
		return unresolved
	}
	for _, tld := range reservedTLDs {
		if strings.HasSuffix(h, "."+tld) {
			return unresolved
		}
	}
	for _, d := range exampleDomains {
		if strings.HasSuffix(h, "."+d) {
			return unresolved
		}
	}
	known := c.knownHost(h)
	for _, r := range c.Registries {
		if r.Domain != "" && (h == r.Domain || strings.HasSuffix(h, "."+r.Domain)) && !known {
			return unresolved
		}
	}
	return resolved
}

// knownHost reports whether any registry record names h as its host, an alias or a
// resolvable name.
func (c *catalogue) knownHost(h string) bool {
	for _, r := range c.Registries {
		if r.Host == h || slices.Contains(r.Aliases, h) || slices.Contains(r.Resolvable, h) {
			return true
		}
	}
	return false
}

// splitHostPort splits "host:port" ("[::1]:5000"); a domain without a port has port "".
func splitHostPort(domain string) (host, port string) {
	if h, p, err := net.SplitHostPort(domain); err == nil {
		return h, p
	}
	return domain, ""
}

func matchAny(patterns []string, name string) bool {
	for _, p := range patterns {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

// official reports whether name (a one-component Docker Hub name such as "nginx") is one
// of Docker's Official Images.
func official(name string) bool { return theCatalogue.official[name] }
