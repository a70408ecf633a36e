package cronjobcontroller

import (
	"slices"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/db"
)

// NOTE: Kubernetes' garbage collector deletes the Jobs of a deleted
// CronJob; skiff's collects the pods of Jobs only, so the CronJob
// controller, which follows both kinds, does it for its own Jobs.

// deleteStrays deletes Jobs whose controlling CronJob is gone, as the
// garbage collector does after a delete with background propagation. (A
// delete with orphan propagation has already removed their reference.)
func deleteStrays(tx *db.Tx, strays []*batchv1.Job) error {
	for _, job := range strays {
		if job.DeletionTimestamp != nil {
			continue
		}
		if err := deleteJob(tx, job); err != nil {
			return err
		}
	}
	return nil
}

// isForegroundDeleted reports whether the CronJob waits for its Jobs to go
// before it goes (a delete with foreground propagation).
func isForegroundDeleted(cj *batchv1.CronJob) bool {
	return cj.DeletionTimestamp != nil && slices.Contains(cj.Finalizers, metav1.FinalizerDeleteDependents)
}

// emptyForeground deletes the Jobs of a CronJob in foreground deletion,
// and then drops its foregroundDeletion finalizer, which deletes it.
func (c *Controller) emptyForeground(tx *db.Tx, cj *batchv1.CronJob, owned []*batchv1.Job) error {
	for _, job := range owned {
		if err := deleteJob(tx, job); err != nil {
			return err
		}
	}
	cj = cj.DeepCopy()
	cj.Finalizers = slices.DeleteFunc(cj.Finalizers, func(f string) bool { return f == metav1.FinalizerDeleteDependents })
	return tx.Update(db.CronJobs, cj)
}
