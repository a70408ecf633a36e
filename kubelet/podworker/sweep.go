package podworker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/runtime"
)

// Cleanup converges: every removal is retried until it is done, and a
// periodic sweep removes whatever belongs to no live pod instance — a
// removal that the daemon's death cut short, the containers of a pod
// deleted while skiffd was down or while containerd was, and the leftovers
// of interrupted creates and starts inside containerd and on disk.

// removeInstance removes instance id; when that fails (containerd
// restarting), it is retried in the background with back-off until it is
// done or the daemon stops (the next start's sweep then finishes it).
func (m *Manager) removeInstance(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	err := m.cfg.Runtime.Remove(ctx, id)
	cancel()
	if err == nil || m.ctx == nil {
		m.slots.release(id)
		if err != nil {
			logrus.WithError(err).WithField("container", id).Error("removing container")
		}
		return
	}
	logrus.WithError(err).WithField("container", id).Warn("removing container; retrying")
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		defer m.slots.release(id) // removed, or the daemon stops
		for failures := 1; ; failures++ {
			select {
			case <-m.ctx.Done():
				return
			case <-time.After(m.retryDelay(failures)):
			}
			ctx, cancel := context.WithTimeout(m.ctx, time.Minute)
			err := m.cfg.Runtime.Remove(ctx, id)
			cancel()
			if err == nil {
				return
			}
			logrus.WithError(err).WithField("container", id).Debug("removing container; retrying")
		}
	}()
}

// removeOrphans stops and removes containers whose pod is gone, or whose
// pod's worker has finished with it.
func (m *Manager) removeOrphans(list []runtime.Container) {
	for _, c := range list {
		logrus.WithFields(logrus.Fields{"container": c.ID, "pod": c.Labels[runtime.LabelPodNamespace] + "/" + c.Labels[runtime.LabelPodName]}).
			Info("removing a container that belongs to no live pod")
		if c.State == runtime.StateRunning {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			if err := m.cfg.Runtime.Stop(ctx, c.ID, 0); err != nil {
				logrus.WithError(err).WithField("container", c.ID).Warn("stopping orphaned container")
			}
			cancel()
		}
		m.removeInstance(c.ID)
	}
}

// sweepEvery runs sweep every interval until ctx ends.
func (m *Manager) sweepEvery(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := m.sweep(ctx); err != nil && ctx.Err() == nil {
			logrus.WithError(err).Warn("sweeping leftovers")
		}
	}
}

// sweep removes what belongs to no live pod instance: containers of pods
// that are gone or settled, leftovers inside containerd
// (Runtime.SweepLeftovers), and the network namespaces, log directories
// and volumes of pods that are gone. Containers of pods whose worker still
// runs are the worker's to remove.
func (m *Manager) sweep(ctx context.Context) error {
	found, err := m.listLeftovers(ctx)
	if err != nil {
		return err
	}
	objs, _, err := m.cfg.Store.List(db.Pods, "", nil)
	if err != nil {
		return err
	}
	known := make(map[types.UID]*corev1.Pod, len(objs))
	for _, obj := range objs {
		known[obj.(*corev1.Pod).UID] = obj.(*corev1.Pod)
	}
	m.removeLeftovers(found, known)
	if err := m.cfg.Runtime.SweepLeftovers(ctx); err != nil {
		logrus.WithError(err).Warn("sweeping containerd leftovers")
	}
	return nil
}

// podLeftovers are what pods have on the node, by pod UID.
type podLeftovers struct {
	containers []runtime.Container
	sandboxes  []types.UID
	logDirs    map[types.UID][]string // <log root>/<ns>_<name>_<uid>
	volumes    []types.UID
}

// listLeftovers lists the pods' containers, networks, log and volume
// directories. NOTE: callers list them before the pods in the store, so
// that nothing made after the store's listing is judged against it.
func (m *Manager) listLeftovers(ctx context.Context) (podLeftovers, error) {
	var found podLeftovers
	var err error
	if found.containers, err = m.cfg.Runtime.List(ctx); err != nil {
		return found, fmt.Errorf("listing containers: %w", err)
	}
	if m.cfg.Network != nil {
		uids, err := m.cfg.Network.List()
		if err != nil {
			return found, fmt.Errorf("listing pod networks: %w", err)
		}
		for _, uid := range uids {
			found.sandboxes = append(found.sandboxes, types.UID(uid))
		}
	}
	found.logDirs = map[types.UID][]string{}
	entries, err := os.ReadDir(m.cfg.LogRoot)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return found, fmt.Errorf("reading the log directory: %w", err)
	}
	for _, e := range entries {
		if i := strings.LastIndexByte(e.Name(), '_'); e.IsDir() && i >= 0 {
			uid := types.UID(e.Name()[i+1:])
			found.logDirs[uid] = append(found.logDirs[uid], filepath.Join(m.cfg.LogRoot, e.Name()))
		}
	}
	if m.cfg.VolumeRoot != "" {
		uids, err := volumeDirs(m.cfg.VolumeRoot)
		if err != nil {
			return found, fmt.Errorf("reading the volume directory: %w", err)
		}
		for _, uid := range uids {
			found.volumes = append(found.volumes, types.UID(uid))
		}
	}
	return found, nil
}

// removeLeftovers removes what found holds of pods that are not known (in
// the store, by UID), and what is left of known pods that are done (see
// podDone) but their logs: a removal or a teardown cut short by the
// daemon's death is finished here.
func (m *Manager) removeLeftovers(found podLeftovers, known map[types.UID]*corev1.Pod) {
	gone := func(uid types.UID) bool { return known[uid] == nil }
	done := func(uid types.UID) bool { pod := known[uid]; return pod == nil || m.podDone(pod) }
	var orphans []runtime.Container
	for _, c := range found.containers {
		if done(types.UID(c.Labels[runtime.LabelPodUID])) {
			orphans = append(orphans, c)
		}
	}
	m.removeOrphans(orphans)
	for _, uid := range found.sandboxes {
		if done(uid) {
			logrus.WithField("uid", uid).Info("removing the network of a pod that is gone or done")
			m.teardownSandbox(uid, known[uid])
		}
	}
	for uid, dirs := range found.logDirs {
		if gone(uid) {
			for _, dir := range dirs {
				m.removeLogs(dir)
			}
		}
	}
	for _, uid := range found.volumes {
		if done(uid) {
			if err := removeVolumeDir(m.cfg.VolumeRoot, string(uid)); err != nil {
				logrus.WithError(err).WithField("uid", uid).Warn("removing the volumes of a pod that is gone or done")
			}
		}
	}
}

// podDone reports whether none of the pod's containers will run again: its
// worker settled it, or, without a worker (finished by an earlier run, see
// observe), its status is final.
func (m *Manager) podDone(pod *corev1.Pod) bool {
	m.mu.Lock()
	w, ok := m.workers[pod.UID]
	m.mu.Unlock()
	if ok {
		return w.settled.Load()
	}
	return isFinished(pod)
}
