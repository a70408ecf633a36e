package podworker

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/skiff-sh/skiff/runtime"
)

// createStartRuntime answers Create and Start; any other call panics (the
// embedded nil Runtime), so the test also shows that the wrapper calls
// through only what it is asked.
type createStartRuntime struct {
	Runtime
	createErr error
}

func (r createStartRuntime) Create(context.Context, runtime.ContainerConfig) error {
	return r.createErr
}

func (r createStartRuntime) Start(context.Context, string) (time.Time, <-chan runtime.ExitStatus, error) {
	time.Sleep(6 * time.Millisecond) // past the first bucket (5 ms)
	return time.Now(), nil, nil
}

// Each call is counted under the kubelet's CRI operation name, its
// duration observed, and a failed one counted as an error too.
func TestInstrumentedRuntime(t *testing.T) {
	m := NewMetrics(prometheus.NewRegistry())
	rt := instrumentedRuntime{Runtime: createStartRuntime{createErr: errors.New("no")}, metrics: m}
	if err := rt.Create(context.Background(), runtime.ContainerConfig{}); err == nil {
		t.Fatal("Create: the runtime's error was lost")
	}
	for range 2 {
		if _, _, err := rt.Start(context.Background(), "c"); err != nil {
			t.Fatal(err)
		}
	}
	for op, want := range map[string]float64{"create_container": 1, "start_container": 2} {
		if got := testutil.ToFloat64(m.operations.WithLabelValues(op)); got != want {
			t.Errorf("runtime_operations_total{%s} = %v, want %v", op, got, want)
		}
	}
	for op, want := range map[string]float64{"create_container": 1, "start_container": 0} {
		if got := testutil.ToFloat64(m.operationErrors.WithLabelValues(op)); got != want {
			t.Errorf("runtime_operations_errors_total{%s} = %v, want %v", op, got, want)
		}
	}
	if n := testutil.CollectAndCount(m.operationDuration, "kubelet_runtime_operations_duration_seconds"); n != 2 {
		t.Errorf("duration histograms: %d series, want 2 (create_container, start_container)", n)
	}
	var start dto.Metric
	if err := m.operationDuration.WithLabelValues("start_container").(prometheus.Metric).Write(&start); err != nil {
		t.Fatal(err)
	}
	if h := start.GetHistogram(); h.GetSampleCount() != 2 || h.GetSampleSum() < 0.012 {
		t.Errorf("start_container: %d observations summing %vs, want 2 of at least 6 ms each", h.GetSampleCount(), h.GetSampleSum())
	}
}
