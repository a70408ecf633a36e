package garbagecollector

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/kube"
)

// expiry returns when a finished Job with ttlSecondsAfterFinished is due
// for deletion: the time of its Complete or Failed condition plus the TTL.
// ok is false for a Job that is not (yet) to be cleaned up. Because it is
// computed from the stored condition, a daemon restart does not reset it.
//
// NOTE: as Kubernetes' TTL-after-finished controller (getFinishAndExpireTime).
func expiry(job *batchv1.Job) (time.Time, bool) {
	if job.Spec.TTLSecondsAfterFinished == nil || job.DeletionTimestamp != nil {
		return time.Time{}, false
	}
	c := kube.JobFinishedCondition(job)
	if c == nil {
		return time.Time{}, false
	}
	ttl := time.Duration(*job.Spec.TTLSecondsAfterFinished) * time.Second
	return c.LastTransitionTime.Add(ttl), true
}

// scheduleTTL queues the Job for deletion when its TTL after finishing
// passes.
func (c *Collector) scheduleTTL(job *batchv1.Job) {
	at, ok := expiry(job)
	if !ok {
		return
	}
	c.loop.AddAfter(item{kind: expire, namespace: job.Namespace, name: job.Name}, at.Sub(c.clock.Now()))
}

// expireJob deletes a finished Job whose TTL has passed, with foreground
// propagation: the Job gets the foregroundDeletion finalizer and a
// deletionTimestamp, its pods go, then the Job.
func (c *Collector) expireJob(ctx context.Context, namespace, name string) error {
	var deleted bool
	err := c.store.Reconcile(func(tx *db.Tx) error {
		deleted = false
		job, err := getJob(tx, namespace, name)
		if err != nil {
			return err
		}
		if job == nil {
			return errNothing
		}
		at, ok := expiry(job)
		if !ok {
			return errNothing
		}
		if wait := at.Sub(c.clock.Now()); wait > 0 {
			// The TTL was raised since this was scheduled.
			c.loop.AddAfter(item{kind: expire, namespace: namespace, name: name}, wait)
			return errNothing
		}
		job.Finalizers = appendFinalizer(job.Finalizers, metav1.FinalizerDeleteDependents)
		if err := tx.Update(db.Jobs, job); err != nil {
			return fmt.Errorf("adding finalizer %s: %w", metav1.FinalizerDeleteDependents, err)
		}
		if _, _, err := tx.DeleteGracefully(db.Jobs, namespace, name, 0); err != nil {
			return fmt.Errorf("deleting job: %w", err)
		}
		deleted = true
		return nil
	})
	if err != nil && !errors.Is(err, errNothing) {
		return fmt.Errorf("expiring job %s/%s: %w", namespace, name, err)
	}
	if deleted {
		logrus.WithContext(ctx).WithField("job", namespace+"/"+name).Info("deleting job: ttlSecondsAfterFinished passed")
	}
	return nil
}

func appendFinalizer(finalizers []string, f string) []string {
	for _, have := range finalizers {
		if have == f {
			return finalizers
		}
	}
	return append(finalizers, f)
}
