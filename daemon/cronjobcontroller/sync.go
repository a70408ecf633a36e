package cronjobcontroller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/sirupsen/logrus"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/failpoint"
	"github.com/skiff-sh/skiff/kube"
)

// sync reconciles one CronJob with its Jobs in one store transaction, then
// records the Events of what it committed. It returns when to sync the
// CronJob again (nil: on its next change), or an error to retry it.
func (c *Controller) sync(_ context.Context, k key) (*time.Duration, error) {
	var (
		after   *time.Duration
		syncErr error
		events  []event
		cj      *batchv1.CronJob
		created *batchv1.Job
	)
	err := c.cfg.Store.Reconcile(func(tx *db.Tx) error {
		after, syncErr, events, cj, created = nil, nil, nil, nil, nil
		stored, err := db.Find[*batchv1.CronJob](tx, db.CronJobs, k.namespace, k.name)
		if err != nil {
			return err
		}
		owned, strays, err := controlledJobs(tx, k, stored, c.index.jobsOf(k))
		if err != nil {
			return err
		}
		if err := deleteStrays(tx, strays); err != nil {
			return err
		}
		if stored == nil {
			return nil
		}
		if isForegroundDeleted(stored) {
			return c.emptyForeground(tx, stored, owned)
		}
		r := &reconciler{cj: stored.DeepCopy(), owned: owned, now: c.cfg.Clock.Now(), jobs: &txJobs{tx: tx, ns: k.namespace, strategy: c.cfg.Jobs}}
		after, syncErr = r.reconcile()
		var status apierrors.APIStatus
		if syncErr != nil && !errors.As(syncErr, &status) {
			return syncErr // the store failed: nothing of this sync is kept
		}
		events, cj, created = r.events, r.cj, r.created
		if created != nil {
			failpoint.Hit(failpoint.InCronJobSync)
		}
		if !r.statusChanged {
			return nil
		}
		return tx.Update(db.CronJobs, r.cj)
	})
	if err != nil {
		return nil, err
	}
	if created != nil {
		failpoint.Hit(failpoint.AfterCronJobSync)
		logrus.WithFields(logrus.Fields{"cronjob": k.namespace + "/" + k.name, "job": created.Name,
			"scheduled": created.Annotations[batchv1.CronJobScheduledTimestampAnnotation]}).Info("started scheduled job")
	}
	for _, ev := range events {
		c.cfg.Recorder.Event(cj, ev.typ, ev.reason, "%s", ev.message)
	}
	return after, syncErr
}

// controlledJobs are the Jobs in the CronJob's namespace whose controller
// is the CronJob named by k: those of cj (nil if it does not exist), and
// strays, those of a CronJob of that name that no longer exists. It reads
// the Jobs the index names and those of cj's active list, in tx.
func controlledJobs(tx *db.Tx, k key, cj *batchv1.CronJob, indexed []string) (owned, strays []*batchv1.Job, err error) {
	names := indexed
	if cj != nil {
		for _, ref := range cj.Status.Active {
			names = append(names, ref.Name)
		}
	}
	slices.Sort(names)
	for _, name := range slices.Compact(names) {
		job, err := db.Find[*batchv1.Job](tx, db.Jobs, k.namespace, name)
		if err != nil {
			return nil, nil, err
		}
		if job == nil {
			continue
		}
		ref := cronJobController(job)
		switch {
		case ref == nil || ref.Name != k.name:
		case cj != nil && ref.UID == cj.UID:
			owned = append(owned, job)
		default:
			strays = append(strays, job)
		}
	}
	return owned, strays, nil
}

// txJobs does a sync's Job writes in its transaction.
type txJobs struct {
	tx       *db.Tx
	ns       string
	strategy kube.JobStrategy
}

func (j *txJobs) get(name string) (*batchv1.Job, error) {
	return db.Find[*batchv1.Job](j.tx, db.Jobs, j.ns, name)
}

func (j *txJobs) create(job *batchv1.Job) error {
	if existing, err := j.get(job.Name); err != nil {
		return err
	} else if existing != nil {
		return apierrors.NewAlreadyExists(batchv1.Resource("jobs"), job.Name)
	}
	ns, err := db.Find[*corev1.Namespace](j.tx, db.Namespaces, "", job.Namespace)
	if err != nil {
		return err
	}
	job.UID = uuid.NewUUID()
	if err := j.strategy.Create(job, ns); err != nil {
		return err
	}
	if err := j.tx.Create(db.Jobs, job); err != nil {
		return fmt.Errorf("creating job %s: %w", job.Name, err)
	}
	return nil
}

func (j *txJobs) delete(job *batchv1.Job) error { return deleteJob(j.tx, job) }

// deleteJob deletes a Job as a DELETE with background propagation does:
// at once (or once its finalizers are gone); the garbage collector then
// deletes its pods.
func deleteJob(tx *db.Tx, job *batchv1.Job) error {
	_, _, err := tx.DeleteGracefully(db.Jobs, job.Namespace, job.Name, 0)
	if errors.Is(err, db.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("deleting job %s: %w", job.Name, err)
	}
	return nil
}
