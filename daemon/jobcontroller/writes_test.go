package jobcontroller

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/db"
)

// TestResyncWithNothingToWriteTakesNoWriter creates a suspended Job: the
// controller writes its Suspended condition, then syncs again on its own
// write and finds nothing to change. That second sync must not open a
// write transaction (which would wait for and hold the store's single
// writer): the store sees two writes, the Job's creation and its status.
func TestResyncWithNothingToWriteTakesNoWriter(t *testing.T) {
	storeReg, ctlReg := prometheus.NewRegistry(), prometheus.NewRegistry()
	s, err := db.Open(filepath.Join(t.TempDir(), "skiff.db"), db.WithMetrics(storeReg))
	if err != nil {
		t.Fatalf("opening store: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	startController(t, Config{Store: s, Metrics: NewMetrics(ctlReg)})

	createJob(t, s, newJob("quiet", func(j *batchv1.Job) { j.Spec.Suspend = ptr.To(true) }))
	waitJob(t, s, "quiet", hasCondition(batchv1.JobSuspended))
	waitFor(t, "the sync after the status write", func() error {
		if n := sampleCount(t, ctlReg, "job_controller_job_syncs_total", ""); n < 2 {
			return fmt.Errorf("%d syncs", n)
		}
		return nil
	})
	if n := sampleCount(t, storeReg, "skiff_store_transaction_duration_seconds", "write"); n != 2 {
		t.Errorf("write transactions: %d, want 2 (the create and the status)", n)
	}
}

// sampleCount sums the counters, or the histograms' sample counts, named
// name in reg (with label mode = mode, if mode is not empty).
func sampleCount(t *testing.T, reg *prometheus.Registry, name, mode string) uint64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatalf("gathering metrics: %v", err)
	}
	var n uint64
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if mode != "" && !hasLabel(m.GetLabel(), "mode", mode) {
				continue
			}
			n += m.GetHistogram().GetSampleCount() + uint64(m.GetCounter().GetValue())
		}
	}
	return n
}

func hasLabel[L interface {
	GetName() string
	GetValue() string
}](labels []L, name, value string) bool {
	for _, l := range labels {
		if l.GetName() == name && l.GetValue() == value {
			return true
		}
	}
	return false
}
