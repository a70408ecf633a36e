//go:build integration

package runtime_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/skiff-sh/skiff/runtime"
	"github.com/skiff-sh/skiff/runtime/runtimetest"
)

// removeImage removes ref through a Runtime of its own.
func removeImage(t *testing.T, ref string) {
	t.Helper()
	rt, err := runtime.New(context.Background(), env.Address, env.Namespace, "/bin/false")
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if err := rt.RemoveImage(context.Background(), ref); err != nil {
		t.Errorf("removing image %s: %v", ref, err)
	}
}

// importVariant imports a variant of the test image (same layer, a config
// of its own, so a content digest of its own) as name, and returns name.
func importVariant(t *testing.T, rt *runtime.Runtime, name string) string {
	t.Helper()
	names, err := rt.ImportImage(context.Background(), newVariant(t, name, "").layoutTar(t, name))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(names, []string{name}) {
		t.Fatalf("imported %v", names)
	}
	return name
}

func TestImageGC(t *testing.T) {
	rt := newRuntime(t)
	ctx := context.Background()
	victim := importVariant(t, rt, "docker.io/library/gc-victim:1")
	t.Cleanup(func() { removeImage(t, victim) })
	keep := map[string]bool{"busybox:1.35": true}

	// Below the high threshold nothing goes.
	if removed, err := rt.ImageGC(ctx, 101, 0, keep); err != nil || len(removed) > 0 {
		t.Fatalf("ImageGC under the threshold: %v, %v", removed, err)
	}

	// A container's image stays.
	cfg := newConfig(t, "true")
	cfg.Image = victim
	create(t, rt, cfg)
	removed, err := rt.ImageGC(ctx, 0, 0, keep)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(removed, victim) || slices.Contains(removed, runtimetest.Image) {
		t.Fatalf("removed images in use: %v", removed)
	}

	// Unused, it goes; the pods' image stays.
	if err := rt.Remove(ctx, cfg.ID); err != nil {
		t.Fatal(err)
	}
	removed, err = rt.ImageGC(ctx, 0, 0, keep)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(removed, victim) {
		t.Errorf("removed %v, want %s among them", removed, victim)
	}
	if _, err := rt.ImageInfo(ctx, victim); !errors.Is(err, runtime.ErrImageNotPresent) {
		t.Errorf("ImageInfo after GC: %v, want ErrImageNotPresent", err)
	}
	if _, err := rt.ImageInfo(ctx, "busybox:1.35"); err != nil {
		t.Errorf("the image in use: %v", err)
	}
}
