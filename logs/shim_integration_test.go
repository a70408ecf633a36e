//go:build integration

package logs

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/skiff-sh/skiff/runtime"
	"github.com/skiff-sh/skiff/runtime/runtimetest"
)

// TestShimLogDriver runs a real container whose output goes through
// containerd's shim to this test binary as the log driver, and follows its
// log until the container is removed.
func TestShimLogDriver(t *testing.T) {
	ctx := context.Background()
	env := runtimetest.Start(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	rt, err := runtime.New(ctx, env.Address, env.Namespace, exe)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()

	path := filepath.Join(t.TempDir(), "default_p_uid", "c", "0.log")
	cfg := runtime.ContainerConfig{
		ID:    "logs-shim",
		Image: runtimetest.Image,
		Command: []string{"sh", "-c",
			`echo one; echo two >&2; head -c 40000 /dev/zero | tr '\0' x; echo; printf partial`},
		LogPath: path,
	}
	if err := rt.Create(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	_, exitC, err := rt.Start(ctx, cfg.ID)
	if err != nil {
		rt.Remove(ctx, cfg.ID)
		t.Fatal(err)
	}

	ended := &Follow{Next: func(context.Context, int) (string, bool) { return "", false }}
	out := newSyncBuffer()
	done := writeFollow(ctx, out, path, Options{}, ended)
	want := []string{"one", "two", strings.Repeat("x", 40000), "partial"}
	select {
	case st := <-exitC:
		if st.Code != 0 {
			t.Errorf("exit = %+v", st)
		}
	case <-time.After(time.Minute):
		t.Fatal("container did not exit")
	}
	// NOTE: the shim keeps the write ends of the output pipes until the task
	// is deleted, so the driver (and a follower) ends only then.
	if err := rt.Remove(ctx, cfg.ID); err != nil {
		t.Fatal(err)
	}
	if err := waitDone(t, done); err != nil {
		t.Fatal(err)
	}
	// The two streams are separate pipes: their relative order is the
	// container's scheduling. The unfinished line comes out last.
	got := strings.Split(out.String(), "\n")
	slices.Sort(got[:len(got)-1])
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("output lines (-want,+got):\n%.500s", diff)
	}
	checkMode(t, filepath.Dir(path), 0o750|os.ModeDir)
}

// TestShimLogRotation runs real containers writing more than the rotation
// size through the shim to this test binary as a rotating log driver.
func TestShimLogRotation(t *testing.T) {
	ctx := context.Background()
	env := runtimetest.Start(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	const maxSize = 64 << 10
	const lines = 20000 // about 800 KiB of entries: some 13 files
	var want []string
	for i := 1; i <= lines; i++ {
		want = append(want, strconv.Itoa(i))
	}

	for name, tc := range map[string]struct {
		maxFiles int
		follow   bool
	}{
		"followed, all kept": {maxFiles: 100, follow: true},
		"oldest removed":     {maxFiles: 3},
	} {
		t.Run(name, func(t *testing.T) {
			rt, err := runtime.New(ctx, env.Address, env.Namespace, exe,
				runtime.WithLogDriverArg(Rotation{MaxSize: maxSize, MaxFiles: tc.maxFiles}.Arg))
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			path := filepath.Join(t.TempDir(), "default_p_uid", "c", "0.log")
			cfg := runtime.ContainerConfig{
				ID:      "logs-rotation-" + strconv.Itoa(tc.maxFiles),
				Image:   runtimetest.Image,
				Command: []string{"seq", "1", strconv.Itoa(lines)},
				LogPath: path,
			}
			if err := rt.Create(ctx, cfg); err != nil {
				t.Fatal(err)
			}
			_, exitC, err := rt.Start(ctx, cfg.ID)
			if err != nil {
				rt.Remove(ctx, cfg.ID)
				t.Fatal(err)
			}
			out := newSyncBuffer()
			var done <-chan error
			if tc.follow {
				ended := &Follow{Next: func(context.Context, int) (string, bool) { return "", false }}
				done = writeFollow(ctx, out, path, Options{}, ended)
			}
			select {
			case st := <-exitC:
				if st.Code != 0 {
					t.Errorf("exit = %+v", st)
				}
			case <-time.After(time.Minute):
				t.Fatal("container did not exit")
			}
			if err := rt.Remove(ctx, cfg.ID); err != nil {
				t.Fatal(err)
			}

			files := logFiles(t, path)
			if tc.follow {
				if err := waitDone(t, done); err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(strings.Join(want, "\n")+"\n", out.String()); diff != "" {
					t.Errorf("followed output (-want,+got):\n%.500s", diff)
				}
			} else if len(files) != tc.maxFiles {
				t.Errorf("%d files, want %d", len(files), tc.maxFiles)
			}
			if len(files) < 3 {
				t.Errorf("only %d files: no rotation", len(files))
			}
			var kept []string
			for i, content := range files {
				if len(content) > maxSize {
					t.Errorf("file %d has %d bytes, more than %d", i, len(content), maxSize)
				}
				kept = append(kept, joinEntries(streamTexts(t, content)[stdout])...)
			}
			if diff := cmp.Diff(want[len(want)-len(kept):], kept); diff != "" {
				t.Errorf("lines in the files (-want,+got):\n%.500s", diff)
			}
			var tail bytes.Buffer
			if err := Write(ctx, &tail, path, 0, Options{TailLines: ptr[int64](int64(len(kept)))}, nil); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(strings.Join(kept, "\n")+"\n", tail.String()); diff != "" {
				t.Errorf("tail of every line kept (-want,+got):\n%.500s", diff)
			}
		})
	}
}
