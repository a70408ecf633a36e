package runtime

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/containerd/containerd/containers"
	"github.com/containerd/containerd/oci"
)

// withUser sets the process identity the way containerd CRI does: the
// configured uid[:gid], else the image's USER (names resolved in the
// container's rootfs), else root; a uid without a gid gets its primary group
// from the image's /etc/passwd (0 if it has none). The additional groups are
// the primary group, the user's groups in the image's /etc/group, and u.Groups.
func withUser(u *User, imageUser string) oci.SpecOpts {
	userstr, groupsOf := imageUser, "0"
	var supplementary []uint32
	switch {
	case u != nil:
		userstr = strconv.FormatUint(uint64(u.UID), 10)
		if u.GID != nil {
			userstr += ":" + strconv.FormatUint(uint64(*u.GID), 10)
		}
		groupsOf, supplementary = strconv.FormatUint(uint64(u.UID), 10), u.Groups
	case imageUser != "":
		groupsOf, _, _ = strings.Cut(imageUser, ":")
	}
	var opts []oci.SpecOpts
	if userstr != "" {
		opts = append(opts, oci.WithUser(userstr))
	}
	return oci.Compose(append(opts, withImageGroups(groupsOf), withGroups(supplementary))...)
}

// withCachedUser is withUser, resolved in the image's files once per layer
// chain: withUser mounts the container's rootfs to read /etc/passwd and
// /etc/group (a mount, a read and an unmount on every container's
// creation, 3 to 7 ms of it), and a chain's files never change.
func (c *imageCache) withCachedUser(chainID string, u *User, imageUser string) oci.SpecOpts {
	k := identityKey{chainID: chainID, user: userKey(u, imageUser)}
	resolve := withUser(u, imageUser)
	return func(ctx context.Context, client oci.Client, ctr *containers.Container, s *oci.Spec) error {
		ensureProcess(s)
		if id, ok := c.identity(k); ok {
			// NOTE: the whole identity: specOpts applies it to the
			// default spec's, the same for every container.
			s.Process.User = id
			return nil
		}
		if err := resolve(ctx, client, ctr, s); err != nil {
			return err
		}
		c.setIdentity(k, s.Process.User)
		return nil
	}
}

// userKey is all that withUser's result depends on besides the files.
func userKey(u *User, imageUser string) string {
	if u == nil {
		return "image:" + imageUser
	}
	gid := "-"
	if u.GID != nil {
		gid = strconv.FormatUint(uint64(*u.GID), 10)
	}
	return fmt.Sprintf("uid:%d gid:%s groups:%v", u.UID, gid, u.Groups)
}

// withImageGroups adds the groups the image's /etc/group lists user (a name
// or uid) in, and the primary group, to the additional groups.
func withImageGroups(user string) oci.SpecOpts {
	return func(ctx context.Context, client oci.Client, c *containers.Container, s *oci.Spec) error {
		ensureProcess(s)
		before := s.Process.User.AdditionalGids
		if err := oci.WithAdditionalGIDs(user)(ctx, client, c, s); err != nil {
			return err
		}
		s.Process.User.AdditionalGids = mergeGroups(s.Process.User.AdditionalGids, before)
		return nil
	}
}

// withGroups adds groups to the additional groups.
func withGroups(groups []uint32) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		if len(groups) == 0 {
			return nil
		}
		ensureProcess(s)
		s.Process.User.AdditionalGids = mergeGroups(s.Process.User.AdditionalGids, groups)
		return nil
	}
}

// mergeGroups is the sorted union of a and b.
func mergeGroups(a, b []uint32) []uint32 {
	all := slices.Concat(a, b)
	slices.Sort(all)
	return slices.Compact(all)
}
