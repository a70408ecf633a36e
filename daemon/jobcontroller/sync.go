package jobcontroller

import (
	"context"
	"errors"
	"fmt"

	"github.com/sirupsen/logrus"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/kube"
)

// errNoChange rolls back a sync transaction that has nothing to write, so a
// no-op sync costs no commit.
var errNoChange = errors.New("no change")

// syncResult is what a committed sync tells the in-memory index.
type syncResult struct {
	uid       types.UID              // the Job synced ("" if it is gone)
	created   []*corev1.Pod          // pods created
	adopted   []*corev1.Pod          // orphan pods adopted
	checked   map[string]uint64      // adoption candidates looked at
	untracked []string               // pods now counted-and-finished, or gone
	staleUIDs []types.UID            // Jobs under this key that no longer exist
	plan      *syncPlan              // nil if the Job was not reconciled
	job       *batchv1.Job           // the Job as written (with plan)
	before    []batchv1.JobCondition // its conditions before the sync, for events
	refused   []error                // pod creations the create strategy refused
	// completionMode is the Job's, as metrics label it ("" if no Job).
	completionMode string
	// beforeCounts is the Job's status before the sync, for the counters
	// of finished pods and indexes.
	beforeCounts batchv1.JobStatus
}

// syncJob reconciles one Job in one transaction: load it and its tracked
// pods, decide, then create and delete pods, remove the tracking finalizers
// of counted pods and write the status — all committed together, so a crash
// can neither lose nor double-count a pod.
//
// NOTE: the sync runs first in a read transaction (Store.Reconcile), and in
// a write one only if it has something to write: most syncs, such as the
// one that follows the controller's own status write, change nothing and
// need not wait for nor hold the store's single writer.
func (c *Controller) syncJob(ctx context.Context, key jobKey) (retErr error) {
	start := c.clock.Now()
	var res syncResult
	defer func() { c.cfg.Metrics.observeSync(res, start, c.clock.Now(), retErr) }()
	err := c.store.Reconcile(func(tx *db.Tx) error {
		res = syncResult{}
		return c.syncInTx(tx, key, &res)
	})
	if err != nil && !errors.Is(err, errNoChange) {
		return fmt.Errorf("syncing job %s/%s: %w", key.namespace, key.name, err)
	}
	c.afterSync(ctx, key, res, err == nil)
	if len(res.refused) > 0 {
		// Retried with back-off, as Kubernetes' syncJob returns the error.
		return fmt.Errorf("creating pods of job %s/%s: %w", key.namespace, key.name, errors.Join(res.refused...))
	}
	return nil
}

func (c *Controller) syncInTx(tx *db.Tx, key jobKey, res *syncResult) error {
	job, err := getJob(tx, key)
	if err != nil {
		return err
	}
	if job != nil {
		res.uid = job.UID
		res.completionMode = string(batchv1.NonIndexedCompletion)
		if kube.IsIndexedJob(&job.Spec) {
			res.completionMode = string(batchv1.IndexedCompletion)
		}
	}
	res.checked = c.adopt.candidates(key)
	tracked, rec := c.index.tracked(key, res.uid)
	changed := false
	for uid, names := range tracked {
		if uid == res.uid {
			continue
		}
		// The Job these pods belonged to is gone (perhaps replaced by a
		// new Job of the same name): their outcome will never be counted.
		n, err := releasePods(tx, key.namespace, uid, names)
		if err != nil {
			return err
		}
		changed = changed || n > 0
		res.staleUIDs = append(res.staleUIDs, uid)
	}
	if job == nil || !isManagedByUs(job) {
		return noChangeUnless(changed)
	}
	pods, gone, err := loadPods(tx, key.namespace, job.UID, tracked[job.UID])
	if err != nil {
		return err
	}
	res.untracked = gone
	if kube.IsJobFinished(job) {
		// A finished Job is left alone; pods still holding its finalizer
		// (there should be none) are released.
		n, err := releasePods(tx, key.namespace, job.UID, namesOf(pods))
		if err != nil {
			return err
		}
		return noChangeUnless(changed || n > 0)
	}
	pods, adopted, released, err := claimPods(tx, job, pods, res.checked)
	if err != nil {
		return err
	}
	res.adopted = adopted
	res.untracked = append(res.untracked, released...)
	changed = changed || len(adopted) > 0 || len(released) > 0
	plan := decide(syncInput{
		job: job, pods: pods, backoff: rec, now: c.clock.Now(),
		backoffBase: c.cfg.BackoffBase, backoffMax: c.cfg.BackoffMax,
	})
	res.plan = &plan
	if !changed && isNoop(job, plan) {
		return errNoChange
	}
	res.job, res.before, res.beforeCounts = job, job.Status.Conditions, *job.Status.DeepCopy()
	return c.apply(tx, job, plan, res)
}

// apply writes a plan: finalizer removals first (so that a pod deleted with
// grace 0 goes at once), then deletions, creations and the status.
func (c *Controller) apply(tx *db.Tx, job *batchv1.Job, plan syncPlan, res *syncResult) error {
	for _, p := range plan.release {
		if err := removeTrackingFinalizer(tx, p); err != nil {
			return err
		}
		if kube.IsPodTerminal(p) {
			res.untracked = append(res.untracked, p.Name)
		}
	}
	for _, p := range plan.deletes {
		if _, _, err := tx.DeleteGracefully(db.Pods, p.Namespace, p.Name, deletionGrace(p)); err != nil && !errors.Is(err, db.ErrNotFound) {
			return fmt.Errorf("deleting pod %s: %w", p.Name, err)
		}
	}
	if err := c.createPods(tx, job, plan.creates, res); err != nil {
		return err
	}
	// NOTE: as Kubernetes' manageJob, a refused creation is not active.
	plan.status.Active -= int32(len(res.refused))
	if apiequality.Semantic.DeepEqual(job.Status, plan.status) {
		return nil
	}
	job.Status = plan.status
	if err := tx.Update(db.Jobs, job); err != nil {
		return fmt.Errorf("updating job status: %w", err)
	}
	return nil
}

// createPods creates the Job's new pods through the pod create strategy,
// as kube-apiserver makes every writer do. A pod the strategy refuses is
// not created and goes to res.refused, unless its namespace is being
// terminated: every creation there fails, and the Job is about to go.
func (c *Controller) createPods(tx *db.Tx, job *batchv1.Job, creates []podToCreate, res *syncResult) error {
	if len(creates) == 0 {
		return nil
	}
	ns, err := db.Find[*corev1.Namespace](tx, db.Namespaces, "", job.Namespace)
	if err != nil {
		return err
	}
	for _, create := range creates {
		pod := newPod(job, create)
		if err := tx.GenerateName(db.Pods, pod); err != nil {
			return fmt.Errorf("naming pod for job %s: %w", job.Name, err)
		}
		refs, err := findPodRefs(tx, pod)
		if err != nil {
			return err
		}
		if err := c.cfg.Pods.Create(pod, ns, refs); err != nil {
			if !apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
				res.refused = append(res.refused, err)
			}
			continue
		}
		if err := tx.Create(db.Pods, pod); err != nil {
			return fmt.Errorf("creating pod for job %s: %w", job.Name, err)
		}
		res.created = append(res.created, pod)
	}
	return nil
}

// findPodRefs reads what the admission of pod reads: its ServiceAccount
// and the RuntimeClass it names.
func findPodRefs(tx *db.Tx, pod *corev1.Pod) (kube.PodRefs, error) {
	var refs kube.PodRefs
	var err error
	refs.ServiceAccount, err = db.Find[*corev1.ServiceAccount](tx, db.ServiceAccounts, pod.Namespace, kube.PodServiceAccount(pod))
	if name := pod.Spec.RuntimeClassName; err == nil && name != nil {
		refs.RuntimeClass, err = db.Find[*nodev1.RuntimeClass](tx, db.RuntimeClasses, "", *name)
	}
	return refs, err
}

// afterSync brings the index in line with what the sync committed (or
// found, when it had nothing to write) and schedules the next timed sync.
func (c *Controller) afterSync(ctx context.Context, key jobKey, res syncResult, committed bool) {
	c.adopt.checked(key, res.checked)
	for _, uid := range res.staleUIDs {
		c.index.dropJob(uid)
	}
	if res.uid == "" {
		return
	}
	c.index.untrack(res.uid, key.namespace, res.untracked)
	if res.plan == nil {
		return
	}
	if committed {
		c.index.addCreated(res.uid, key, res.created)
		c.index.addCreated(res.uid, key, res.adopted)
		c.index.setBackoff(res.uid, key, res.plan.backoff)
		c.logPlan(ctx, key, res)
		c.recordEvents(res)
		c.cfg.Metrics.observeCommitted(res)
	}
	if res.plan.requeue > 0 {
		c.loop.AddAfter(workKey{namespace: key.namespace, name: key.name}, res.plan.requeue)
	}
}

func (c *Controller) logPlan(ctx context.Context, key jobKey, res syncResult) {
	log := logrus.WithContext(ctx).WithField("job", key.namespace+"/"+key.name)
	for _, p := range res.created {
		log.WithField("pod", p.Name).Info("created pod")
	}
	for _, p := range res.adopted {
		log.WithField("pod", p.Name).Info("adopted pod")
	}
	for _, p := range res.plan.deletes {
		log.WithField("pod", p.Name).Info("deleted pod")
	}
	for _, c := range res.plan.status.Conditions {
		if c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed {
			log.WithField("condition", c.Type).WithField("reason", c.Reason).Info("job finished")
		}
	}
}

// isNoop reports whether a plan changes nothing.
func isNoop(job *batchv1.Job, plan syncPlan) bool {
	return len(plan.release) == 0 && len(plan.deletes) == 0 && len(plan.creates) == 0 &&
		apiequality.Semantic.DeepEqual(job.Status, plan.status)
}

func noChangeUnless(changed bool) error {
	if changed {
		return nil
	}
	return errNoChange
}

// isManagedByUs reports whether spec.managedBy leaves the Job to this
// controller (unset or kubernetes.io/job-controller).
func isManagedByUs(job *batchv1.Job) bool {
	return job.Spec.ManagedBy == nil || *job.Spec.ManagedBy == batchv1.JobControllerName
}

func getJob(tx *db.Tx, key jobKey) (*batchv1.Job, error) {
	return db.Find[*batchv1.Job](tx, db.Jobs, key.namespace, key.name)
}

// loadPods reads the named pods still controlled by the Job uid and still
// tracked; gone lists the names that are not (any more).
func loadPods(tx *db.Tx, namespace string, uid types.UID, names []string) (pods []*corev1.Pod, gone []string, err error) {
	for _, name := range names {
		p, err := getPod(tx, namespace, name)
		if err != nil {
			return nil, nil, err
		}
		if p == nil {
			gone = append(gone, name)
			continue
		}
		if ref := jobControllerOf(p); ref == nil || ref.UID != uid || !isTracked(p) {
			gone = append(gone, name)
			continue
		}
		pods = append(pods, p)
	}
	return pods, gone, nil
}

func getPod(tx *db.Tx, namespace, name string) (*corev1.Pod, error) {
	return db.Find[*corev1.Pod](tx, db.Pods, namespace, name)
}

// releasePods removes the tracking finalizer from the named pods that are
// controlled by uid and returns how many it changed.
func releasePods(tx *db.Tx, namespace string, uid types.UID, names []string) (int, error) {
	n := 0
	for _, name := range names {
		p, err := getPod(tx, namespace, name)
		if err != nil {
			return n, err
		}
		if p == nil || !hasTrackingFinalizer(p) {
			continue
		}
		if ref := jobControllerOf(p); ref == nil || ref.UID != uid {
			continue
		}
		if err := removeTrackingFinalizer(tx, p); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// removeTrackingFinalizer writes p without the Job tracking finalizer. A
// pod being deleted with grace 0 is then removed by the store.
func removeTrackingFinalizer(tx *db.Tx, p *corev1.Pod) error {
	p.Finalizers = withoutTrackingFinalizer(p.Finalizers)
	if err := tx.Update(db.Pods, p); err != nil && !errors.Is(err, db.ErrNotFound) {
		return fmt.Errorf("removing tracking finalizer of pod %s: %w", p.Name, err)
	}
	return nil
}

func namesOf(pods []*corev1.Pod) []string {
	out := make([]string, 0, len(pods))
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}
