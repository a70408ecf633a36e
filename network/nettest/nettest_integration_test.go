//go:build integration

package nettest

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestReserveHoldsUntilTheTestEnds(t *testing.T) {
	var a, b Net
	t.Run("reserve", func(t *testing.T) {
		a, b = Reserve(t), Reserve(t)
		if a.Subnet == b.Subnet || a.Bridge == b.Bridge {
			t.Fatalf("two reservations share a network: %+v and %+v", a, b)
		}
		for _, n := range []Net{a, b} {
			if locked := tryLock(t, n); !locked {
				t.Errorf("%s is not locked while reserved", n.Subnet)
			}
		}
	})
	for _, n := range []Net{a, b} {
		if locked := tryLock(t, n); locked {
			t.Errorf("%s is still locked after its test", n.Subnet)
		}
	}
	if a.Gateway() != strings.TrimSuffix(a.Subnet, "0/24")+"1" {
		t.Errorf("gateway of %s is %s", a.Subnet, a.Gateway())
	}
}

// tryLock reports whether n's lock is held (by anyone, this process's
// other descriptors included: flocks are per open file).
func tryLock(t *testing.T, n Net) (held bool) {
	t.Helper()
	f, err := os.Open(filepath.Join(LockDir, strings.ReplaceAll(n.Subnet, "/", "_")))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return true
	}
	if err != nil {
		t.Fatal(err)
	}
	return false
}
