//go:build integration

package daemon_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	containerdclient "github.com/containerd/containerd"
	"github.com/containerd/containerd/images"
	"github.com/containerd/containerd/namespaces"
	"github.com/creack/pty"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/api"
	"github.com/skiff-sh/skiff/runtime/runtimetest"
)

// TestImagesImport removes the test image that skiffd imported at start,
// imports it again with `skiffd images import` and runs a pod that may not
// pull it; a file that is no image tarball is refused with the daemon's
// message and a non-zero exit.
func TestImagesImport(t *testing.T) {
	s := newSkiffd(t)
	s.start()
	removeTestImage(t, "skiff-"+strings.ToLower(t.Name()))

	out, stderr, err := runSkiffd("images", "import", "--socket", s.socket, testImage)
	if err != nil {
		t.Fatalf("skiffd images import: %v\n%s", err, stderr)
	}
	if got := strings.TrimSpace(out); got != runtimetest.Image {
		t.Errorf("imported %q, want %q", got, runtimetest.Image)
	}

	bogus := filepath.Join(t.TempDir(), "bogus.tar")
	if err := os.WriteFile(bogus, []byte("not an image tarball"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, err = runSkiffd("images", "import", "--kubeconfig", s.kubeconfig, bogus)
	if err == nil || !strings.HasPrefix(stderr, "skiffd images: importing image: ") {
		t.Errorf("importing a bogus tarball: err %v, stderr %q; want an exit status and the daemon's message", err, stderr)
	}

	pod := shPod("never-pull", corev1.RestartPolicyNever, "true")
	pod.Spec.Containers[0].ImagePullPolicy = corev1.PullNever
	if _, err := s.client.CoreV1().Pods("default").Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, s.client, pod.Name, time.Minute, "succeeded", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodSucceeded
	})
}

// removeTestImage deletes the test image from a containerd namespace.
func removeTestImage(t *testing.T, ns string) {
	t.Helper()
	client, err := containerdclient.New(containerd.Address)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	ctx := namespaces.WithNamespace(context.Background(), ns)
	if err := client.ImageService().Delete(ctx, runtimetest.Image, images.SynchronousDelete()); err != nil {
		t.Fatalf("removing %s from %s: %v", runtimetest.Image, ns, err)
	}
}

// runSkiffd runs the skiffd binary with args and returns its output.
func runSkiffd(args ...string) (stdout, stderr string, err error) {
	var out, errOut bytes.Buffer
	cmd := exec.Command(skiffdBin, args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// TestImagesList lists the node's images through the API and `skiffd
// images list`: the test image skiffd imported, with containerd's digest
// and size, never used until a pod has run from it. Importing on a
// terminal shows the bytes read and the rate; into a pipe, only the names.
func TestImagesList(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.start()
	ns := "skiff-" + strings.ToLower(t.Name())
	client, err := containerdclient.New(containerd.Address)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	img, err := client.ImageService().Get(namespaces.WithNamespace(context.Background(), ns), runtimetest.Image)
	if err != nil {
		t.Fatal(err)
	}

	list := func() api.Image {
		t.Helper()
		out, stderr, err := runSkiffd("images", "list", "--socket", s.socket, "-o", "json")
		if err != nil {
			t.Fatalf("skiffd images list: %v\n%s", err, stderr)
		}
		var l api.ImageList
		if err := json.Unmarshal([]byte(out), &l); err != nil {
			t.Fatal(err)
		}
		if l.Kind != "ImageList" || len(l.Items) != 1 || l.Items[0].Name != runtimetest.Image {
			t.Fatalf("images %+v", l)
		}
		return l.Items[0]
	}
	before := list()
	if before.Digest != img.Target.Digest.String() || before.Size <= 0 || before.LastUsed != nil {
		t.Errorf("image %+v; want digest %s, a size, never used", before, img.Target.Digest)
	}
	table, _, err := runSkiffd("images", "list", "--kubeconfig", s.kubeconfig, "--server", s.url(""))
	if err != nil || !regexp.MustCompile(`(?m)^docker.io/library/busybox:1.35\s+`+regexp.QuoteMeta(before.Digest[:19])+`\s+[0-9.]+ [KM]iB\s+never$`).MatchString(table) {
		t.Errorf("table (%v):\n%s", err, table)
	}

	ranAt := time.Now()
	pod := shPod("user", corev1.RestartPolicyNever, "true")
	if _, err := s.client.CoreV1().Pods("default").Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, s.client, pod.Name, time.Minute, "succeeded", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded })
	if after := list(); after.LastUsed == nil || after.LastUsed.Time.Before(ranAt.Truncate(time.Second)) {
		t.Errorf("lastUsed %v after a pod ran at %v", after.LastUsed, ranAt)
	}

	// Importing on a terminal: progress, then the names.
	master, slave, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	cmd := exec.Command(skiffdBin, "images", "import", "--socket", s.socket, testImage)
	cmd.Stdout, cmd.Stderr = slave, slave
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	var screen bytes.Buffer
	_, _ = io.Copy(&screen, master) // until the command exits (EIO)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("import on a terminal: %v\n%s", err, screen.String())
	}
	if !regexp.MustCompile(`importing \S+busybox-1.35.tar: [0-9.]+ [KM]iB in [0-9.]+m?s \([0-9.]+ [KMG]?i?B/s\)\r?\n` + regexp.QuoteMeta(runtimetest.Image)).MatchString(screen.String()) {
		t.Errorf("terminal shows %q; want the bytes read and the rate, then the name", screen.String())
	}
	// Into a pipe: the names only.
	out, _, err := runSkiffd("images", "import", "--socket", s.socket, testImage)
	if err != nil || out != runtimetest.Image+"\n" {
		t.Errorf("import into a pipe: %v %q", err, out)
	}
}
