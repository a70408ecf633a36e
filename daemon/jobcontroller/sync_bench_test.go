package jobcontroller

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/kube"
)

const benchParallelism = 20

// BenchmarkSyncPerPodEvent measures the controller's reconcile time per pod
// event as a Job grows: one op drives a Job of n completions (parallelism
// 20) from creation to Complete against a real bbolt store (fsync on),
// with the benchmark playing the pod agent. Every pod goes through two
// events (running and ready, then succeeded); after each, the benchmark
// hands the pod to the controller's index, as the watch does, and times one
// syncJob: the read of the Job and its tracked pods, the decision and the
// commit (pods created, finalizers removed, status written).
//
// Reported: µs/event, the mean sync time per pod event over the whole Job,
// and µs/event-last10%, the mean over the last tenth of the events, when the
// store holds nearly n finished pods of the Job; work-µs/… the same without
// the commit (the fsync dominates the rest and hides any scan). Flat
// figures across n mean a sync does not scan the Job's finished pods.
func BenchmarkSyncPerPodEvent(b *testing.B) {
	// The controller logs every pod it creates: keep the cost, not the output.
	out := logrus.StandardLogger().Out
	logrus.SetOutput(io.Discard)
	b.Cleanup(func() { logrus.SetOutput(out) })
	modes := map[string]batchv1.CompletionMode{"NonIndexed": batchv1.NonIndexedCompletion, "Indexed": batchv1.IndexedCompletion}
	for _, mode := range []string{"NonIndexed", "Indexed"} {
		for _, n := range []int{100, 1000, 5000} {
			b.Run(fmt.Sprintf("%s/pods=%d", mode, n), func(b *testing.B) {
				var all, last []syncTiming
				for i := 0; i < b.N; i++ {
					syncs := driveJob(b, modes[mode], n)
					all = append(all, syncs...)
					last = append(last, syncs[len(syncs)*9/10:]...)
				}
				total := func(t syncTiming) time.Duration { return t.total }
				work := func(t syncTiming) time.Duration { return t.work }
				b.ReportMetric(meanMicros(all, total), "µs/event")
				b.ReportMetric(meanMicros(last, total), "µs/event-last10%")
				b.ReportMetric(meanMicros(all, work), "work-µs/event")
				b.ReportMetric(meanMicros(last, work), "work-µs/event-last10%")
			})
		}
	}
}

// syncTiming is the time of one sync, and of its work inside the
// transaction (everything but the commit).
type syncTiming struct{ total, work time.Duration }

// driveJob runs a Job of n completions to Complete and returns the timing of
// each sync that followed a pod event.
func driveJob(b *testing.B, mode batchv1.CompletionMode, n int) []syncTiming {
	b.Helper()
	store, err := db.Open(filepath.Join(b.TempDir(), "skiff.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	c := New(Config{Store: store, BackoffBase: time.Millisecond})
	job := newJob("bench", func(j *batchv1.Job) {
		j.Spec.Completions = ptr.To(int32(n))
		j.Spec.Parallelism = ptr.To(int32(benchParallelism))
		j.Spec.CompletionMode = ptr.To(mode)
	})
	if err := store.Create(db.Jobs, job); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	key := jobKey{job.Namespace, job.Name}
	sync := func() syncTiming {
		var res syncResult
		var work time.Duration
		start := time.Now()
		// NOTE: syncJob's body, with the transaction's work (reads,
		// decision, writes) timed apart from the commit (one fsync).
		err := store.Write(func(tx *db.Tx) error {
			res = syncResult{}
			t0 := time.Now()
			defer func() { work = time.Since(t0) }()
			return c.syncInTx(tx, key, &res)
		})
		if err != nil && !errors.Is(err, errNoChange) {
			b.Fatal(err)
		}
		c.afterSync(ctx, key, res, err == nil)
		return syncTiming{total: time.Since(start), work: work}
	}

	sync() // creates the first pods
	syncs := make([]syncTiming, 0, 2*n)
	for {
		tracked, _ := c.index.tracked(key, job.UID)
		names := tracked[job.UID]
		if len(names) == 0 {
			break
		}
		slices.Sort(names)
		p := advancePod(b, store, job.Namespace, names[0])
		c.index.observe(p)
		syncs = append(syncs, sync())
	}
	checkComplete(b, store, job, n)
	return syncs
}

// advancePod plays the pod agent for one event: a pending pod starts
// running and becomes ready; a running one succeeds.
func advancePod(b *testing.B, store *db.Store, namespace, name string) *corev1.Pod {
	b.Helper()
	obj, err := store.Modify(db.Pods, namespace, name, func(o db.Object) error {
		p := o.(*corev1.Pod)
		now := metav1.Now()
		p.Spec.NodeName = "node"
		if p.Status.Phase != corev1.PodRunning {
			p.Status.Phase = corev1.PodRunning
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now}}
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", Ready: true,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}}}
			return nil
		}
		p.Status.Phase = corev1.PodSucceeded
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: now}}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c",
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", FinishedAt: now}}}}
		return nil
	})
	if err != nil {
		b.Fatalf("advancing pod %s: %v", name, err)
	}
	return obj.(*corev1.Pod)
}

func checkComplete(b *testing.B, store *db.Store, job *batchv1.Job, n int) {
	b.Helper()
	obj, err := store.Get(db.Jobs, job.Namespace, job.Name)
	if err != nil {
		b.Fatal(err)
	}
	st := obj.(*batchv1.Job).Status
	if !kube.IsJobConditionTrue(st.Conditions, batchv1.JobComplete) || st.Succeeded != int32(n) || st.Failed != 0 {
		b.Fatalf("job not complete with %d succeeded: %+v", n, st)
	}
}

// meanMicros is the mean of field over ts, in microseconds.
func meanMicros(ts []syncTiming, field func(syncTiming) time.Duration) float64 {
	if len(ts) == 0 {
		return 0
	}
	var sum time.Duration
	for _, t := range ts {
		sum += field(t)
	}
	return float64(sum.Nanoseconds()) / 1e3 / float64(len(ts))
}
