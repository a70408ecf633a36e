// Package garbagecollector deletes what ownerReferences say must go: Pods
// whose owning Job no longer exists (background propagation), and the Pods
// of a Job deleted with foreground propagation, before the Job itself. It
// also deletes finished Jobs once their ttlSecondsAfterFinished has passed
// (the TTL-after-finished controller's role). It talks only to the store,
// and runs on package controller's skeleton: the graph (graph.go) follows
// the watches and queues work; a failed piece of work is retried with
// back-off.
//
// NOTE: a small part of Kubernetes' garbage collector: owners are Jobs
// (batch/v1) and dependents Pods; the CronJob controller collects the Jobs
// of its CronJobs itself (daemon/cronjobcontroller/dependents.go). Orphan
// propagation is done by the API server, which strips the ownerReferences
// in the delete transaction.
package garbagecollector

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/sirupsen/logrus"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/daemon/controller"
	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/kube"
)

// errNothing rolls back a transaction that found nothing to do, so that a
// check costs no commit.
var errNothing = errors.New("nothing to do")

// Config configures the garbage collector.
type Config struct {
	Store *db.Store
	// Clock tells the time and runs the TTL timers; nil = real.
	Clock clock.WithDelayedExecution
}

// Collector is the garbage collector. Create it with New, start it with Run.
type Collector struct {
	store *db.Store
	clock clock.Clock
	loop  *controller.Loop[item]

	mu         sync.Mutex
	jobs       map[types.UID]bool            // Jobs known to exist
	foreground map[types.UID]bool            // Jobs known to be in foreground deletion
	dependents map[types.UID]map[string]bool // owner Job UID → names of pods referring to it
	owners     map[podName][]types.UID       // pod → the Job UIDs it refers to
}

type podName struct{ namespace, name string }

// item is a unit of work on a pod or a Job.
type item struct {
	kind            itemKind
	namespace, name string
}

type itemKind int

const (
	checkPod   itemKind = iota // a pod whose owners may be gone
	foreground                 // a Job in foreground deletion to advance
	expire                     // a finished Job whose ttlSecondsAfterFinished may have passed
)

// New returns a garbage collector; zero Config fields take their defaults.
func New(cfg Config) *Collector {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	c := &Collector{
		store:      cfg.Store,
		clock:      cfg.Clock,
		jobs:       map[types.UID]bool{},
		foreground: map[types.UID]bool{},
		dependents: map[types.UID]map[string]bool{},
		owners:     map[podName][]types.UID{},
	}
	c.loop = controller.New(controller.Config[item]{
		Name:  "garbage collector",
		Store: cfg.Store,
		// Jobs first: a pod whose owner is not known then is checked.
		Watches: []controller.Watch{
			{Resource: db.Jobs, OnEvent: c.onJobEvent},
			{Resource: db.Pods, OnEvent: c.onPodEvent},
		},
		Sync:  c.sync,
		Clock: cfg.Clock,
	})
	return c
}

// Run lists and watches Jobs and Pods and collects garbage until ctx ends.
// It returns nil when ctx ends, or the error that stopped it.
func (c *Collector) Run(ctx context.Context) error {
	return c.loop.Run(ctx)
}

// sync does one unit of work.
func (c *Collector) sync(ctx context.Context, it item) error {
	switch it.kind {
	case checkPod:
		return c.collectPod(ctx, it.namespace, it.name)
	case foreground:
		return c.advanceForeground(ctx, it.namespace, it.name)
	default:
		return c.expireJob(ctx, it.namespace, it.name)
	}
}

// collectPod deletes the pod if every owner it names is gone.
func (c *Collector) collectPod(ctx context.Context, namespace, name string) error {
	var deleted bool
	err := c.store.Reconcile(func(tx *db.Tx) error {
		deleted = false
		p, err := getPod(tx, namespace, name)
		if err != nil {
			return err
		}
		if p == nil || p.DeletionTimestamp != nil {
			return errNothing
		}
		refs := jobOwners(p)
		if len(refs) == 0 || len(refs) != len(p.OwnerReferences) {
			return errNothing // no owner, or owners of kinds we do not store
		}
		for _, ref := range refs {
			job, err := getJob(tx, namespace, ref.Name)
			if err != nil {
				return err
			}
			if job != nil && job.UID == ref.UID {
				return errNothing
			}
		}
		deleted = true
		return deleteDependent(tx, p)
	})
	if err != nil && !errors.Is(err, errNothing) {
		return fmt.Errorf("collecting pod %s/%s: %w", namespace, name, err)
	}
	if deleted {
		logrus.WithContext(ctx).WithField("pod", namespace+"/"+name).Info("deleted pod whose owner is gone")
	}
	return nil
}

// advanceForeground deletes the dependents of a Job in foreground deletion
// and, once none that blocks its deletion remains, removes the
// foregroundDeletion finalizer, which lets the store delete the Job.
func (c *Collector) advanceForeground(ctx context.Context, namespace, name string) error {
	var finalized bool
	err := c.store.Reconcile(func(tx *db.Tx) error {
		finalized = false
		job, err := getJob(tx, namespace, name)
		if err != nil {
			return err
		}
		if job == nil || !inForegroundDeletion(job) {
			return errNothing
		}
		blocking, changed := 0, false
		visit := func(p *corev1.Pod) error {
			ref := ownerRef(p, job.UID)
			if ref == nil {
				return nil
			}
			if p.DeletionTimestamp == nil {
				if err := deleteDependent(tx, p); err != nil {
					return err
				}
				changed = true
			}
			if ref.BlockOwnerDeletion != nil && *ref.BlockOwnerDeletion {
				if _, err := tx.Get(db.Pods, namespace, p.Name); err == nil {
					blocking++
				}
			}
			return nil
		}
		seen := map[string]bool{}
		for _, podName := range c.dependentsOf(job.UID) {
			p, err := getPod(tx, namespace, podName)
			if err != nil {
				return err
			}
			seen[podName] = true
			if err := visit(p); err != nil {
				return err
			}
		}
		if blocking == 0 {
			// NOTE: the graph follows the pods' watch, which may not have
			// delivered every dependent yet when the Job's deletion comes
			// (a Job released before its pods were gone, seen once in CI):
			// the store decides before the Job goes.
			pods, err := tx.List(db.Pods, namespace, nil)
			if err != nil {
				return err
			}
			for _, obj := range pods {
				if p, ok := obj.(*corev1.Pod); ok && !seen[p.Name] {
					if err := visit(p); err != nil {
						return err
					}
				}
			}
		}
		if blocking > 0 && !changed {
			return errNothing
		}
		if blocking > 0 {
			return nil
		}
		job.Finalizers = withoutFinalizer(job.Finalizers, metav1.FinalizerDeleteDependents)
		finalized = true
		if err := tx.Update(db.Jobs, job); err != nil && !errors.Is(err, db.ErrNotFound) {
			return fmt.Errorf("removing finalizer %s: %w", metav1.FinalizerDeleteDependents, err)
		}
		return nil
	})
	if err != nil && !errors.Is(err, errNothing) {
		return fmt.Errorf("foreground deletion of job %s/%s: %w", namespace, name, err)
	}
	if finalized {
		logrus.WithContext(ctx).WithField("job", namespace+"/"+name).Info("dependents deleted; job released")
	}
	return nil
}

// deleteDependent deletes a pod gracefully, as kube-apiserver does for a
// DELETE without a grace period.
func deleteDependent(tx *db.Tx, p *corev1.Pod) error {
	if _, _, err := tx.DeleteGracefully(db.Pods, p.Namespace, p.Name, kube.DeletionGrace(p, nil)); err != nil && !errors.Is(err, db.ErrNotFound) {
		return fmt.Errorf("deleting pod %s: %w", p.Name, err)
	}
	return nil
}

func inForegroundDeletion(job *batchv1.Job) bool {
	if job.DeletionTimestamp == nil {
		return false
	}
	for _, f := range job.Finalizers {
		if f == metav1.FinalizerDeleteDependents {
			return true
		}
	}
	return false
}

// jobOwners returns the pod's ownerReferences to batch/v1 Jobs.
func jobOwners(p *corev1.Pod) []metav1.OwnerReference {
	var out []metav1.OwnerReference
	for _, ref := range p.OwnerReferences {
		if ref.Kind == "Job" && ref.APIVersion == batchv1.SchemeGroupVersion.String() {
			out = append(out, ref)
		}
	}
	return out
}

// ownerRef returns p's ownerReference to uid, or nil (also for a nil p).
func ownerRef(p *corev1.Pod, uid types.UID) *metav1.OwnerReference {
	if p == nil {
		return nil
	}
	for i := range p.OwnerReferences {
		if p.OwnerReferences[i].UID == uid {
			return &p.OwnerReferences[i]
		}
	}
	return nil
}

func withoutFinalizer(finalizers []string, drop string) []string {
	var out []string
	for _, f := range finalizers {
		if f != drop {
			out = append(out, f)
		}
	}
	return out
}

func getJob(tx *db.Tx, namespace, name string) (*batchv1.Job, error) {
	return db.Find[*batchv1.Job](tx, db.Jobs, namespace, name)
}

func getPod(tx *db.Tx, namespace, name string) (*corev1.Pod, error) {
	return db.Find[*corev1.Pod](tx, db.Pods, namespace, name)
}
