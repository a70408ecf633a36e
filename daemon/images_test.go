//go:build integration

package daemon_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	containerdclient "github.com/containerd/containerd"
	"github.com/containerd/containerd/images"
	"github.com/containerd/containerd/namespaces"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
	_, stderr, err = runSkiffd("images", "import", "--server", "http://"+s.addr, bogus)
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
