package network

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
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
		for _, name := range []string{"tcp", "tcp6"} {
			n, err := countLines(filepath.Join("/proc/thread-self/net", name))
			if err != nil {
				return err
			}
			if n > 1 { // the header
				return fmt.Errorf("it holds %d %s sockets", n-1, name)
			}
		}
		return nil
	})
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

func countLines(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	n := 0
	s := bufio.NewScanner(f)
	for s.Scan() {
		n++
	}
	if err := s.Err(); err != nil {
		return 0, errors.Join(fmt.Errorf("reading %s", path), err)
	}
	return n, nil
}
