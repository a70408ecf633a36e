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
