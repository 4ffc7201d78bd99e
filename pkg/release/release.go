package release

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/version"
)

// Release is one kubelet minor release a node can be. The zero value is not a release; use
// Newest, Parse or All.
type Release struct {
	minor int
	patch int // of the k8s.io/kubernetes tag the node reports and is compared with
}

// supported are the releases, oldest first: v1.37 and the three minors before it, which is
// every release a v1.37 API server accepts as a kubelet (the version skew policy: a kubelet
// at most three minors older than its API server, never newer). Each is the newest patch of
// k8s.io/kubernetes the module proxy serves, so that `make controlplane KUBE_VERSION` builds
// the control plane the node reports.
var supported = []Release{{34, 4}, {35, 4}, {36, 3}, {37, 2}}

// All returns the supported releases, oldest first.
func All() []Release { return append([]Release(nil), supported...) }

// Newest is the release a node is unless told otherwise: the simulator's reference.
func Newest() Release { return supported[len(supported)-1] }

// Oldest is the oldest release a node can emulate.
func Oldest() Release { return supported[0] }

// Parse reads "1.35" or "v1.35". A patch ("1.35.2") is refused: a node emulates a minor
// release, as the control plane's --emulated-version does, and reports that release's patch.
func Parse(s string) (Release, error) {
	parts := strings.Split(strings.TrimPrefix(strings.TrimSpace(s), "v"), ".")
	if len(parts) == 3 {
		return Release{}, fmt.Errorf("%q: give the minor release only (%s.%s), not a patch", s, parts[0], parts[1])
	}
	m, err := strconv.Atoi(parts[len(parts)-1])
	if len(parts) != 2 || parts[0] != "1" || err != nil || strings.ContainsAny(parts[1], "+-") {
		return Release{}, fmt.Errorf("%q: want a kubelet release as 1.MINOR, one of %s", s, list())
	}
	for _, r := range supported {
		if r.minor == m {
			return r, nil
		}
	}
	return Release{}, fmt.Errorf("%q: the simulator emulates the kubelet releases %s (a cluster accepts a kubelet up to three minors older than its API server)", s, list())
}

// list is "1.34, 1.35, 1.36 and 1.37".
func list() string {
	names := make([]string, len(supported))
	for i, r := range supported {
		names[i] = r.String()
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// IsZero reports whether r is the zero value (no release chosen).
func (r Release) IsZero() bool { return r.minor == 0 }

// String is the release as --emulated-version takes it: "1.35".
func (r Release) String() string { return "1." + strconv.Itoa(r.minor) }

// Minor is the release's minor version (35 for 1.35).
func (r Release) Minor() int { return r.minor }

// KubeletVersion is what the node reports in status.nodeInfo.kubeletVersion and what
// `minikubelet version` prints: "v1.35.4".
func (r Release) KubeletVersion() string { return fmt.Sprintf("v1.%d.%d", r.minor, r.patch) }

// Version is the release as feature gates take it (major.minor).
func (r Release) Version() *version.Version { return version.MajorMinor(1, uint(r.minor)) }

// Before reports whether r is older than 1.minor.
func (r Release) Before(minor int) bool { return r.minor < minor }
