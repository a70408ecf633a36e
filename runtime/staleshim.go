package runtime

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/containerd/errdefs"
)

// shimSocketRoot is where containerd's shims listen, whatever containerd's
// state directory: its shim package names it after the default one.
const shimSocketRoot = "/run/containerd/s"

// ShimSocket is the socket a shim of a task of id in namespace ns of the
// containerd at address listens on. containerd's shims name it after
// containerd's address, the namespace and the ID
// (runtime/v2/shim.SocketAddress), so every shim of id has the same one.
func ShimSocket(address, ns, id string) string {
	return filepath.Join(shimSocketRoot, fmt.Sprintf("%x", sha256.Sum256([]byte(filepath.Join(address, ns, id)))))
}

func (r *Runtime) shimSocket(id string) string { return ShimSocket(r.address, r.ns, id) }

// ShimPIDs are the processes, found in /proc, of the shims the containerd
// at address started for task id of namespace ns.
func ShimPIDs(address, ns, id string) []int {
	return scanProcesses(ns, address).shims[id]
}

// clearStaleShim kills a shim of an earlier task of id that still holds
// id's shim socket; the caller is about to make a task of id and
// containerd lists none. A new shim of id that finds the socket answering
// hands containerd that one instead of its own (containerd's shim
// grouping): one that outlived its task and stopped answering — CI saw it
// after a containerd restart cut a create short and containerd deleted the
// bundle under a shim that lived on — would hold the new task's create,
// and the instance, for ever. The normal path costs a stat.
func (r *Runtime) clearStaleShim(ctx context.Context, id string) error {
	if !exists(r.shimSocket(id)) {
		return nil
	}
	if err := r.clearTaskLeftovers(ctx, id, true); err != nil {
		if !errors.Is(err, errdefs.ErrAborted) {
			err = fmt.Errorf("%w (%w)", err, errdefs.ErrAborted) // NOTE: the infrastructure's trouble: retried
		}
		return fmt.Errorf("clearing an earlier shim of %q: %w", id, err)
	}
	return nil
}
