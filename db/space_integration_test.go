//go:build integration

package db

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/skiff-sh/skiff/internal/loopfs"
)

// TestFullDisk runs the store on a real ext4 filesystem that fills up:
// writes fail with ErrNoSpace and store nothing, reads go on, the store
// reopens on the full disk, and once space is freed Writable turns nil by
// itself and writes commit again with nothing lost.
func TestFullDisk(t *testing.T) {
	disk := loopfs.Mount(t, 16<<20)
	path := filepath.Join(disk.Dir, "skiff.db")
	s, err := Open(path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer func() { _ = s.Close() }()
	for i := range 20 {
		mustCreate(t, s, Pods, bigPod(i))
	}
	disk.Fill(t)

	// The file may still hold free pages: write until the disk says no.
	created := 20
	var werr error
	for i := 20; i < 2000 && werr == nil; i++ {
		if werr = s.Create(Pods, bigPod(i)); werr == nil {
			created++
		}
	}
	if !errors.Is(werr, ErrNoSpace) {
		t.Fatalf("writing to a full disk: %v, want ErrNoSpace", werr)
	}
	if !strings.Contains(werr.Error(), "no space left on device") {
		t.Errorf("error %q does not name the cause", werr)
	}
	if err := s.Writable(); !errors.Is(err, ErrNoSpace) {
		t.Errorf("Writable on a full disk: %v, want ErrNoSpace", err)
	}
	t.Logf("%d pods stored before the disk refused: %v", created, werr)
	rvFull := s.ResourceVersion()
	assertPods(t, s, created)

	// A restart on the full disk: the store opens and reads.
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if s, err = Open(path); err != nil {
		t.Fatalf("Open on a full disk: %v", err)
	}
	if got := s.ResourceVersion(); got != rvFull {
		t.Errorf("resourceVersion %d after reopening, want %d", got, rvFull)
	}
	assertPods(t, s, created)
	if err := s.Create(Pods, bigPod(created)); !errors.Is(err, ErrNoSpace) {
		t.Fatalf("write after reopening on a full disk: %v, want ErrNoSpace", err)
	}

	disk.Free(t)
	s.space.lastProbe = s.space.lastProbe.Add(-probeInterval) // the probe is due
	if err := s.Writable(); err != nil {
		t.Fatalf("Writable once space is freed: %v", err)
	}
	mustCreate(t, s, Pods, bigPod(created))
	assertPods(t, s, created+1)
}

// bigPod is a pod of about 4 KiB, so that the disk fills in few writes.
func bigPod(i int) *corev1.Pod {
	p := newPod("ns", fmt.Sprintf("p-%04d", i), nil)
	p.Annotations = map[string]string{"pad": strings.Repeat("x", 4000)}
	return p
}

func assertPods(t *testing.T, s *Store, want int) {
	t.Helper()
	objs, _, err := s.List(Pods, "ns", nil)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if len(objs) != want {
		t.Errorf("%d pods stored, want %d", len(objs), want)
	}
}
