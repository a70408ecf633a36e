package db

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// TestBackupOpensAsTheStore backs a store up while writes go on and opens
// the copy: it holds exactly the objects of the resourceVersion it says.
func TestBackupOpensAsTheStore(t *testing.T) {
	s, _ := openStore(t)
	for i := range 20 {
		mustCreate(t, s, Pods, newPod("ns", "before-"+strconv.Itoa(i), nil))
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // writes during the backup must not show in it
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			_ = s.Create(Pods, newPod("ns", "during-"+strconv.Itoa(i), nil))
		}
	}()
	var buf bytes.Buffer
	var size int64
	var rv uint64
	err := s.Backup(context.Background(), &buf, func(n int64, r uint64) { size, rv = n, r })
	close(stop)
	<-done
	if err != nil {
		t.Fatal(err)
	}
	if size != int64(buf.Len()) {
		t.Errorf("announced %d bytes, wrote %d", size, buf.Len())
	}
	path := filepath.Join(t.TempDir(), "restored.db")
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	checked, err := CheckBackup(path)
	if err != nil || checked != rv {
		t.Fatalf("CheckBackup: %d, %v; want %d", checked, err, rv)
	}
	restored, err := Open(path)
	if err != nil {
		t.Fatalf("opening the backup: %v", err)
	}
	defer restored.Close()
	objs, listRV, err := restored.List(Pods, "ns", nil)
	if err != nil {
		t.Fatal(err)
	}
	if listRV != rv {
		t.Errorf("backup holds resourceVersion %d, Backup said %d", listRV, rv)
	}
	// Every create took one resourceVersion: the copy has exactly the
	// pods created up to rv.
	if uint64(len(objs)) != rv {
		t.Errorf("backup of resourceVersion %d holds %d pods", rv, len(objs))
	}
	mustGetPod(t, restored, "ns", "before-19")
}

func TestBackupStopsWithTheContext(t *testing.T) {
	s, _ := openStore(t)
	mustCreate(t, s, Pods, newPod("ns", "p", nil))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Backup(ctx, &bytes.Buffer{}, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want context.Canceled", err)
	}
}

func TestBackupOfAClosedStore(t *testing.T) {
	s, _ := openStore(t)
	s.Close()
	if err := s.Backup(context.Background(), &bytes.Buffer{}, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("error %v, want ErrClosed", err)
	}
}

func TestCheckBackupRefuses(t *testing.T) {
	dir := t.TempDir()
	torn := filepath.Join(dir, "torn.db")
	s, _ := openStore(t)
	mustCreate(t, s, Pods, newPod("ns", "p", nil))
	var buf bytes.Buffer
	if err := s.Backup(context.Background(), &buf, nil); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(torn, buf.Bytes()[:buf.Len()/2], 0o600); err != nil {
		t.Fatal(err)
	}
	notStore := filepath.Join(dir, "other.db")
	if err := os.WriteFile(notStore, []byte("not a bbolt file at all, just text"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, p := range map[string]string{"torn copy": torn, "not a bbolt file": notStore, "missing": filepath.Join(dir, "none.db")} {
		t.Run(name, func(t *testing.T) {
			if _, err := CheckBackup(p); err == nil {
				t.Errorf("CheckBackup(%s) passed", p)
			}
		})
	}
}
