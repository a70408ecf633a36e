package jobcontroller

import (
	"context"
	"errors"
	"fmt"

	"github.com/sirupsen/logrus"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/skiff-sh/skiff/db"
)

// listWatch lists r, hands the objects to onList and returns a watch that
// continues exactly after the list.
func (c *Controller) listWatch(ctx context.Context, r db.Resource, onList func([]db.Object)) (*db.Watcher, error) {
	objs, rv, err := c.store.List(r, "", nil)
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", r.Name, err)
	}
	if rv == 0 {
		// NOTE: since 0 means "from now" to Watch, an empty store is
		// watched first and listed again, so no change can fall in between
		// (handlers are idempotent, seeing a change twice is harmless).
		w, err := c.store.Watch(ctx, r, 0)
		if err != nil {
			return nil, fmt.Errorf("watching %s: %w", r.Name, err)
		}
		if objs, _, err = c.store.List(r, "", nil); err != nil {
			w.Stop()
			return nil, fmt.Errorf("listing %s: %w", r.Name, err)
		}
		onList(objs)
		return w, nil
	}
	onList(objs)
	w, err := c.store.Watch(ctx, r, rv)
	if err != nil {
		return nil, fmt.Errorf("watching %s: %w", r.Name, err)
	}
	return w, nil
}

// consume handles the events of w, relisting when the watch falls behind or
// expires, until ctx ends or the store closes.
func (c *Controller) consume(ctx context.Context, r db.Resource, w *db.Watcher, onList func([]db.Object), onEvent func(db.Event)) error {
	for {
		for ev := range w.Events() {
			onEvent(ev)
		}
		err := w.Err()
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, db.ErrClosed) {
			return fmt.Errorf("watching %s: %w", r.Name, err)
		}
		logrus.WithContext(ctx).WithError(err).WithField("resource", r.Name).Warn("watch ended; relisting")
		for {
			w, err = c.listWatch(ctx, r, onList)
			if err == nil {
				break
			}
			if errors.Is(err, db.ErrClosed) || ctx.Err() != nil {
				return err
			}
			if !errors.Is(err, db.ErrExpired) {
				return err
			}
		}
	}
}

func (c *Controller) onPodList(objs []db.Object) {
	pods := make([]*corev1.Pod, 0, len(objs))
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok {
			pods = append(pods, p)
		}
	}
	c.index.rebuildBackoff(pods)
	for _, p := range pods {
		c.observePod(p)
	}
}

func (c *Controller) onPodEvent(ev db.Event) {
	p, ok := ev.Object.(*corev1.Pod)
	if !ok {
		return
	}
	if ev.Type == watch.Deleted {
		if k, ok := c.index.forget(p); ok {
			c.enqueueJob(k)
		}
		return
	}
	c.observePod(p)
}

func (c *Controller) observePod(p *corev1.Pod) {
	if k, ok := c.index.observe(p); ok {
		c.enqueueJob(k)
		return
	}
	if hasTrackingFinalizer(p) {
		c.enqueueOrphan(podName{p.Namespace, p.Name})
	}
}

func (c *Controller) onJobList(objs []db.Object) {
	for _, o := range objs {
		if j, ok := o.(*batchv1.Job); ok {
			c.enqueueJob(jobKey{j.Namespace, j.Name})
		}
	}
	// Jobs deleted while the watch was down are known only to the index.
	for _, k := range c.index.keys() {
		c.enqueueJob(k)
	}
}

func (c *Controller) onJobEvent(ev db.Event) {
	if j, ok := ev.Object.(*batchv1.Job); ok {
		c.enqueueJob(jobKey{j.Namespace, j.Name})
	}
}
