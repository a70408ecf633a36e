package network

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/containerd/containerd/pkg/netns"
	cnins "github.com/containernetworking/plugins/pkg/ns"
	"github.com/sirupsen/logrus"
)

// Recycling: a sandbox of the pool goes back to the pool when its pod ends,
// instead of CNI DEL, the namespace's destruction, then CNI ADD and a new
// namespace for the next pod: those four plugin processes, the veth and
// the namespace are most of what the pod network costs a short pod. It is
// done only when the next pod cannot tell the sandbox from a new one:
//   - the pod could not change it (Release: no sysctls, no container
//     that may administer the network), and
//   - nothing of the pod is left in it: no process, no TCP socket (a
//     socket in TIME_WAIT would hold its port for a minute against a
//     program that binds without SO_REUSEADDR).
//
// What the namespace holds is then what a new one holds: lo and eth0 with
// the same IP. The pod's files (hosts, resolv.conf, hostname) are the
// pod's own and go with it. A recycled sandbox joins the back of the
// queue, so its IP is not the next pod's at once.

// recycle gives the pool back the sandbox st of the ended pod uid; false
// (nothing changed) when it cannot be.
func (n *Network) recycle(uid string, st state) bool {
	p := n.pool
	if p == nil || !isPoolID(st.CNIID) || st.HostNetwork || len(st.Ports) > 0 || st.NetNSPath == "" {
		return false
	}
	if len(p.ready) >= cap(p.ready) {
		return false
	}
	log := logrus.WithFields(logrus.Fields{"uid": uid, "sandbox": st.CNIID})
	if err := namespaceEmpty(st.NetNSPath); err != nil {
		log.WithError(err).Debug("not recycling the pod's network")
		return false
	}
	// NOTE: the pool's record first, then the pod's goes: a crash in
	// between leaves both, and SweepPool drops the pool's record of a
	// sandbox a pod names (the pod's Teardown then removes it).
	if err := os.MkdirAll(n.podDir(st.CNIID), 0o700); err != nil {
		log.WithError(err).Warn("recycling the pod's network")
		return false
	}
	if err := n.writeState(st.CNIID, state{NetNSPath: st.NetNSPath, IP: st.IP}); err != nil {
		log.WithError(err).Warn("recycling the pod's network")
		return false
	}
	if err := os.RemoveAll(n.podDir(uid)); err != nil {
		log.WithError(err).Warn("recycling the pod's network")
		_ = os.RemoveAll(n.podDir(st.CNIID))
		return false
	}
	select {
	case p.ready <- st.CNIID:
	default:
		n.discard(st.CNIID) // NOTE: filled meanwhile by RunPool
	}
	return true
}

// namespaceEmpty reports why the network namespace at path still holds
// something of its pod (nil when it holds nothing).
func namespaceEmpty(path string) error {
	var ns syscall.Stat_t
	if err := syscall.Stat(path, &ns); err != nil {
		return fmt.Errorf("reading the namespace: %w", err)
	}
	if pid, err := processIn(ns); err != nil || pid != 0 {
		if err == nil {
			err = fmt.Errorf("process %d is still in it", pid)
		}
		return err
	}
	return netns.LoadNetNS(path).Do(func(cnins.NetNS) error {
		n, err := tcpSockets("/proc/thread-self/net")
		if err != nil {
			return err
		}
		if n > 0 {
			return fmt.Errorf("it holds %d TCP sockets", n)
		}
		return nil
	})
}

// tcpSockets counts the TCP sockets of the network namespace whose
// /proc/net netDir is: those in use (listening, connected, closing) and
// those in TIME_WAIT, IPv4 and IPv6, from the namespace's own counters in
// sockstat and sockstat6.
//
// NOTE: not by reading tcp and tcp6, which list the namespace's sockets
// by walking the kernel's TCP hash tables, shared by every namespace and
// sized by the machine's memory: 12 ms of skiffd's CPU a pod, a third of
// all it spent on a Job of short pods. On a kernel that would count
// TIME_WAIT for the whole host rather than per namespace, the host's count
// makes a sandbox look used: it is torn down instead of recycled, never
// the reverse.
func tcpSockets(netDir string) (int, error) {
	v4, err := sockstatCounts(filepath.Join(netDir, "sockstat"), "TCP:")
	if err != nil {
		return 0, err
	}
	n := v4["inuse"] + v4["tw"]
	v6, err := sockstatCounts(filepath.Join(netDir, "sockstat6"), "TCP6:")
	switch {
	case errors.Is(err, os.ErrNotExist): // NOTE: a kernel without IPv6
	case err != nil:
		return 0, err
	default:
		n += v6["inuse"]
	}
	return n, nil
}

// sockstatCounts reads the counters of the line of a sockstat file that
// starts with label ("TCP: inuse 1 orphan 0 tw 0 alloc 1 mem 0").
func sockstatCounts(path, label string) (map[string]int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	for line := range strings.Lines(string(data)) {
		fields := strings.Fields(line)
		if len(fields) == 0 || fields[0] != label {
			continue
		}
		if len(fields)%2 != 1 {
			return nil, fmt.Errorf("%s: malformed line %q", path, strings.TrimSpace(line))
		}
		counts := map[string]int{}
		for i := 1; i < len(fields); i += 2 {
			v, err := strconv.Atoi(fields[i+1])
			if err != nil {
				return nil, fmt.Errorf("%s: %q: %w", path, strings.TrimSpace(line), err)
			}
			counts[fields[i]] = v
		}
		if _, ok := counts["inuse"]; !ok {
			return nil, fmt.Errorf("%s: no inuse count in %q", path, strings.TrimSpace(line))
		}
		return counts, nil
	}
	return nil, fmt.Errorf("%s: no %s line", path, label)
}

// processIn returns a process whose network namespace is ns (0 when none is).
func processIn(ns syscall.Stat_t) (int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		var st syscall.Stat_t
		if err := syscall.Stat(filepath.Join("/proc", e.Name(), "ns/net"), &st); err != nil {
			continue // NOTE: gone meanwhile, or a kernel thread
		}
		if st.Dev == ns.Dev && st.Ino == ns.Ino {
			return pid, nil
		}
	}
	return 0, nil
}
