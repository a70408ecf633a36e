//go:build integration

package daemon_test

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// authRegistry serves the test image as <host>/private/busybox:1.35 to
// clients with its basic-auth credentials only.
type authRegistry struct {
	blobs     map[string][]byte // by digest
	manifest  string            // the manifest's digest
	mediaType string
}

func newAuthRegistry(t *testing.T) string {
	t.Helper()
	f, err := os.Open(testImage)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	reg := &authRegistry{blobs: map[string][]byte{}}
	var index []byte
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		switch name := path.Clean(h.Name); {
		case name == "index.json":
			index = data
		case strings.HasPrefix(name, "blobs/sha256/"):
			reg.blobs["sha256:"+path.Base(name)] = data
		}
	}
	var idx struct {
		Manifests []struct{ Digest, MediaType string }
	}
	if err := json.Unmarshal(index, &idx); err != nil || len(idx.Manifests) == 0 {
		t.Fatalf("the test image's index: %v", err)
	}
	reg.manifest, reg.mediaType = idx.Manifests[0].Digest, idx.Manifests[0].MediaType
	srv := httptest.NewServer(reg)
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func (reg *authRegistry) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if user, pass, ok := r.BasicAuth(); !ok || user != "robot" || pass != "pw" {
		w.Header().Set("WWW-Authenticate", `Basic realm="private"`)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/v2/private/busybox/")
	kind, ref, _ := strings.Cut(rest, "/")
	if r.URL.Path == "/v2/" {
		return
	}
	if ref == "1.35" {
		ref = reg.manifest
	}
	data, found := reg.blobs[ref]
	if !ok || !found {
		http.NotFound(w, r)
		return
	}
	if kind == "manifests" {
		w.Header().Set("Content-Type", reg.mediaType)
	}
	w.Header().Set("Docker-Content-Digest", ref)
	if r.Method != http.MethodHead {
		w.Write(data)
	}
}

// TestImagePullSecrets: a pod pulls from a registry that wants credentials
// only with an imagePullSecrets entry naming a docker-registry Secret
// (created by kubectl); a pull secret that does not exist is named in a
// FailedToRetrieveImagePullSecret event and the others still serve.
func TestImagePullSecrets(t *testing.T) {
	t.Parallel()
	host := newAuthRegistry(t)
	s := newSkiffd(t)
	s.start()
	ctx := context.Background()
	c := s.client
	image := host + "/private/busybox:1.35"
	s.kubectl(t, "create", "secret", "docker-registry", "regcred", "--docker-server="+host, "--docker-username=robot", "--docker-password=pw")
	pod := func(name string, secrets ...string) *corev1.Pod {
		p := scriptPod(name, "echo pulled")
		p.Spec.Containers[0].Image = image
		p.Spec.Containers[0].ImagePullPolicy = corev1.PullAlways
		for _, s := range secrets {
			p.Spec.ImagePullSecrets = append(p.Spec.ImagePullSecrets, corev1.LocalObjectReference{Name: s})
		}
		if _, err := c.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		return p
	}

	pod("anonymous")
	waitPod(t, c, "anonymous", 60*time.Second, "failing to pull", func(p *corev1.Pod) bool {
		return waitingAs(p, "ErrImagePull", "") || waitingAs(p, "ImagePullBackOff", "")
	})
	pod("with-secret", "regcred")
	pod("one-missing", "nosuch", "regcred")
	for _, name := range []string{"with-secret", "one-missing"} {
		waitPod(t, c, name, 60*time.Second, "Succeeded", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded })
		if got := podLog(t, c, name); got != "pulled\n" {
			t.Errorf("%s printed %q", name, got)
		}
	}
	waitEvent(t, c, "one-missing", corev1.EventTypeWarning, "FailedToRetrieveImagePullSecret",
		"Unable to retrieve some image pull secrets (nosuch); attempting to pull the image may not succeed.")
}
