// Package cronjobcontroller is skiff's CronJob controller: it starts a
// CronJob's Jobs at their scheduled times, as Kubernetes' cronjob
// controller v2 does — Jobs named "<cronjob>-<minutes since the epoch>",
// the concurrency policies, the starting deadline and missed start times,
// time zones, status.active, lastScheduleTime and lastSuccessfulTime, and
// the history limits. It talks only to the store.
//
// Each sync reads the CronJob and its Jobs and writes the Jobs it creates
// or deletes and the CronJob's status in one store transaction, so a kill
// at any point leaves either all of a sync or none of it; the Job's
// deterministic name is the second guard against starting a time twice.
// Schedules missed while skiffd was down are handled by the same rules on
// start: the most recent one is started if within startingDeadlineSeconds.
//
// NOTE: it also deletes the Jobs of a CronJob that is gone (background
// propagation) and empties a CronJob in foreground deletion before letting
// it go, the garbage collector's role for these kinds (dependents.go).
//
// The loop (controller.go, index.go, sync.go), on package controller's
// skeleton, is kept apart from the policy (reconcile.go, schedule.go),
// which is pure and tested without I/O.
package cronjobcontroller

import (
	"context"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/daemon/controller"
	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/kube"
)

// Recorder records Events on objects; package events' *Recorder (with
// source component "cronjob-controller") implements it.
type Recorder interface {
	Event(obj runtime.Object, eventtype, reason, messageFmt string, args ...any)
}

type nopRecorder struct{}

func (nopRecorder) Event(runtime.Object, string, string, string, ...any) {}

// Config configures the CronJob controller; zero fields take defaults.
type Config struct {
	Store *db.Store
	// Clock is what schedules are read against and syncs are delayed on;
	// nil = real time.
	Clock    clock.WithDelayedExecution
	Recorder Recorder // the CronJobs' Events; nil = none recorded
	Workers  int      // concurrent syncs of different CronJobs, default 2
	// Jobs is the Job create strategy the CronJobs' Jobs go through, the
	// API's own (defaults, validation, namespace admission).
	Jobs kube.JobStrategy
}

// key names a CronJob.
type key struct{ namespace, name string }

// Controller starts CronJobs' Jobs. Create it with New, start it with Run.
type Controller struct {
	cfg   Config
	loop  *controller.Loop[key]
	index *jobIndex
}

// New returns a CronJob controller.
func New(cfg Config) *Controller {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Recorder == nil {
		cfg.Recorder = nopRecorder{}
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 2
	}
	c := &Controller{cfg: cfg, index: newJobIndex()}
	c.loop = controller.New(controller.Config[key]{
		Name:  "cronjob",
		Store: cfg.Store,
		Watches: []controller.Watch{
			{Resource: db.CronJobs, OnEvent: c.onCronJobEvent},
			{Resource: db.Jobs, OnEvent: c.onJobEvent},
		},
		Sync:    c.syncAndRequeue,
		Workers: cfg.Workers,
		Clock:   cfg.Clock,
	})
	return c
}

// Run lists CronJobs and Jobs, then watches them and syncs CronJobs until
// ctx ends. It returns once every goroutine it started has ended: nil when
// ctx ended, or the error that stopped it (the store closed, a list failed).
func (c *Controller) Run(ctx context.Context) error { return c.loop.Run(ctx) }

// syncAndRequeue syncs a CronJob and queues it again for its next start
// time; a failed sync is retried with back-off instead.
func (c *Controller) syncAndRequeue(ctx context.Context, k key) error {
	after, err := c.sync(ctx, k)
	if err != nil {
		return err
	}
	if after != nil {
		c.loop.AddAfter(k, *after)
	}
	return nil
}

// onCronJobEvent queues the CronJob that changed (listed ones come as
// Added: every CronJob is synced at start).
func (c *Controller) onCronJobEvent(ev db.Event) {
	c.loop.Add(key{ev.Object.GetNamespace(), ev.Object.GetName()})
}

// onJobEvent indexes a Job and queues the CronJobs that control or
// controlled it (listed Jobs come as Added: the CronJobs of Jobs whose
// CronJob was deleted while skiffd was down are synced at start).
func (c *Controller) onJobEvent(ev db.Event) {
	job, ok := ev.Object.(*batchv1.Job)
	if !ok {
		return
	}
	for _, k := range c.index.observe(ev.Type, job) {
		c.loop.Add(k)
	}
}

// cronJobController is the Job's controller reference if it is a CronJob.
func cronJobController(job *batchv1.Job) *metav1.OwnerReference {
	ref := metav1.GetControllerOfNoCopy(job)
	if ref == nil || ref.Kind != "CronJob" || ref.APIVersion != batchv1.SchemeGroupVersion.String() {
		return nil
	}
	return ref
}
