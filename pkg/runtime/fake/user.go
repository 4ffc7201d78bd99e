package fake

import (
	"slices"
	"strconv"
	"strings"

	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/shell"
	"github.com/minikubelet/minikubelet/pkg/vfs"
)

// Who a container's process runs as is settled when the container is created, as containerd
// settles it in the OCI spec: the user and primary group from the security context or the
// image, looked up in the image's own /etc/passwd, then the groups (containerd's
// WithAdditionalGIDs and WithSupplementalGroups). The image's files are read from its
// tree, not through the container's mounts: containerd reads the snapshot before anything
// is mounted over it.

// accounts are an image's /etc/passwd and /etc/group, read once per image: its tree is
// frozen, so they never change.
type accounts struct {
	users  []account
	groups []groupEntry
}

type account struct {
	name     string
	uid, gid int64
}

type groupEntry struct {
	name    string
	gid     int64
	members []string
}

// accountsLocked returns img's accounts, read the first time they are asked for.
func (r *Runtime) accountsLocked(img *imageInfo) *accounts {
	if img.accounts == nil {
		view := vfs.NewView(r.nodeFS, img.tree, true)
		img.accounts = parseAccounts(view)
	}
	return img.accounts
}

// parseAccounts reads /etc/passwd (name:x:uid:gid:...) and /etc/group (name:x:gid:members)
// of fs; malformed lines are skipped, as libc's getpwent skips them.
func parseAccounts(fs *vfs.View) *accounts {
	a := &accounts{}
	if data, err := fs.ReadFile("/etc/passwd"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			f := strings.Split(line, ":")
			if len(f) < 4 {
				continue
			}
			uid, err1 := strconv.ParseInt(f[2], 10, 64)
			gid, err2 := strconv.ParseInt(f[3], 10, 64)
			if err1 == nil && err2 == nil {
				a.users = append(a.users, account{name: f[0], uid: uid, gid: gid})
			}
		}
	}
	if data, err := fs.ReadFile("/etc/group"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			f := strings.Split(line, ":")
			if len(f) < 4 {
				continue
			}
			gid, err := strconv.ParseInt(f[2], 10, 64)
			if err != nil {
				continue
			}
			g := groupEntry{name: f[0], gid: gid}
			for _, m := range strings.Split(f[3], ",") {
				if m != "" {
					g.members = append(g.members, m)
				}
			}
			a.groups = append(a.groups, g)
		}
	}
	return a
}

// byUID is the first user with uid.
func (a *accounts) byUID(uid int64) (account, bool) {
	for _, u := range a.users {
		if u.uid == uid {
			return u, true
		}
	}
	return account{}, false
}

// byName is the first user called name.
func (a *accounts) byName(name string) (account, bool) {
	for _, u := range a.users {
		if u.name == name {
			return u, true
		}
	}
	return account{}, false
}

// memberOf is the gids of the groups that list user as a member, in the file's order,
// leaving out a group named as the user is (containerd's WithAdditionalGIDs: that one is
// the user's primary group).
func (a *accounts) memberOf(user string) []int64 {
	var gids []int64
	for _, g := range a.groups {
		if g.name != user && slices.Contains(g.members, user) {
			gids = append(gids, g.gid)
		}
	}
	return gids
}

// identityLocked is who a container's processes run as, from its security context (nil:
// none) and its image.
//
// The user: runAsUser (its primary group from the image's /etc/passwd, root's without an
// entry), else the image's user (a number, or a name looked up in /etc/passwd; "user:group"
// with a numeric group sets it), else root; runAsGroup sets the primary group.
//
// The groups (containerd's): with the Merge policy (the default) the groups of the image's
// /etc/group that list the user by name; with Strict none of them. Then the primary group,
// then the kubelet's (fsGroup and supplementalGroups): the kernel gets them sorted, each
// once, and that is what ContainerStatus.User reports and `id` prints. A runtime without the
// policy feature merges whatever the kubelet asks, as containerd 1.7 does.
func (r *Runtime) identityLocked(sc *cri.SecurityContext, img *imageInfo) shell.Identity {
	accts := r.accountsLocked(img)
	var id shell.Identity
	username := ""
	user, group, _ := strings.Cut(img.user, ":")
	if user != "" {
		if n, err := strconv.ParseInt(user, 10, 64); err == nil {
			id.UID, id.GID = n, n
			if u, ok := accts.byUID(n); ok {
				id.GID = u.gid
			}
		} else if u, ok := accts.byName(user); ok {
			id.UID, id.GID, username = u.uid, u.gid, user
		}
	}
	if group != "" {
		if n, err := strconv.ParseInt(group, 10, 64); err == nil {
			id.GID = n
		}
	}
	if sc != nil {
		if sc.RunAsUser != nil {
			id.UID, id.GID, username = *sc.RunAsUser, 0, ""
			if u, ok := accts.byUID(id.UID); ok {
				id.GID = u.gid
			}
		}
		if sc.RunAsGroup != nil {
			id.GID = *sc.RunAsGroup
		}
		id.Privileged = sc.Privileged
		id.NoNewPrivs = sc.NoNewPrivs
	}
	if username == "" {
		if u, ok := accts.byUID(id.UID); ok {
			username = u.name
		}
	}
	strict := sc != nil && sc.SupplementalGroupsPolicy == cri.SupplementalGroupsStrict && r.features.SupplementalGroupsPolicy
	groups := []int64{id.GID}
	if !strict && username != "" {
		groups = append(groups, accts.memberOf(username)...)
	}
	if sc != nil {
		groups = append(groups, sc.SupplementalGroups...)
	}
	slices.Sort(groups)
	id.Groups = slices.Compact(groups)
	// The runtime's one copy of these groups: a process only reads them, and a node's
	// containers mostly run as one user.
	id.Groups = r.internUserLocked(id).SupplementalGroups
	return id
}

// userKey is what a container's user is made from: its image and its (shared) security
// context.
type userKey struct {
	img *imageInfo
	sec *cri.SecurityContext
}

// containerUserLocked is who c's process runs as, as ContainerStatus reports it: nil from a
// runtime without the SupplementalGroupsPolicy feature (containerd 1.7 reports none). The
// value is shared by every container with an equal user.
func (r *Runtime) containerUserLocked(c *ctr) *cri.ContainerUser {
	if !r.features.SupplementalGroupsPolicy {
		return nil
	}
	if c.proc != nil {
		return r.internUserLocked(c.proc.id)
	}
	if c.spec == nil || c.img == nil {
		return nil
	}
	key := userKey{img: c.img, sec: c.spec.sec}
	if u, ok := r.usersBySpec[key]; ok {
		return u
	}
	u := r.internUserLocked(r.identityLocked(c.spec.sec, c.img))
	if r.usersBySpec == nil {
		r.usersBySpec = map[userKey]*cri.ContainerUser{}
	}
	r.usersBySpec[key] = u
	return u
}

// internUserLocked returns the runtime's one ContainerUser equal to id's user and groups.
func (r *Runtime) internUserLocked(id shell.Identity) *cri.ContainerUser {
	var buf [64]byte
	b := strconv.AppendInt(buf[:0], id.UID, 10)
	b = append(b, ':')
	b = strconv.AppendInt(b, id.GID, 10)
	for _, g := range id.Groups {
		b = append(b, ',')
		b = strconv.AppendInt(b, g, 10)
	}
	if u, ok := r.users[string(b)]; ok {
		return u
	}
	u := &cri.ContainerUser{UID: id.UID, GID: id.GID, SupplementalGroups: slices.Clone(id.Groups)}
	if r.users == nil {
		r.users = map[string]*cri.ContainerUser{}
	}
	r.users[string(b)] = u
	return u
}

// internSecurityLocked returns the runtime's one security context equal to sc (nil stays
// nil), which the container keeps: a template's containers ask for the same one, and
// 20,000 copies of it were 1.2 MB of a big node's heap. The first one asked for becomes the
// shared one (the runtime owns what it is given: cri.RuntimeService). The key names every
// field: one added to cri.SecurityContext must be added to it.
func (r *Runtime) internSecurityLocked(sc *cri.SecurityContext) *cri.SecurityContext {
	if sc == nil {
		return nil
	}
	var buf [128]byte
	b := buf[:0]
	id := func(p *int64) {
		if p == nil {
			b = append(b, '-')
		} else {
			b = strconv.AppendInt(b, *p, 10)
		}
		b = append(b, ';')
	}
	id(sc.RunAsUser)
	id(sc.RunAsGroup)
	for _, g := range sc.SupplementalGroups {
		b = strconv.AppendInt(b, g, 10)
		b = append(b, ',')
	}
	flag := func(v bool) {
		if v {
			b = append(b, '1')
		} else {
			b = append(b, '0')
		}
	}
	flag(sc.ReadonlyRootfs)
	flag(sc.Privileged)
	flag(sc.NoNewPrivs)
	b = append(b, byte('0'+sc.SupplementalGroupsPolicy))
	for _, paths := range [][]string{sc.MaskedPaths, sc.ReadonlyPaths} {
		if paths == nil { // the runtime's defaults, unlike an empty list
			b = append(b, ";-"...)
			continue
		}
		b = append(b, ';')
		for _, p := range paths {
			b = append(append(b, p...), 0)
		}
	}
	if shared, ok := r.securities[string(b)]; ok {
		return shared
	}
	if r.securities == nil {
		r.securities = map[string]*cri.SecurityContext{}
	}
	r.securities[string(b)] = sc
	return sc
}
