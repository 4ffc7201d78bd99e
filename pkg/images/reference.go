package images

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Reference is an image reference normalised as containerd's CRI does before a pull
// (distribution/reference.ParseDockerRef): a Docker Hub name gets its domain and, when it
// has one path component, "library/"; a reference with neither tag nor digest gets
// "latest"; one with both keeps only the digest.
type Reference struct {
	Domain string // "docker.io", "registry.k8s.io", "localhost:5000"
	Path   string // "library/busybox", "e2e-test-images/agnhost"
	Tag    string // "" when Digest is set
	Digest string // "sha256:..." or ""
}

// Name is the repository: domain and path, without tag or digest.
func (r Reference) Name() string { return r.Domain + "/" + r.Path }

// String is the reference as containerd names it in its messages:
// "docker.io/library/busybox:latest", "registry.k8s.io/pause@sha256:...".
func (r Reference) String() string {
	if r.Digest != "" {
		return r.Name() + "@" + r.Digest
	}
	return r.Name() + ":" + r.Tag
}

// The errors of distribution/reference, worded as it words them.
var (
	errReferenceInvalidFormat = errors.New("invalid reference format")
	errNameContainsUppercase  = errors.New("invalid reference format: repository name must be lowercase")
	errNameEmpty              = errors.New("repository name must have at least one component")
	errNameTooLong            = errors.New("repository name must not be more than 255 characters")
)

// The reference grammar of distribution/reference (its regexp.go), which containerd uses.
const (
	alphanumeric    = `[a-z0-9]+`
	separator       = `(?:[._]|__|[-]+)`
	pathComponent   = alphanumeric + `(?:` + separator + alphanumeric + `)*`
	domainComponent = `(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])`
	ipv6Address     = `\[(?:[a-fA-F0-9:]+)\]`
	domainAndPort   = `(?:` + domainComponent + `(?:\.` + domainComponent + `)*|` + ipv6Address + `)(?::[0-9]+)?`
	tagPattern      = `[\w][\w.-]{0,127}`
	digestPattern   = `[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*[:][[:xdigit:]]{32,}`
	namePattern     = `(?:` + domainAndPort + `/)?` + pathComponent + `(?:/` + pathComponent + `)*`
)

var (
	referenceRegexp  = regexp.MustCompile(`^(` + namePattern + `)(?::(` + tagPattern + `))?(?:@(` + digestPattern + `))?$`)
	identifierRegexp = regexp.MustCompile(`^[a-f0-9]{64}$`)
	// hexLengths are the digest algorithms containerd accepts, with their hex lengths.
	hexLengths = map[string]int{"sha256": 64, "sha384": 96, "sha512": 128}
)

const (
	defaultDomain       = "docker.io"
	legacyDefaultDomain = "index.docker.io"
	officialRepoPrefix  = "library/"
	maxNameLength       = 255
)

// ParseReference normalises ref as containerd does before it pulls (ParseDockerRef), with
// the same errors for a malformed one.
func ParseReference(ref string) (Reference, error) {
	if identifierRegexp.MatchString(ref) {
		return Reference{}, fmt.Errorf("invalid repository name (%s), cannot specify 64-byte hexadecimal strings", ref)
	}
	domain, remainder := splitDockerDomain(ref)
	remote := remainder
	if i := strings.IndexRune(remainder, ':'); i >= 0 {
		remote = remainder[:i]
	}
	if strings.ToLower(remote) != remote {
		return Reference{}, fmt.Errorf("invalid reference format: repository name (%s) must be lowercase", remote)
	}
	r, err := parse(domain + "/" + remainder)
	if err != nil {
		return Reference{}, err
	}
	if r.Digest != "" {
		r.Tag = "" // ParseDockerRef keeps only the digest of a tagged and digested reference
	} else if r.Tag == "" {
		r.Tag = "latest"
	}
	return r, nil
}

// splitDockerDomain splits a name into its registry and path: the first component is a
// registry when it has a dot or a port, is "localhost", or has capitals; otherwise the
// name is on Docker Hub, whose one-component names are official images under "library/".
func splitDockerDomain(name string) (domain, remainder string) {
	i := strings.IndexRune(name, '/')
	if i == -1 || (!strings.ContainsAny(name[:i], ".:") && name[:i] != "localhost" && strings.ToLower(name[:i]) == name[:i]) {
		domain, remainder = defaultDomain, name
	} else {
		domain, remainder = name[:i], name[i+1:]
	}
	if domain == legacyDefaultDomain {
		domain = defaultDomain
	}
	if domain == defaultDomain && !strings.ContainsRune(remainder, '/') {
		remainder = officialRepoPrefix + remainder
	}
	return domain, remainder
}

// parse is distribution/reference.Parse of a name that already has its domain.
func parse(s string) (Reference, error) {
	m := referenceRegexp.FindStringSubmatch(s)
	if m == nil {
		switch {
		case s == "":
			return Reference{}, errNameEmpty
		case referenceRegexp.MatchString(strings.ToLower(s)):
			return Reference{}, errNameContainsUppercase
		}
		return Reference{}, errReferenceInvalidFormat
	}
	if len(m[1]) > maxNameLength {
		return Reference{}, errNameTooLong
	}
	domain, path, _ := strings.Cut(m[1], "/")
	r := Reference{Domain: domain, Path: path, Tag: m[2], Digest: m[3]}
	if r.Digest != "" {
		alg, hex, _ := strings.Cut(r.Digest, ":")
		n, ok := hexLengths[alg]
		switch {
		case !ok:
			return Reference{}, errors.New("unsupported digest algorithm")
		case len(hex) != n:
			return Reference{}, errors.New("invalid checksum digest length")
		case strings.ToLower(hex) != hex:
			return Reference{}, fmt.Errorf("invalid checksum digest format")
		}
	}
	return r, nil
}
