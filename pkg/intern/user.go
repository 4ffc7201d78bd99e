package intern

import (
	"encoding/binary"
	"slices"
	"sync"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/pkg/cri"
)

// MaxContainerUsers bounds the table of container users, as MaxResourceLists does lists.
const MaxContainerUsers int64 = 4096

// Every container's status reports who its process runs as (status.containerStatuses[].user),
// and a template's containers run as the same user: shared, the 10,000 pods of a node hold
// one copy instead of 20,000 of 80 bytes.
var (
	containerUsers     sync.Map // canonical key -> *v1.ContainerUser
	containerUsersHeld atomic.Int64
)

// ContainerUser returns the API's form of a runtime's container user (upstream's
// convertContainerStatusUser), shared with every caller that asked for an equal one: treat
// it as read-only. nil stays nil. Safe for concurrent use.
func ContainerUser(u *cri.ContainerUser) *v1.ContainerUser {
	if u == nil {
		return nil
	}
	b := make([]byte, 0, 2*binary.MaxVarintLen64+len(u.SupplementalGroups)*4)
	b = binary.AppendVarint(binary.AppendVarint(b, u.UID), u.GID)
	for _, g := range u.SupplementalGroups {
		b = binary.AppendVarint(b, g)
	}
	key := string(b)
	if shared, ok := containerUsers.Load(key); ok {
		return shared.(*v1.ContainerUser)
	}
	user := &v1.ContainerUser{Linux: &v1.LinuxContainerUser{
		UID:                u.UID,
		GID:                u.GID,
		SupplementalGroups: slices.Clone(u.SupplementalGroups),
	}}
	return share(&containerUsers, &containerUsersHeld, MaxContainerUsers, key, user)
}

// containerUsersCount is how many users the table holds (tests).
func containerUsersCount() int { return int(containerUsersHeld.Load()) }
