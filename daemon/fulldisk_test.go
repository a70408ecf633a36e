//go:build integration

package daemon_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/internal/loopfs"
)

// fullDiskLogger prints 200 lines, waits for the gate "full", prints 2000
// more, says so in the gate "printed", waits for "freed", prints the last
// 100 and exits 0: 2300 lines, 2000 of them while the data disk is full.
const fullDiskLogger = `pad=xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
i=0
lines() { n=$(($i+$1)); while [ $i -lt $n ]; do i=$(($i+1)); echo "line $i $pad"; done; }
lines 200
while [ ! -e /gate/full ]; do sleep 0.05; done
lines 2000
touch /gate/printed
while [ ! -e /gate/freed ]; do sleep 0.05; done
lines 100
`

// TestFullDisk runs skiffd on a small ext4 data disk that fills up while a
// pod logs: writes answer 507, /readyz?verbose shows the failing storage
// check, skiffd restarted on the full disk serves reads, everything
// recovers by itself once space is freed, and the pod's lost log lines are
// counted in a Warning on the pod.
func TestFullDisk(t *testing.T) {
	t.Parallel()
	disk := loopfs.Mount(t, 64<<20)
	gate := t.TempDir()
	s := newSkiffd(t)
	s.dataDir = filepath.Join(disk.Dir, "data")
	s.logPath = filepath.Join(t.TempDir(), "skiffd.log")
	s.start()
	ctx := context.Background()
	pods := s.client.CoreV1().Pods("default")

	pod := shPod("logger", corev1.RestartPolicyNever, fullDiskLogger)
	pod.Spec.Volumes = []corev1.Volume{{Name: "gate", VolumeSource: corev1.VolumeSource{
		HostPath: &corev1.HostPathVolumeSource{Path: gate}}}}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "gate", MountPath: "/gate"}}
	if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "the first 200 lines in the log", func() (bool, error) {
		return strings.Contains(podLog(t, s.client, "logger"), "line 200 "), nil
	})

	disk.Fill(t)
	touch(t, gate, "full")
	waitFor(t, time.Minute, "the 2000 lines printed on the full disk", func() (bool, error) {
		return exists(filepath.Join(gate, "printed")), nil
	})
	// The store may still hold a few free pages: writes go on until the
	// disk refuses one.
	var werr error
	waitFor(t, time.Minute, "a write refused", func() (bool, error) {
		_, werr = s.client.BatchV1().Jobs("default").Create(ctx, shJob(fmt.Sprintf("j-%d", time.Now().UnixNano()), "true", 1, 1, 0, corev1.RestartPolicyNever), metav1.CreateOptions{})
		return werr != nil, nil
	})
	assertInsufficientStorage(t, werr)
	assertReadyz(t, s, http.StatusInternalServerError, "[-]storage failed: reason withheld\n")
	if code, body := get(t, s, "/readyz/storage"); code != 500 || !strings.Contains(body, "no space left on device") {
		t.Errorf("/readyz/storage = %d %q, want 500 naming the full disk", code, body)
	}

	// A restart on the full disk: skiffd starts and serves reads; the
	// container went on without it.
	s.stop()
	s.startAndWait("/livez")
	if _, err := pods.Get(ctx, "logger", metav1.GetOptions{}); err != nil {
		t.Fatalf("reading a pod after a restart on the full disk: %v", err)
	}
	if _, err := s.client.BatchV1().Jobs("").List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("listing Jobs after a restart on the full disk: %v", err)
	}
	// As before the restart, the store may have pages free again (those
	// of transactions the restart released): writes go on until the disk
	// refuses one, and only then is the storage check failing (a write
	// that went through, skiffd's own at start included, clears it).
	waitFor(t, time.Minute, "a write refused after the restart", func() (bool, error) {
		_, werr = s.client.CoreV1().ConfigMaps("default").Create(ctx,
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "refused-"}}, metav1.CreateOptions{})
		return werr != nil, nil
	})
	assertInsufficientStorage(t, werr)
	assertReadyz(t, s, http.StatusInternalServerError, "[-]storage failed: reason withheld\n")

	disk.Free(t)
	waitFor(t, time.Minute, "readyz once space is freed", func() (bool, error) {
		code, _ := get(t, s, "/readyz")
		return code == http.StatusOK, nil
	})
	assertReadyz(t, s, http.StatusOK, "[+]storage ok\n")
	if _, err := s.client.BatchV1().Jobs("default").Create(ctx, shJob("after", "true", 1, 1, 0, corev1.RestartPolicyNever), metav1.CreateOptions{}); err != nil {
		t.Fatalf("a write once space is freed: %v", err)
	}
	touch(t, gate, "freed")

	waitFor(t, 2*time.Minute, "the logger succeeded", func() (bool, error) {
		p, err := pods.Get(ctx, "logger", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if p.Status.Phase == corev1.PodFailed {
			return false, fmt.Errorf("pod failed: %+v", p.Status)
		}
		return p.Status.Phase == corev1.PodSucceeded, nil
	})
	kept := strings.Count(podLog(t, s.client, "logger"), "\n")
	var dropped *corev1.Event
	waitFor(t, time.Minute, "the LogLinesDropped warning", func() (bool, error) {
		evs, err := s.client.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for i, ev := range evs.Items {
			if ev.InvolvedObject.Name == "logger" && ev.Reason == "LogLinesDropped" {
				dropped = &evs.Items[i]
			}
		}
		return dropped != nil, nil
	})
	m := regexp.MustCompile(`^Container c0 lost (\d+) log lines: its log file could not be written \(.*no space left on device.*\)$`).FindStringSubmatch(dropped.Message)
	if m == nil || dropped.Type != corev1.EventTypeWarning {
		t.Fatalf("event %s %q: want a Warning with the count and the cause", dropped.Type, dropped.Message)
	}
	lost, _ := strconv.Atoi(m[1])
	t.Logf("%d lines kept, %d reported lost", kept, lost)
	if lost == 0 || kept+lost != 2300 {
		t.Errorf("%d lines in the log and %d reported lost: want 2300 in all", kept, lost)
	}
}

// podLog is the pod's log through the API ("" while there is none).
func assertInsufficientStorage(t *testing.T, err error) {
	t.Helper()
	var se *apierrors.StatusError
	if !errors.As(err, &se) {
		t.Fatalf("write on a full disk: %v, want a Status", err)
	}
	st := se.ErrStatus
	if st.Code != http.StatusInsufficientStorage || st.Reason != metav1.StatusReasonUnknown ||
		!strings.Contains(st.Message, "no space left on device") {
		t.Errorf("write on a full disk: %d %q %q, want 507 naming the full disk", st.Code, st.Reason, st.Message)
	}
}

// assertReadyz checks /readyz?verbose's code and that it lists line.
func assertReadyz(t *testing.T, s *skiffd, code int, line string) {
	t.Helper()
	gotCode, body := get(t, s, "/readyz?verbose")
	if gotCode != code || !strings.Contains(body, line) || !strings.Contains(body, "[+]ping ok\n") {
		t.Errorf("/readyz?verbose = %d:\n%s\nwant %d listing %q", gotCode, body, code, line)
	}
}

func get(t *testing.T, s *skiffd, path string) (int, string) {
	t.Helper()
	resp, err := s.get(path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func touch(t *testing.T, dir, name string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
