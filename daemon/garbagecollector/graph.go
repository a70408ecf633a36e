package garbagecollector

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/skiff-sh/skiff/db"
)

// The collector's graph: which Jobs exist and which pods refer to each. It
// only decides what to look at; every decision is re-checked against the
// store inside the write transaction.

func (c *Collector) onJobEvent(ev db.Event) {
	j, ok := ev.Object.(*batchv1.Job)
	if !ok {
		return
	}
	if ev.Type != watch.Deleted {
		c.observeJob(j)
		return
	}
	c.mu.Lock()
	delete(c.jobs, j.UID)
	delete(c.foreground, j.UID)
	deps := c.dependentsLocked(j.UID)
	c.mu.Unlock()
	for _, name := range deps {
		c.loop.Add(item{kind: checkPod, namespace: j.Namespace, name: name})
	}
}

func (c *Collector) observeJob(j *batchv1.Job) {
	fg := inForegroundDeletion(j)
	c.mu.Lock()
	c.jobs[j.UID] = true
	if fg {
		c.foreground[j.UID] = true
	}
	c.mu.Unlock()
	if fg {
		c.loop.Add(item{kind: foreground, namespace: j.Namespace, name: j.Name})
	}
	c.scheduleTTL(j)
}

func (c *Collector) onPodEvent(ev db.Event) {
	p, ok := ev.Object.(*corev1.Pod)
	if !ok {
		return
	}
	if ev.Type != watch.Deleted {
		c.observePod(p)
		return
	}
	c.mu.Lock()
	c.unlinkLocked(podName{p.Namespace, p.Name})
	var waiting []string
	for _, ref := range jobOwners(p) {
		if c.foreground[ref.UID] {
			waiting = append(waiting, ref.Name)
		}
	}
	c.mu.Unlock()
	// A Job in foreground deletion may now have no dependent left.
	for _, name := range waiting {
		c.loop.Add(item{kind: foreground, namespace: p.Namespace, name: name})
	}
}

// observePod links the pod to the Jobs it names and queues a check when one
// of them is not known to exist (the check reads the store, so a Job whose
// event is still on its way is not mistaken for a gone one).
func (c *Collector) observePod(p *corev1.Pod) {
	n := podName{p.Namespace, p.Name}
	refs := jobOwners(p)
	c.mu.Lock()
	c.unlinkLocked(n)
	missing := false
	var uids []types.UID
	for _, ref := range refs {
		uids = append(uids, ref.UID)
		if c.dependents[ref.UID] == nil {
			c.dependents[ref.UID] = map[string]bool{}
		}
		c.dependents[ref.UID][p.Name] = true
		missing = missing || !c.jobs[ref.UID]
	}
	if len(uids) > 0 {
		c.owners[n] = uids
	}
	c.mu.Unlock()
	if missing && p.DeletionTimestamp == nil {
		c.loop.Add(item{kind: checkPod, namespace: p.Namespace, name: p.Name})
	}
}

// dependentsOf returns the names of the pods known to refer to uid.
func (c *Collector) dependentsOf(uid types.UID) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dependentsLocked(uid)
}

func (c *Collector) dependentsLocked(uid types.UID) []string {
	out := make([]string, 0, len(c.dependents[uid]))
	for name := range c.dependents[uid] {
		out = append(out, name)
	}
	return out
}

func (c *Collector) unlinkLocked(n podName) {
	for _, uid := range c.owners[n] {
		delete(c.dependents[uid], n.name)
		if len(c.dependents[uid]) == 0 {
			delete(c.dependents, uid)
		}
	}
	delete(c.owners, n)
}
