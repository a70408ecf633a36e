package podworker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/skiff-sh/skiff/kube"
)

// podVolume is one volume of a pod, ready to be bind-mounted.
type podVolume struct {
	path     string // on the host
	readOnly bool   // always mounted read-only (downwardAPI and the like)
}

// Per-pod directories under Config.VolumeRoot, as the kubelet lays them out
// under /var/lib/kubelet/pods/<uid>.
const (
	emptyDirKind    = "kubernetes.io~empty-dir"
	downwardAPIKind = "kubernetes.io~downward-api"
)

func podDir(root string, uid string) string { return filepath.Join(root, uid) }

func volumeDir(root, uid, kind, name string) string {
	return filepath.Join(podDir(root, uid), "volumes", kind, name)
}

// setUpVolumes prepares every volume of the pod, retrying with back-off
// while one fails (the kubelet keeps the containers in ContainerCreating
// and reports FailedMount); false when the pod is stopped first.
func (w *worker) setUpVolumes(ctx context.Context, pod *corev1.Pod, first *volumesAttempt) bool {
	for try := 0; ; try++ {
		attempt := first
		if try > 0 || attempt == nil || !attempt.fresh(w.m.now()) {
			attempt.wait() // NOTE: never two at once over the same files
			attempt = w.tryVolumes(pod)
		}
		changed, vols, err := attempt.wait()
		if err == nil {
			w.volumes = vols
			w.startVolumeRefresh(ctx, pod, changed)
			return true
		}
		w.log.WithError(err).Warn("setting up volumes")
		w.event(corev1.EventTypeWarning, "FailedMount", "%s", err.Error())
		w.showWaitingMessage(err.Error())
		t := time.After(backoffDelay(w.m.cfg.RestartBackoffBase, w.m.cfg.RestartBackoffMax, try))
		select {
		case <-t:
		case <-changed:
		case <-w.stop:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// volumesAttempt is one attempt at setting up the pod's volumes, made in
// the background: the pod's first is made beside its network's setup and
// its admission's status write, which share nothing with it.
type volumesAttempt struct {
	started time.Time
	done    chan struct{}
	changed <-chan struct{} // sourceReader.changed, taken before the objects were read
	vols    map[string]podVolume
	err     error
}

// tryVolumes starts an attempt at the pod's volumes.
func (w *worker) tryVolumes(pod *corev1.Pod) *volumesAttempt {
	// NOTE: taken before the objects are read: a ConfigMap or Secret that
	// appears meanwhile wakes setUpVolumes' wait.
	a := &volumesAttempt{started: w.m.now(), done: make(chan struct{}), changed: w.m.sources.changed(pod.Namespace)}
	go func() {
		defer close(a.done)
		a.vols, a.err = setUpVolumes(pod, w.m.cfg.VolumeRoot, w.m.node, w.m.sources)
	}()
	return a
}

// wait waits for the attempt's end; a nil attempt has none.
func (a *volumesAttempt) wait() (changed <-chan struct{}, vols map[string]podVolume, err error) {
	if a == nil {
		return nil, nil, nil
	}
	<-a.done
	return a.changed, a.vols, a.err
}

// attemptFreshFor is how old an attempt made before the pod's admission
// may be for its volumes to be used: an admission that waited longer (a
// network being fixed) gets volumes made again, with fresh tokens.
const attemptFreshFor = 10 * time.Second

// fresh reports whether the attempt started less than attemptFreshFor ago.
func (a *volumesAttempt) fresh(now time.Time) bool {
	return a != nil && now.Sub(a.started) < attemptFreshFor
}

// showWaitingMessage puts msg on the containers still waiting for the pod
// to start (there are no events to carry it).
func (w *worker) showWaitingMessage(msg string) {
	_, err := w.update(func(p *corev1.Pod) {
		for _, list := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
			for i := range list {
				if wt := list[i].State.Waiting; wt != nil && (wt.Reason == reasonContainerCreating || wt.Reason == reasonPodInitializing) {
					wt.Message = msg
				}
			}
		}
	})
	if err != nil {
		w.logError("recording volume failure", err)
	}
}

// setUpVolumes prepares the pod's volumes under root, reading ConfigMaps
// and Secrets through src.
func setUpVolumes(pod *corev1.Pod, root string, node nodeInfo, src sourceReader) (map[string]podVolume, error) {
	vols := map[string]podVolume{}
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		pv, err := setUpVolume(pod, v, root, node, src)
		if err != nil {
			return nil, fmt.Errorf("MountVolume.SetUp failed for volume %q : %w", v.Name, err)
		}
		vols[v.Name] = pv
	}
	return vols, nil
}

func setUpVolume(pod *corev1.Pod, v *corev1.Volume, root string, node nodeInfo, src sourceReader) (podVolume, error) {
	uid := string(pod.UID)
	fsGroup := podFSGroup(pod)
	switch {
	case v.EmptyDir != nil:
		dir := volumeDir(root, uid, emptyDirKind, v.Name)
		return podVolume{path: dir}, setUpEmptyDir(dir, v.EmptyDir, pod, node, fsGroup)
	case v.HostPath != nil:
		return podVolume{path: v.HostPath.Path}, checkHostPath(v.HostPath.Path, v.HostPath.Type)
	case v.DownwardAPI != nil:
		dir := volumeDir(root, uid, downwardAPIKind, v.Name)
		files, err := downwardAPIFiles(pod, v.DownwardAPI, node)
		if err != nil {
			return podVolume{}, err
		}
		if _, err := os.Stat(filepath.Join(dir, dataDirName)); err == nil {
			return podVolume{path: dir, readOnly: true}, nil // written by an earlier run
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return podVolume{}, err
		}
		return podVolume{path: dir, readOnly: true}, writeAtomic(dir, files, fsGroup)
	case isSourceVolume(v):
		return setUpSourceVolume(pod, v, root, node, src)
	default:
		return podVolume{}, errors.New("volume type not supported by skiff (emptyDir, hostPath, downwardAPI, configMap, secret and projected are)")
	}
}

// setUpEmptyDir creates an emptyDir as the kubelet does: a 0777 directory
// (group fsGroup and setgid with an fsGroup); with medium Memory a tmpfs
// is mounted on it, sized as the kubelet sizes it.
func setUpEmptyDir(dir string, src *corev1.EmptyDirVolumeSource, pod *corev1.Pod, node nodeInfo, fsGroup int) error {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	switch src.Medium {
	case corev1.StorageMediumDefault:
	case corev1.StorageMediumMemory:
		mounted, err := isMountPoint(dir)
		if err != nil {
			return err
		}
		if !mounted {
			size := emptyDirMemorySize(node.memory, src.SizeLimit, pod)
			if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size="+strconv.FormatInt(size.Value(), 10)); err != nil {
				return fmt.Errorf("mounting tmpfs at %s: %w", dir, err)
			}
		}
	default:
		return fmt.Errorf("unsupported emptyDir medium %q", src.Medium)
	}
	mode := os.FileMode(0o777)
	if fsGroup >= 0 {
		if err := os.Chown(dir, -1, fsGroup); err != nil {
			return err
		}
		mode |= os.ModeSetgid
	}
	return os.Chmod(dir, mode)
}

// emptyDirMemorySize is the kubelet's calculateEmptyDirMemorySize: the
// node's allocatable memory, lowered to the pod's memory limit (when every
// container has one), lowered to the volume's sizeLimit.
func emptyDirMemorySize(allocatable resource.Quantity, sizeLimit *resource.Quantity, pod *corev1.Pod) resource.Quantity {
	size := allocatable.DeepCopy()
	if lim, ok := podMemoryLimit(&pod.Spec); ok && lim.Sign() > 0 && lim.Cmp(size) <= 0 {
		size = lim
	}
	if sizeLimit != nil && sizeLimit.Sign() > 0 && sizeLimit.Cmp(size) <= 0 {
		size = sizeLimit.DeepCopy()
	}
	return size
}

// podMemoryLimit is the pod's memory limit: the sum of its regular
// containers' limits, or the largest init container's if higher; ok is
// false when a container has no memory limit.
func podMemoryLimit(spec *corev1.PodSpec) (resource.Quantity, bool) {
	var sum, initMax resource.Quantity
	for _, c := range spec.Containers {
		q, ok := c.Resources.Limits[corev1.ResourceMemory]
		if !ok {
			return resource.Quantity{}, false
		}
		sum.Add(q)
	}
	for _, c := range spec.InitContainers {
		q, ok := c.Resources.Limits[corev1.ResourceMemory]
		if !ok {
			return resource.Quantity{}, false
		}
		if kube.IsSidecar(&c) {
			sum.Add(q)
		} else if q.Cmp(initMax) > 0 {
			initMax = q
		}
	}
	if initMax.Cmp(sum) > 0 {
		return initMax, true
	}
	return sum, true
}

// podFSGroup is the pod's fsGroup, or -1.
func podFSGroup(pod *corev1.Pod) int {
	if sc := pod.Spec.SecurityContext; sc != nil && sc.FSGroup != nil {
		return int(*sc.FSGroup)
	}
	return -1
}

// isMountPoint reports whether dir is the root of a mount (its device
// differs from its parent's).
func isMountPoint(dir string) (bool, error) {
	var st, parent unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return false, err
	}
	if err := unix.Stat(filepath.Dir(dir), &parent); err != nil {
		return false, err
	}
	return st.Dev != parent.Dev, nil
}

// tearDownVolumes stops the refresh of the pod's volumes, unmounts them
// and removes its directory: the pod's volumes go with the pod, and so do
// its tokens.
func (w *worker) tearDownVolumes(pod *corev1.Pod) {
	w.stopVolumeRefresh()
	w.m.sources.tokens.forget(pod.UID)
	if err := tearDownVolumes(w.m.cfg.VolumeRoot, pod); err != nil {
		w.log.WithError(err).Error("removing pod volumes")
	}
}

func tearDownVolumes(root string, pod *corev1.Pod) error {
	if root == "" {
		return nil
	}
	return removePodVolumes(podDir(root, string(pod.UID)))
}

// removePodVolumes removes a pod's volume directory, unmounting what is
// mounted below it first (memory-backed emptyDirs, Secret and projected
// volumes) and never removing what may still be mounted.
func removePodVolumes(dir string) error {
	// NOTE: nothing is mounted below a directory that is gone, and reading
	// the mount table per finished pod made a restart onto 10000 of them
	// parse it 10000 times (2 GB of garbage, seconds of CPU).
	if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err := unmountAll(dir); err != nil {
		return err
	}
	return os.RemoveAll(dir)
}

// volumeDirs lists the pods (by UID) that have a volume directory under root.
func volumeDirs(root string) ([]string, error) {
	entries, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var uids []string
	for _, e := range entries {
		if e.IsDir() {
			uids = append(uids, e.Name())
		}
	}
	return uids, nil
}

// removeVolumeDir removes the volume directory of a pod that no longer
// exists, unmounting everything mounted below it first.
func removeVolumeDir(root, uid string) error {
	return removePodVolumes(filepath.Join(root, uid))
}
