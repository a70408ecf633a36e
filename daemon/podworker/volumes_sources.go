package podworker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
)

// The directories of the volumes whose files come from API objects, as the
// kubelet names its plugins.
const (
	configMapKind = "kubernetes.io~configmap"
	secretKind    = "kubernetes.io~secret"
	projectedKind = "kubernetes.io~projected"
)

// isSourceVolume reports whether v's files come from ConfigMaps or Secrets
// (configMap, secret and projected volumes): they are refreshed when those
// change.
func isSourceVolume(v *corev1.Volume) bool {
	return v.ConfigMap != nil || v.Secret != nil || v.Projected != nil
}

// sourceVolumeDir is where v lives; memory says it is a tmpfs. Secret and
// projected volumes are memory-backed, as the kubelet's plugins wrap a
// memory emptyDir: a Secret never touches the disk.
func sourceVolumeDir(root, uid string, v *corev1.Volume) (dir string, memory bool) {
	switch {
	case v.Secret != nil:
		return volumeDir(root, uid, secretKind, v.Name), true
	case v.Projected != nil:
		return volumeDir(root, uid, projectedKind, v.Name), true
	}
	return volumeDir(root, uid, configMapKind, v.Name), false
}

// setUpSourceVolume renders v from the objects it names and publishes it
// atomically; a tmpfs is mounted first where the volume is memory-backed.
// A missing required object fails with the kubelet's message, before
// anything is created — unless an earlier run of skiffd published the
// volume already: then the pod's containers may be running on it (or have
// finished), and it keeps its files, as the refresh does and as a
// kubelet's mounted volume does when its object goes.
func setUpSourceVolume(pod *corev1.Pod, v *corev1.Volume, root string, node nodeInfo, src sourceReader) (podVolume, error) {
	dir, memory := sourceVolumeDir(root, string(pod.UID), v)
	files, err := sourceVolumeFiles(pod, v, node, src)
	if err != nil {
		if isPublished(dir) {
			return podVolume{path: dir, readOnly: true}, nil
		}
		return podVolume{}, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return podVolume{}, err
	}
	if memory {
		size := emptyDirMemorySize(node.memory, nil, pod)
		if err := mountTmpfs(dir, size.Value()); err != nil {
			return podVolume{}, err
		}
		if err := os.Chmod(dir, 0o755); err != nil {
			return podVolume{}, err
		}
	}
	if _, err := writePayload(dir, files, podFSGroup(pod)); err != nil {
		return podVolume{}, fmt.Errorf("writing volume %q: %w", v.Name, err)
	}
	return podVolume{path: dir, readOnly: true}, nil
}

// isPublished reports whether dir holds a volume writePayload published.
func isPublished(dir string) bool {
	info, err := os.Lstat(filepath.Join(dir, dataDirName))
	return err == nil && info.Mode()&os.ModeSymlink != 0
}

// sourceVolumeFiles is the payload of a configMap, secret or projected
// volume: the kubelet's MakePayload of each plugin.
func sourceVolumeFiles(pod *corev1.Pod, v *corev1.Volume, node nodeInfo, src sourceReader) (map[string]volumeFile, error) {
	files := map[string]volumeFile{}
	switch {
	case v.ConfigMap != nil:
		s := v.ConfigMap
		return files, addConfigMapFiles(files, pod, s.Name, s.Items, s.Optional, fileMode(s.DefaultMode, corev1.ConfigMapVolumeSourceDefaultMode), src)
	case v.Secret != nil:
		s := v.Secret
		return files, addSecretFiles(files, pod, s.SecretName, s.Items, s.Optional, fileMode(s.DefaultMode, corev1.SecretVolumeSourceDefaultMode), src)
	case v.Projected != nil:
		return files, addProjectedFiles(files, pod, v.Projected, node, src)
	}
	return nil, fmt.Errorf("volume %q has no configMap, secret or projected source", v.Name)
}

func fileMode(m *int32, dflt int32) os.FileMode {
	if m != nil {
		return os.FileMode(*m)
	}
	return os.FileMode(dflt)
}

// addConfigMapFiles adds a ConfigMap's keys (all, or the items) to files.
func addConfigMapFiles(files map[string]volumeFile, pod *corev1.Pod, name string, items []corev1.KeyToPath,
	opt *bool, mode os.FileMode, src sourceReader) error {
	cm, err := src.configMap(pod.Namespace, name)
	switch {
	case apierrors.IsNotFound(err) && optional(opt):
		return nil
	case err != nil:
		return err
	}
	data := make(map[string][]byte, len(cm.Data)+len(cm.BinaryData))
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		data[k] = v
	}
	return addKeyFiles(files, data, items, optional(opt), mode, "configmap references non-existent config key: %s")
}

// addSecretFiles adds a Secret's keys (all, or the items) to files.
func addSecretFiles(files map[string]volumeFile, pod *corev1.Pod, name string, items []corev1.KeyToPath,
	opt *bool, mode os.FileMode, src sourceReader) error {
	s, err := src.secret(pod.Namespace, name)
	switch {
	case apierrors.IsNotFound(err) && optional(opt):
		return nil
	case err != nil:
		return err
	}
	return addKeyFiles(files, s.Data, items, optional(opt), mode, "references non-existent secret key: %s")
}

// addKeyFiles maps data to files: every key under its own name with mode,
// or only the items, each at its path with its own mode or mode. A missing
// key fails (missingFmt) unless the source is optional.
func addKeyFiles(files map[string]volumeFile, data map[string][]byte, items []corev1.KeyToPath, opt bool,
	mode os.FileMode, missingFmt string) error {
	if len(items) == 0 {
		for k, v := range data {
			files[k] = volumeFile{content: string(v), mode: mode}
		}
		return nil
	}
	for _, it := range items {
		v, ok := data[it.Key]
		if !ok {
			if opt {
				continue
			}
			return fmt.Errorf(missingFmt, it.Key)
		}
		files[it.Path] = volumeFile{content: string(v), mode: fileMode(it.Mode, int32(mode))}
	}
	return nil
}

// addProjectedFiles adds every source of a projected volume, as the
// kubelet's projected plugin collects them: the errors of all sources
// together.
// A serviceAccountToken source is a token bound to the pod (tokens).
func addProjectedFiles(files map[string]volumeFile, pod *corev1.Pod, p *corev1.ProjectedVolumeSource, node nodeInfo, src sourceReader) error {
	mode := fileMode(p.DefaultMode, corev1.ProjectedVolumeSourceDefaultMode)
	var errs []error
	for _, s := range p.Sources {
		switch {
		case s.ConfigMap != nil:
			errs = append(errs, addConfigMapFiles(files, pod, s.ConfigMap.Name, s.ConfigMap.Items, s.ConfigMap.Optional, mode, src))
		case s.Secret != nil:
			errs = append(errs, addSecretFiles(files, pod, s.Secret.Name, s.Secret.Items, s.Secret.Optional, mode, src))
		case s.DownwardAPI != nil:
			m := int32(mode)
			dw, err := downwardAPIFiles(pod, &corev1.DownwardAPIVolumeSource{Items: s.DownwardAPI.Items, DefaultMode: &m}, node)
			for path, f := range dw {
				files[path] = f
			}
			errs = append(errs, err)
		case s.ServiceAccountToken != nil:
			tok, err := src.token(pod, s.ServiceAccountToken)
			if err == nil {
				// NOTE: the kubelet writes the token with the volume's mode.
				files[s.ServiceAccountToken.Path] = volumeFile{content: tok, mode: mode}
			}
			errs = append(errs, err)
		}
	}
	if agg := utilerrors.NewAggregate(errs); agg != nil {
		return agg
	}
	return nil
}

// volumeRefresh is the goroutine that keeps a pod's source volumes current.
type volumeRefresh struct {
	stop, done chan struct{}
}

// startVolumeRefresh rewrites the pod's configMap, secret and projected
// volumes whenever a ConfigMap or Secret of its namespace changes or one of
// its ServiceAccount tokens is due (changed
// was taken before the volumes were first written), until the volumes are
// torn down or the daemon stops. An object that went missing keeps its old
// files, as on a kubelet.
func (w *worker) startVolumeRefresh(ctx context.Context, pod *corev1.Pod, changed <-chan struct{}) {
	var vols []*corev1.Volume
	for i := range pod.Spec.Volumes {
		if isSourceVolume(&pod.Spec.Volumes[i]) {
			vols = append(vols, &pod.Spec.Volumes[i])
		}
	}
	if len(vols) == 0 || w.refresh != nil {
		return
	}
	r := &volumeRefresh{stop: make(chan struct{}), done: make(chan struct{})}
	w.refresh = r
	go func() {
		defer close(r.done)
		for {
			// A token is asked for again once due, as the kubelet's
			// token manager does; the payload then changes.
			var due <-chan time.Time
			timer := (*time.Timer)(nil)
			if at := w.m.sources.tokens.nextRefresh(pod.UID); !at.IsZero() {
				timer = time.NewTimer(at.Sub(w.m.now()))
				due = timer.C
			}
			stopped := false
			select {
			case <-changed:
			case <-due:
			case <-r.stop:
				stopped = true
			case <-ctx.Done():
				stopped = true
			}
			if timer != nil {
				timer.Stop()
			}
			if stopped {
				return
			}
			changed = w.m.sources.changed(pod.Namespace)
			for _, v := range vols {
				w.refreshVolume(pod, v)
			}
		}
	}()
}

// refreshVolume writes v again if its objects changed.
func (w *worker) refreshVolume(pod *corev1.Pod, v *corev1.Volume) {
	files, err := sourceVolumeFiles(pod, v, w.m.node, w.m.sources)
	if err != nil {
		// The files stay; the kubelet reports its failed remount so.
		w.log.WithError(err).WithField("volume", v.Name).Warn("refreshing volume")
		w.event(corev1.EventTypeWarning, "FailedMount", "MountVolume.SetUp failed for volume %q : %s", v.Name, err)
		return
	}
	dir, _ := sourceVolumeDir(w.m.cfg.VolumeRoot, string(pod.UID), v)
	changed, err := writePayload(dir, files, podFSGroup(pod))
	switch {
	case err != nil:
		w.log.WithError(err).WithField("volume", v.Name).Warn("refreshing volume")
	case changed:
		w.log.WithField("volume", v.Name).Debug("volume refreshed")
	}
}

// stopVolumeRefresh stops the refresh and waits for it: the volumes may
// then be torn down.
func (w *worker) stopVolumeRefresh() {
	if r := w.refresh; r != nil {
		w.refresh = nil
		close(r.stop)
		<-r.done
	}
}
