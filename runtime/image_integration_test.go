//go:build integration

package runtime_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/containerd/containerd"
	"github.com/google/go-cmp/cmp"
	"github.com/opencontainers/image-spec/identity"
	"github.com/skiff-sh/skiff/runtime"
	"github.com/skiff-sh/skiff/runtime/runtimetest"
)

func TestImportImage(t *testing.T) {
	rt := newRuntime(t)
	path := os.Getenv(runtimetest.ImageEnv)
	if path == "" {
		path = "../build/busybox-1.35.tar"
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	names, err := rt.ImportImage(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{runtimetest.Image}, names); diff != "" {
		t.Errorf("names (-want,+got):\n%s", diff)
	}
	cfg := newConfig(t, "true")
	cfg.Image = names[0]
	if st := waitExit(t, start(t, rt, cfg)); st.Code != 0 {
		t.Errorf("exit code %d", st.Code)
	}
}

func TestEnsureImage(t *testing.T) {
	rt := newRuntime(t)
	tests := map[string]struct {
		ref     string
		policy  runtime.PullPolicy
		wantErr error
	}{
		"present, Never":        {ref: "busybox:1.35", policy: runtime.PullNever},
		"present, IfNotPresent": {ref: "busybox:1.35", policy: runtime.PullIfNotPresent},
		"full name":             {ref: runtimetest.Image, policy: runtime.PullNever},
		"absent, Never":         {ref: "busybox:0.0-absent", policy: runtime.PullNever, wantErr: runtime.ErrImageNotPresent},
		// NOTE: no registry answers here; the kubelet fails an Always pull
		// (ErrImagePull) even when the image is present.
		"present, Always, no registry":      {ref: "busybox:1.35", policy: runtime.PullAlways, wantErr: runtime.ErrImagePull},
		"absent, IfNotPresent, no registry": {ref: "busybox:0.0-absent", policy: runtime.PullIfNotPresent, wantErr: runtime.ErrImagePull},
		"bad policy":                        {ref: "busybox:1.35", policy: "Sometimes", wantErr: errAny},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			err := rt.EnsureImage(ctx, tc.ref, tc.policy)
			switch {
			case tc.wantErr == errAny && err != nil:
			case !errors.Is(err, tc.wantErr):
				t.Errorf("EnsureImage(%s, %s) = %v, want %v", tc.ref, tc.policy, err, tc.wantErr)
			}
		})
	}
}

// errAny stands for any non-nil error in tables.
var errAny = errors.New("any error")

// TestCreateAfterLayersRemoved: once a container was made from an image,
// the next ones trust that its layers are still unpacked (they are read
// once per image); when the layers' snapshot is removed under the image
// meanwhile, the next container unpacks them again instead of failing.
func TestCreateAfterLayersRemoved(t *testing.T) {
	rt := newRuntime(t)
	ctx := context.Background()
	name := "docker.io/library/layers-removed:1"
	if _, err := rt.ImportImage(ctx, newVariant(t, name, "layers-removed").layoutTar(t, name)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeImage(t, name) })
	first := newConfig(t, "true")
	first.Image = name
	create(t, rt, first)
	if err := rt.Remove(ctx, first.ID); err != nil {
		t.Fatal(err)
	}

	client, err := containerd.New(env.Address, containerd.WithDefaultNamespace(env.Namespace))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	img, err := client.GetImage(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	diffIDs, err := img.RootFS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := client.SnapshotService(containerd.DefaultSnapshotter).Remove(ctx, identity.ChainID(diffIDs).String()); err != nil {
		t.Fatalf("removing the image's top layer snapshot: %v", err)
	}
	if unpacked, err := img.IsUnpacked(ctx, containerd.DefaultSnapshotter); err != nil || unpacked {
		t.Fatalf("image unpacked after its layer went: %v, %v", unpacked, err)
	}

	next := newConfig(t, "true")
	next.Image = name
	if st := waitExit(t, start(t, rt, next)); st.Code != 0 {
		t.Errorf("exit code %d", st.Code)
	}
}
