package jobcontroller

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/skiff-sh/skiff/db"
)

func (c *Controller) onPodList(objs []db.Object) {
	pods := make([]*corev1.Pod, 0, len(objs))
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok {
			pods = append(pods, p)
		}
	}
	c.index.rebuildBackoff(pods)
	for _, p := range pods {
		c.cfg.Metrics.observePod(p, false)
		c.observePod(p)
	}
}

func (c *Controller) onPodEvent(ev db.Event) {
	p, ok := ev.Object.(*corev1.Pod)
	if !ok {
		return
	}
	c.cfg.Metrics.observePod(p, ev.Type == watch.Deleted)
	if ev.Type == watch.Deleted {
		c.adopt.forgetPod(p.Namespace, p.Name)
		if k, ok := c.index.forget(p); ok {
			c.enqueueJob(k)
		}
		return
	}
	c.observePod(p)
}

func (c *Controller) observePod(p *corev1.Pod) {
	for _, k := range c.adopt.observePod(p) {
		c.enqueueJob(k)
	}
	if k, ok := c.index.observe(p); ok {
		c.enqueueJob(k)
		return
	}
	if hasTrackingFinalizer(p) {
		c.enqueueOrphan(podName{p.Namespace, p.Name})
	}
}

func (c *Controller) onJobList(objs []db.Object) {
	jobs := make([]*batchv1.Job, 0, len(objs))
	for _, o := range objs {
		if j, ok := o.(*batchv1.Job); ok {
			jobs = append(jobs, j)
		}
	}
	c.adopt.resetJobs(jobs) // before the syncs, which read its candidates
	for _, j := range jobs {
		c.enqueueJob(jobKey{j.Namespace, j.Name})
	}
	// Jobs deleted while the watch was down are known only to the index.
	for _, k := range c.index.keys() {
		c.enqueueJob(k)
	}
}

func (c *Controller) onJobEvent(ev db.Event) {
	j, ok := ev.Object.(*batchv1.Job)
	if !ok {
		return
	}
	k := jobKey{j.Namespace, j.Name}
	if ev.Type == watch.Deleted {
		c.adopt.forgetJob(k)
	} else {
		c.adopt.observeJob(j)
	}
	c.enqueueJob(k)
}
