package network

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/containerd/containerd/pkg/netns"
	"github.com/containernetworking/cni/libcni"
	"github.com/sirupsen/logrus"
)

// Teardown removes the pod's sandbox: its hostPort forwarding, its IP (back
// to the pool), its network namespace and files. It is idempotent: a pod
// without a sandbox is no error. If the CNI plugins cannot run, the
// sandbox is kept (and the error returned) so that a later Teardown can
// still free the IP.
func (n *Network) Teardown(ctx context.Context, uid string) error {
	return n.teardown(ctx, uid, false)
}

// Release is Teardown for an ended pod whose containers could not change
// their network namespace (no sysctls, none could administer the network):
// its sandbox goes back to the pool if it came from it and nothing of the
// pod is left in it (recycle.go), and is torn down otherwise.
func (n *Network) Release(ctx context.Context, uid string) error {
	return n.teardown(ctx, uid, true)
}

func (n *Network) teardown(ctx context.Context, uid string, recycle bool) error {
	if err := validUID(uid); err != nil {
		return err
	}
	defer n.lockTeardown(uid)()
	if !n.hasLeftovers(uid) {
		return nil
	}
	start := time.Now()
	st, known, err := n.readState(uid)
	if err != nil {
		// A damaged state file must not keep the pod's network forever.
		logrus.WithError(err).WithField("uid", uid).Warn("ignoring the sandbox state")
	}
	cniID := st.cniID(uid)
	if err := validUID(cniID); err != nil {
		return err
	}
	if recycle && known && !isPoolID(uid) && n.recycle(uid, st) {
		logrus.WithFields(logrus.Fields{"uid": uid, "sandbox": cniID, "took": time.Since(start)}).Debug("pod network torn down: back to the pool")
		return nil
	}
	paths, err := n.netnsPaths(cniID)
	if err != nil {
		return err
	}
	if !st.HostNetwork && (len(paths) > 0 || st.NetNSPath != "") {
		// Without a state (an interrupted Setup), portmap may have run;
		// never for the pool's sandboxes (pool.go), made without ports.
		hostPorts := (!known && !isPoolID(uid)) || len(st.Ports) > 0
		if err := n.detach(ctx, cniID, paths, st.Ports, hostPorts); err != nil {
			return err
		}
	}
	for _, p := range paths {
		if err := netns.LoadNetNS(p).Remove(); err != nil {
			return fmt.Errorf("removing network namespace: %w", err)
		}
	}
	// NOTE: the sandbox's namespace directory goes before the pod's
	// record of it, which is how a crash in between finds it again.
	for _, dir := range []string{n.netnsDir(cniID), n.netnsDir(uid), n.podDir(uid)} {
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("removing pod network files: %w", err)
		}
	}
	logrus.WithFields(logrus.Fields{"uid": uid, "took": time.Since(start)}).Debug("pod network torn down")
	return nil
}

// detach runs CNI DEL for the sandbox CNI knows as id, inside its
// namespace if that still exists, else without one (the plugins then free
// what lives outside it: the IP, the iptables rules).
func (n *Network) detach(ctx context.Context, id string, paths []string, ports []PortMapping, hostPorts bool) error {
	if err := n.pluginsInstalled(); err != nil {
		return fmt.Errorf("tearing down pod network: %w", err)
	}
	path := ""
	for _, p := range paths {
		if closed, err := netns.LoadNetNS(p).Closed(); err == nil && !closed {
			path = p
			break
		}
	}
	// The plugins key what they remove on the container ID (the pod UID,
	// or the pool's ID of a sandbox made ahead).
	remove := func() error { return n.cniFor(hostPorts).Remove(ctx, id, path, n.namespaceOpts("", "", id, ports)...) }
	err := remove()
	if err != nil && strings.Contains(err.Error(), "cached result") && removeCachedResults(id) {
		err = remove()
	}
	if err != nil {
		return fmt.Errorf("tearing down pod network: %w", err)
	}
	return nil
}

// removeCachedResults removes libcni's cached ADD results of the sandbox
// CNI knows as id; false when there were none. An ADD cut short by
// skiffd's death can leave one empty, and libcni 1.1 then fails every DEL
// of that sandbox on it ("failed to get network … cached result"): the
// sandbox would never go. DEL needs no cached result (plugins free what
// they keyed on the container ID); later libcni releases remove a cache
// they cannot read the same way.
func removeCachedResults(id string) bool {
	paths, _ := filepath.Glob(filepath.Join(libcni.CacheDir, "results", "*-"+id+"-*"))
	removed := false
	for _, p := range paths {
		if err := os.Remove(p); err == nil {
			logrus.WithFields(logrus.Fields{"sandbox": id, "file": p}).Warn("removed an unreadable CNI cached result")
			removed = true
		}
	}
	return removed
}

// netnsPaths lists the namespace mounts in the pod's netns directory
// (normally one).
func (n *Network) netnsPaths(uid string) ([]string, error) {
	entries, err := os.ReadDir(n.netnsDir(uid))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the pod's network namespaces: %w", err)
	}
	var paths []string
	for _, e := range entries {
		paths = append(paths, filepath.Join(n.netnsDir(uid), e.Name()))
	}
	return paths, nil
}
