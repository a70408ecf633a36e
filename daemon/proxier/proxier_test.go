package proxier

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/skiff-sh/skiff/serviceproxy"
)

// syncerFunc is a Syncer.
type syncerFunc func([]serviceproxy.Service) error

func (f syncerFunc) Sync(_ context.Context, s []serviceproxy.Service) error { return f(s) }

// TestSyncErrors: a failed sync of the rules is retried (an error to the
// loop); a failed conntrack cleanup after rules written is not. The
// portals of skiffd's own go with every sync.
func TestSyncErrors(t *testing.T) {
	own := []serviceproxy.Service{{Namespace: "kube-system", Name: "skiff-cluster-dns", ClusterIP: "10.88.0.1"}}
	for name, tc := range map[string]struct {
		err       error
		wantRetry bool
	}{
		"written":                  {nil, false},
		"rules failed":             {errors.New("iptables-restore: exit status 1"), true},
		"conntrack cleanup failed": {fmt.Errorf("%w: deleting stale UDP entries: %w", serviceproxy.ErrConntrack, errors.New("protocol not supported")), false},
	} {
		t.Run(name, func(t *testing.T) {
			var got []serviceproxy.Service
			p := New(Config{MinSyncPeriod: time.Millisecond, Own: own, Syncer: syncerFunc(func(s []serviceproxy.Service) error {
				got = s
				return tc.err
			})})
			err := p.sync(context.Background(), allRules{})
			if (err != nil) != tc.wantRetry {
				t.Errorf("sync = %v; want an error to retry: %v", err, tc.wantRetry)
			}
			if len(got) != 1 || got[0].Name != "skiff-cluster-dns" {
				t.Errorf("synced %+v, want skiffd's own portal", got)
			}
		})
	}
}
