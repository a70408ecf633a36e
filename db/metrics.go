package db

import (
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// storeMetrics are the store's Prometheus metrics. The commit and size
// metrics keep the names etcd gives the same figures of its bbolt backend,
// so that dashboards made for etcd read them.
type storeMetrics struct {
	transactions *prometheus.HistogramVec // whole transactions, by mode (read, write)
	commits      prometheus.Histogram     // a write's commit: pages written and fsynced
}

// WithMetrics registers the store's metrics with reg: transaction and
// commit durations, the file's size and the part of it in use.
func WithMetrics(reg prometheus.Registerer) Option {
	return func(o *options) { o.metricsReg = reg }
}

// newStoreMetrics creates the metrics and registers them, with gauges read
// from s at scrape time (the file's size and bbolt's free-page counts: no
// transaction, so a scrape never waits for a write).
func newStoreMetrics(reg prometheus.Registerer, s *Store) *storeMetrics {
	m := &storeMetrics{
		transactions: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "skiff_store_transaction_duration_seconds", Help: "The time store transactions took, by mode (read, write), the write lock's wait included.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 18),
		}, []string{"mode"}),
		commits: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "etcd_disk_backend_commit_duration_seconds", Help: "The latency distributions of commit called by backend.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
		}),
	}
	if reg == nil {
		return m
	}
	size := func() float64 {
		fi, err := os.Stat(s.db.Path())
		if err != nil {
			return 0
		}
		return float64(fi.Size())
	}
	reg.MustRegister(m.transactions, m.commits,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "etcd_mvcc_db_total_size_in_bytes",
			Help: "Total size of the underlying database physically allocated in bytes."}, size),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "etcd_mvcc_db_total_size_in_use_in_bytes",
			Help: "Total size of the underlying database logically in use in bytes."}, func() float64 {
			st := s.db.Stats()
			free := float64(st.FreePageN+st.PendingPageN) * float64(s.db.Info().PageSize)
			return max(size()-free, 0)
		}),
	)
	return m
}

// observe records a transaction of mode that began at start.
func (m *storeMetrics) observe(mode string, start time.Time) {
	m.transactions.WithLabelValues(mode).Observe(time.Since(start).Seconds())
}
