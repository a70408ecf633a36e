package network

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/containerd/containerd/pkg/netns"
	"github.com/sirupsen/logrus"
)

// The pool: network namespaces attached to the bridge with an IP, made
// ahead of the pods that will take them. Attaching a namespace (the bridge
// and host-local plugins' processes, the veth) is most of a pod network's
// setup; with a namespace waiting, a pod without hostPorts starts without
// waiting for it (RunPool makes the next one meanwhile).
//
// A sandbox of the pool lives under its own ID, pool-<random>, as a pod's
// lives under its UID: netns/<id>/ and pods/<id>/sandbox.json. A pod takes
// one by writing its own sandbox.json naming the ID (state.CNIID), then
// removing pods/<id>: from the first write on, the pod's Teardown removes
// it. Sandboxes of the pool that no pod took are sorted out by the next
// skiffd's SweepPool and torn down by its RunPool, and never seen by List.

// poolPrefix starts the IDs of the pool's sandboxes; pod UIDs (UUIDs) never do.
const poolPrefix = "pool-"

// poolRetryMax caps the wait between two failed attempts to fill the pool.
const poolRetryMax = 30 * time.Second

// poolAttachTimeout bounds the plugins' work on one sandbox of the pool.
const poolAttachTimeout = 30 * time.Second

// pool is the sandboxes made ahead in this process, ready to be taken.
type pool struct {
	size int
	// ready holds IDs: RunPool fills it up to size, recycled sandboxes
	// (recycle.go) up to twice that, so that a pod's sandbox that comes
	// back while RunPool has just made one for the next pod is kept.
	ready chan string
	taken chan struct{} // wakes RunPool when one is taken
}

func newPool(size int) *pool {
	return &pool{size: size, ready: make(chan string, 2*size), taken: make(chan struct{}, 1)}
}

// take returns a ready sandbox's ID, if there is one.
func (p *pool) take() (string, bool) {
	if p == nil {
		return "", false
	}
	select {
	case id := <-p.ready:
		select {
		case p.taken <- struct{}{}:
		default:
		}
		return id, true
	default:
		return "", false
	}
}

func isPoolID(id string) bool { return strings.HasPrefix(id, poolPrefix) }

func newPoolID() (string, error) {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return poolPrefix + hex.EncodeToString(b), nil
}

// RunPool tears down the sandboxes left to it (stale), then keeps
// Config.PoolSize sandboxes ready until ctx ends; without a pool it returns
// once none is left. The pod network being unavailable (plugins missing,
// subnet clashing), or a teardown failing, only delays it.
func (n *Network) RunPool(ctx context.Context) error {
	p := n.pool
	wait := time.Duration(0)
	for {
		clean := n.removeStale(ctx)
		filled := true
		for p != nil && len(p.ready) < p.size && ctx.Err() == nil {
			id, err := n.makePooled(ctx)
			if err != nil {
				filled = false
				// NOTE: an unusable network is said once, at start, and
				// on each pod that waits for it.
				if !errors.Is(err, ErrUnavailable) && ctx.Err() == nil {
					logrus.WithError(err).Warn("preparing a pod network ahead; trying again")
				}
				break
			}
			p.ready <- id
		}
		if p == nil && clean {
			return nil
		}
		var retry <-chan time.Time
		if clean && filled {
			wait = 0
		} else {
			wait = min(max(2*wait, 100*time.Millisecond), poolRetryMax)
			retry = time.After(wait)
		}
		var taken <-chan struct{}
		if p != nil {
			taken = p.taken
		}
		select {
		case <-ctx.Done():
			return nil
		case <-taken:
		case <-retry:
		}
	}
}

// makePooled makes one sandbox of the pool: a network namespace with lo up
// and eth0 on the bridge. On error what it made is discarded.
func (n *Network) makePooled(ctx context.Context) (_ string, retErr error) {
	if err := n.Prepare(); err != nil {
		return "", err
	}
	id, err := newPoolID()
	if err != nil {
		return "", err
	}
	defer func() {
		if retErr != nil {
			n.discard(id)
		}
	}()
	// NOTE: bounded: a plugin that hangs must not keep the pool empty.
	actx, cancel := context.WithTimeout(ctx, poolAttachTimeout)
	defer cancel()
	st, err := n.attach(actx, id, Pod{UID: id, Name: id})
	if err != nil {
		return "", err
	}
	if err := n.writeState(id, st); err != nil {
		return "", err
	}
	return id, nil
}

// discard tears down the pool's sandbox id, or leaves it to RunPool to
// try again (a plugin of a run that died may still hold what it made).
func (n *Network) discard(id string) {
	if n.undo(id) != nil {
		n.mu.Lock()
		n.stale = append(n.stale, id)
		n.mu.Unlock()
	}
}

// removeStale tears down the sandboxes left to RunPool; false when some
// are still left. Each is tried: one that cannot go must not keep the
// others.
func (n *Network) removeStale(ctx context.Context) bool {
	n.mu.Lock()
	stale := n.stale
	n.stale = nil
	n.mu.Unlock()
	var left []string
	for _, id := range stale {
		if ctx.Err() != nil {
			left = append(left, id)
			continue
		}
		if err := n.Teardown(ctx, id); err != nil {
			if ctx.Err() == nil {
				logrus.WithError(err).WithField("sandbox", id).Warn("removing a pod network made ahead; trying again later")
			}
			left = append(left, id)
		}
	}
	n.mu.Lock()
	n.stale = append(n.stale, left...)
	n.mu.Unlock()
	return len(left) == 0
}

// takePooled gives the pod a sandbox of the pool, if one is ready: false
// when none is (or taking it failed; Setup then makes the pod its own).
func (n *Network) takePooled(pod Pod) (Sandbox, bool) {
	id, ok := n.pool.take()
	if !ok {
		return Sandbox{}, false
	}
	log := logrus.WithFields(logrus.Fields{"pod": pod.Namespace + "/" + pod.Name, "sandbox": id})
	sb, err := n.adoptPooled(pod, id)
	if err != nil {
		log.WithError(err).Warn("taking a pod network made ahead; making one for the pod")
		return Sandbox{}, false
	}
	log.WithField("ip", sb.IP).Debug("pod network taken from those made ahead")
	return sb, true
}

// makeForPod makes a sandbox as the pool makes them and gives it to the
// pod at once: made so, it can go back to the pool when the pod ends.
func (n *Network) makeForPod(ctx context.Context, pod Pod) (Sandbox, error) {
	id, err := n.makePooled(ctx)
	if err != nil {
		return Sandbox{}, err
	}
	return n.adoptPooled(pod, id)
}

// adoptPooled makes the pool's sandbox id the pod's; on error both the
// sandbox and the pod's files are gone.
func (n *Network) adoptPooled(pod Pod, id string) (Sandbox, error) {
	st, found, err := n.readState(id)
	if err == nil && !found {
		err = errors.New("its state is gone")
	}
	if err == nil {
		err = n.adopt(pod, id, st)
	}
	if err != nil {
		n.discard(id)
		if err := os.RemoveAll(n.podDir(pod.UID)); err != nil {
			logrus.WithError(err).WithField("uid", pod.UID).Warn("removing the pod's network files")
		}
		return Sandbox{}, err
	}
	return n.sandbox(pod.UID, st), nil
}

// adopt makes the pool's sandbox id the pod's: the pod's files, then its
// sandbox.json naming id (from then on the pod's Teardown removes it),
// then the pool's record of it goes.
func (n *Network) adopt(pod Pod, id string, st state) error {
	if err := os.MkdirAll(n.podDir(pod.UID), 0o700); err != nil {
		return fmt.Errorf("creating pod network dir: %w", err)
	}
	if err := n.writeFiles(pod, st.IP); err != nil {
		return err
	}
	st.CNIID = id
	if err := n.writeState(pod.UID, st); err != nil {
		return err
	}
	if err := os.RemoveAll(n.podDir(id)); err != nil {
		// NOTE: harmless: SweepPool leaves a sandbox a pod names alone.
		logrus.WithError(err).WithField("sandbox", id).Warn("removing the record of a pod network made ahead")
	}
	return nil
}

// SweepPool sorts the sandboxes of the pool an earlier skiffd left: the
// records of those pods took go, the others are RunPool's to tear down (no
// pod names them, none will: they are not in this run's pool). skiffd
// calls it at start, before any pod's sandbox is set up or torn down, and
// before RunPool.
//
// NOTE: the teardowns (CNI DEL, a plugin process each) are left to
// RunPool: they made a restart onto 8 of them 250 ms slower.
func (n *Network) SweepPool() error {
	ids, err := n.listDirs(isPoolID)
	if err != nil {
		return err
	}
	if len(ids) == 0 {
		return nil
	}
	pods, err := n.listDirs(func(name string) bool { return !isPoolID(name) })
	if err != nil {
		return err
	}
	taken := map[string]bool{}
	for _, uid := range pods {
		if st, ok, err := n.readState(uid); err == nil && ok && st.CNIID != "" {
			taken[st.CNIID] = true
		}
	}
	var errs []error
	for _, id := range ids {
		if taken[id] {
			errs = append(errs, os.RemoveAll(n.podDir(id)))
			continue
		}
		n.mu.Lock()
		n.stale = append(n.stale, id)
		n.mu.Unlock()
	}
	return errors.Join(errs...)
}

// listDirs lists the names under pods/ and netns/ that keep.
func (n *Network) listDirs(keep func(name string) bool) ([]string, error) {
	var names []string
	for _, dir := range []string{filepath.Join(n.cfg.DataDir, "pods"), filepath.Join(n.cfg.DataDir, "netns")} {
		entries, err := os.ReadDir(dir)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("listing sandboxes: %w", err)
		}
		for _, e := range entries {
			if e.IsDir() && keep(e.Name()) && !slices.Contains(names, e.Name()) {
				names = append(names, e.Name())
			}
		}
	}
	slices.Sort(names)
	return names, nil
}

// attach creates the network namespace of id (a pod UID or a pool ID) in
// netns/<id>/ and attaches it: lo up, then CNI (with portmap for pod's
// ports). The caller undoes it on error.
func (n *Network) attach(ctx context.Context, id string, pod Pod) (state, error) {
	if err := os.MkdirAll(n.podDir(id), 0o700); err != nil {
		return state{}, fmt.Errorf("creating pod network dir: %w", err)
	}
	ns, err := netns.NewNetNS(n.netnsDir(id))
	if err != nil {
		return state{}, fmt.Errorf("creating network namespace: %w", err)
	}
	if err := loopbackUp(ns); err != nil {
		return state{}, err
	}
	st := state{NetNSPath: ns.GetPath(), Ports: pod.Ports}
	res, err := n.cniFor(len(pod.Ports) > 0).Setup(ctx, id, st.NetNSPath, n.namespaceOpts(pod.Namespace, pod.Name, id, pod.Ports)...)
	if err != nil {
		return state{}, fmt.Errorf("setting up pod network: %w", err)
	}
	if st.IP, err = podIP(res); err != nil {
		return state{}, err
	}
	return st, nil
}
