//go:build integration

package daemon_test

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/skiff-sh/skiff/db"
)

// TestConfigMapAndSecretJob applies the Kubernetes documentation's
// ConfigMap and Secret examples together with a Job that takes them as
// env, envFrom, configMap, secret and projected volumes, in one
// multi-document file, with kubectl apply; the Job's output shows every
// value where the kubelet puts it.
func TestConfigMapAndSecretJob(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.start()
	out := s.kubectl(t, "apply", "-f", "testdata/configmap-secret-job.yaml")
	for _, want := range []string{"configmap/game-demo created", "secret/test-secret created", "job.batch/configured created"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl apply said %q, want %q", out, want)
		}
	}
	job := waitJob(t, s.client, "default", "configured", batchv1.JobComplete, 90*time.Second)
	pods := jobPods(t, s.client, job)
	want := strings.Join([]string{
		"lives=3 ui=user-interface.properties",
		"user=my-app pass=39528$vdg7Jb",
		"game.properties user-interface.properties ",
		"enemy.types=aliens,monsters",
		"player.maximum-lives=5",
		"400",
		"440",
		"secret on tmpfs",
		"my-app",
		"339528$vdg7Jbconfigured",
	}, "\n") + "\n"
	if diff := cmp.Diff(want, podLog(t, s.client, pods[0].Name)); diff != "" {
		t.Errorf("the Job's output (-want,+got):\n%s", diff)
	}

	// kubectl shows them as a cluster does; applying the file again
	// changes nothing.
	if out := s.kubectl(t, "get", "configmap/game-demo", "secret/test-secret"); !regexpMatch(`(?s)NAME\s+DATA\s+AGE\s+configmap/game-demo\s+4\s+.*NAME\s+TYPE\s+DATA\s+AGE\s+secret/test-secret\s+Opaque\s+2\s`, out) {
		t.Errorf("kubectl get:\n%s", out)
	}
	if out := s.kubectl(t, "apply", "-f", "testdata/configmap-secret-job.yaml"); strings.Count(out, "unchanged") != 3 {
		t.Errorf("second apply said %q, want everything unchanged", out)
	}

	// The Secret's password, plain or base64, is in neither skiffd's log
	// (debug level: every request) nor any event.
	evs, err := s.client.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	logged, err := os.ReadFile(s.logFile())
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"39528$vdg7Jb", "Mzk1MjgkdmRnN0pi"} {
		if strings.Contains(string(logged), secret) {
			t.Errorf("skiffd's log holds the Secret's value %q", secret)
		}
		for _, e := range evs.Items {
			if strings.Contains(e.Message, secret) {
				t.Errorf("event %s %q holds the Secret's value", e.Reason, e.Message)
			}
		}
	}
}

// TestMissingConfigMapAndSecret: a pod whose env needs a missing ConfigMap
// waits in CreateContainerConfigError with the kubelet's message, one whose
// volume needs a missing Secret stays ContainerCreating with a FailedMount
// event; both start as soon as the object is created. A Job whose pod
// waits so is still ended by its activeDeadlineSeconds.
func TestMissingConfigMapAndSecret(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.start()
	ctx := context.Background()
	c := s.client

	envPod := scriptPod("env-pod", "echo $LEVEL")
	envPod.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "LEVEL", ValueFrom: &corev1.EnvVarSource{
		ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "late-config"}, Key: "level"}}}}
	volPod := scriptPod("vol-pod", "cat /creds/token")
	volPod.Spec.Volumes = []corev1.Volume{{Name: "creds", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "late-secret"}}}}
	volPod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "creds", MountPath: "/creds"}}
	// A projected token needs no object of the namespace: its pod starts
	// at once with a JWT of its ServiceAccount.
	tokenPod := scriptPod("token-pod", "head -c 3 /var/run/secrets/tokens/token")
	tokenPod.Spec.Volumes = []corev1.Volume{{Name: "token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}}}}}}
	tokenPod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "token", MountPath: "/var/run/secrets/tokens"}}
	for _, p := range []*corev1.Pod{envPod, volPod, tokenPod} {
		if _, err := c.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitPod(t, c, "env-pod", 60*time.Second, "in CreateContainerConfigError", func(p *corev1.Pod) bool {
		return waitingAs(p, "CreateContainerConfigError", `configmap "late-config" not found`)
	})
	waitPod(t, c, "vol-pod", 60*time.Second, "ContainerCreating", func(p *corev1.Pod) bool {
		return waitingAs(p, "ContainerCreating", "")
	})
	waitEvent(t, c, "vol-pod", corev1.EventTypeWarning, "FailedMount", `MountVolume.SetUp failed for volume "creds" : secret "late-secret" not found`)
	waitEvent(t, c, "env-pod", corev1.EventTypeWarning, "Failed", `Error: configmap "late-config" not found`)

	if _, err := c.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "late-config"},
		Data: map[string]string{"level": "42"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "late-secret"},
		StringData: map[string]string{"token": "s3cr3t"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"env-pod": "42\n", "vol-pod": "s3cr3t", "token-pod": "eyJ"} {
		waitPod(t, c, name, 60*time.Second, "Succeeded", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded })
		if got := podLog(t, c, name); got != want {
			t.Errorf("%s printed %q, want %q", name, got, want)
		}
	}

	// A Job whose pod waits for a ConfigMap that never comes still ends at
	// its deadline.
	job := shJob("waits-for-ever", "true", 1, 1, 0, corev1.RestartPolicyNever)
	job.Spec.ActiveDeadlineSeconds = ptr(int64(3))
	job.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "never"}}}}}
	job.Spec.Template.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "cfg", MountPath: "/cfg"}}
	if _, err := c.BatchV1().Jobs("default").Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	done := waitJob(t, c, "default", "waits-for-ever", batchv1.JobFailed, 60*time.Second)
	if cond := done.Status.Conditions[len(done.Status.Conditions)-1]; cond.Reason != batchv1.JobReasonDeadlineExceeded {
		t.Errorf("job failed with %q, want DeadlineExceeded", cond.Reason)
	}
}

// TestConfigMapVolumeRefresh: a running pod sees a ConfigMap's update in
// its volume (never half of it: the files change together), except
// through a subPath mount, which keeps what it had as on a kubelet.
func TestConfigMapVolumeRefresh(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.start()
	ctx := context.Background()
	c := s.client
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "live"}, Data: map[string]string{"a": "v1", "b": "v1"}}
	if _, err := c.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The container prints the pair of files whenever it changes, and the
	// file mounted through subPath beside it. NOTE: the pair is read through
	// one resolution of ..data, as a reader that wants both of one version
	// must on a kubelet too: two reads through /cfg/a and /cfg/b may fall
	// on either side of the swap.
	pod := scriptPod("watcher", `old=; while true; do new="$(cd /cfg/..data && echo "$(cat a 2>/dev/null)-$(cat b 2>/dev/null)") sub=$(cat /sub/a)"; `+
		`[ "$new" != "$old" ] && echo "$new"; old=$new; sleep 0.05; done`)
	pod.Spec.Volumes = []corev1.Volume{{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "live"}}}}}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{
		{Name: "cfg", MountPath: "/cfg"},
		{Name: "cfg", MountPath: "/sub/a", SubPath: "a"},
	}
	if _, err := c.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "the first content", func() (bool, error) {
		return strings.Contains(podLog(t, c, "watcher"), "v1-v1 sub=v1\n"), nil
	})
	cm.Data = map[string]string{"a": "v2", "b": "v2"}
	if _, err := c.CoreV1().ConfigMaps("default").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the update in the volume", func() (bool, error) {
		return strings.Contains(podLog(t, c, "watcher"), "v2-v2 sub=v1\n"), nil
	})
	if log := podLog(t, c, "watcher"); strings.Contains(log, "v1-v2") || strings.Contains(log, "v2-v1") {
		t.Errorf("a reader saw half an update:\n%s", log)
	}
}

// TestSecretVolumeTeardown: a Secret volume is a tmpfs of its own, which
// goes when the pod is deleted, and also when the pod was deleted while
// skiffd was down (killed): the sweep unmounts it before removing the
// directory.
func TestSecretVolumeTeardown(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.start()
	ctx := context.Background()
	c := s.client
	if _, err := c.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds"},
		StringData: map[string]string{"token": "t"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	start := func(name string) string {
		t.Helper()
		p := scriptPod(name, "sleep 3600")
		p.Spec.Volumes = []corev1.Volume{{Name: "creds", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "creds"}}}}
		p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "creds", MountPath: "/creds"}}
		created, err := c.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		waitPod(t, c, name, 60*time.Second, "running", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
		dir := filepath.Join(s.dataDir, "volumes", string(created.UID), "volumes", "kubernetes.io~secret", "creds")
		if fs := mountType(t, dir); fs != "tmpfs" {
			t.Fatalf("the secret volume %s is mounted as %q, want tmpfs", dir, fs)
		}
		return dir
	}
	gone := func(dir string) {
		t.Helper()
		waitFor(t, 60*time.Second, "the secret volume gone", func() (bool, error) {
			_, err := os.Stat(dir)
			return mountType(t, dir) == "" && os.IsNotExist(err), nil
		})
	}

	dir := start("deleted")
	zero := int64(0)
	if err := c.CoreV1().Pods("default").Delete(ctx, "deleted", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	gone(dir)

	// Deleted while skiffd is down: the store loses the pod, as a restore
	// of an older backup would.
	dir = start("orphaned")
	s.kill()
	removePodFromStore(t, s, "default", "orphaned")
	s.start()
	gone(dir)
}

// TestSourceVolumesOutliveTheirObjects: a running pod keeps the files of
// a ConfigMap and a Secret deleted under it, also across a kill -9 of
// skiffd, and its exit is recorded after the restart (the volumes set up
// again from objects that are gone must not hold the pod back).
func TestSourceVolumesOutliveTheirObjects(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.start()
	ctx := context.Background()
	c := s.client
	if _, err := c.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "conf"},
		Data: map[string]string{"a": "v1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds"},
		StringData: map[string]string{"b": "s3cr3t"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	signal := t.TempDir()
	p := scriptPod("keeps", `while [ ! -f /signal/go ]; do sleep 0.05; done; cat /cfg/a /sec/b`)
	p.Spec.Volumes = []corev1.Volume{
		{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "conf"}}}},
		{Name: "sec", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "creds"}}},
		{Name: "signal", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: signal}}},
	}
	p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "cfg", MountPath: "/cfg"}, {Name: "sec", MountPath: "/sec"}, {Name: "signal", MountPath: "/signal"}}
	if _, err := c.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, c, "keeps", 60*time.Second, "running", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
	if err := c.CoreV1().ConfigMaps("default").Delete(ctx, "conf", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.CoreV1().Secrets("default").Delete(ctx, "creds", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The refresh that finds them gone says so, as a kubelet's remount does.
	waitEvent(t, c, "keeps", corev1.EventTypeWarning, "FailedMount", `MountVolume.SetUp failed for volume "cfg" : configmap "conf" not found`)
	waitEvent(t, c, "keeps", corev1.EventTypeWarning, "FailedMount", `MountVolume.SetUp failed for volume "sec" : secret "creds" not found`)
	s.kill()
	s.start()
	if err := os.WriteFile(filepath.Join(signal, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitPod(t, c, "keeps", 60*time.Second, "Succeeded", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded })
	if got := podLog(t, c, "keeps"); got != "v1s3cr3t" {
		t.Errorf("the pod printed %q, want the deleted objects' values", got)
	}
}

// TestSourceVolumesFSGroup: a non-root container of a pod with an fsGroup
// reads a Secret whose defaultMode is 0400 and a ConfigMap item of mode
// 0400, as on a kubelet, which gives the fsGroup read access to the files
// of read-only volumes.
func TestSourceVolumesFSGroup(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.start()
	ctx := context.Background()
	c := s.client
	if _, err := c.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds"},
		StringData: map[string]string{"token": "t0ken"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "conf"},
		Data: map[string]string{"level": "7"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p := scriptPod("non-root", `stat -L -c '%a %g' /creds/token /conf/lvl; cat /creds/token /conf/lvl; echo; id -u`)
	p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr(int64(1000)), FSGroup: ptr(int64(2000))}
	p.Spec.Volumes = []corev1.Volume{
		{Name: "creds", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "creds", DefaultMode: ptr(int32(0o400))}}},
		{Name: "conf", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "conf"},
			Items: []corev1.KeyToPath{{Key: "level", Path: "lvl", Mode: ptr(int32(0o400))}}}}},
	}
	p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "creds", MountPath: "/creds"}, {Name: "conf", MountPath: "/conf"}}
	if _, err := c.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, c, "non-root", 60*time.Second, "finished", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	})
	if diff := cmp.Diff("440 2000\n440 2000\nt0ken7\n1000\n", podLog(t, c, "non-root")); diff != "" {
		t.Errorf("the non-root container's output (-want,+got):\n%s", diff)
	}
}

// scriptPod is a Never-restarting busybox pod running script.
func scriptPod(name, script string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{
			Name: "main", Image: "busybox:1.35", Command: []string{"sh", "-c", script},
		}}},
	}
}

// waitingAs reports whether the pod's first container waits with reason
// and message.
func waitingAs(p *corev1.Pod, reason, message string) bool {
	if len(p.Status.ContainerStatuses) == 0 {
		return false
	}
	w := p.Status.ContainerStatuses[0].State.Waiting
	return w != nil && w.Reason == reason && (message == "" || w.Message == message)
}

// waitEvent waits for an event of the pod with type, reason and message.
func waitEvent(t testing.TB, c kubernetes.Interface, pod, typ, reason, message string) {
	t.Helper()
	waitFor(t, 60*time.Second, "event "+reason+" on "+pod, func() (bool, error) {
		evs, err := c.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + pod})
		if err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.Type == typ && e.Reason == reason && e.Message == message {
				return true, nil
			}
		}
		return false, nil
	})
}

// mountType is the file system type mounted at dir, "" if none.
func mountType(t testing.TB, dir string) string {
	t.Helper()
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 9 || fields[4] != dir {
			continue
		}
		for i, f := range fields {
			if f == "-" && i+1 < len(fields) {
				return fields[i+1]
			}
		}
	}
	return ""
}

// removePodFromStore deletes a pod straight from a stopped skiffd's store.
func removePodFromStore(t testing.TB, s *skiffd, ns, name string) {
	t.Helper()
	store, err := db.Open(filepath.Join(s.dataDir, "skiff.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if err := store.Write(func(tx *db.Tx) error { _, err := tx.Delete(db.Pods, ns, name); return err }); err != nil {
		t.Fatal(err)
	}
}

// regexpMatch reports whether s matches the regular expression re.
func regexpMatch(re, s string) bool { return regexp.MustCompile(re).MatchString(s) }
