package cronjobcontroller

import (
	"sync"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// jobIndex knows, from the watch, which Jobs each CronJob (by namespace and
// name) controls, so that a sync reads those Jobs instead of every Job of
// the namespace. It may lag the store: a sync reads each Job it names
// again, in its transaction, and also those of the CronJob's active list.
type jobIndex struct {
	mu    sync.Mutex
	jobs  map[key]map[string]bool // CronJob → names of the Jobs it controls
	owner map[key]key             // Job (namespace, name) → its CronJob
}

func newJobIndex() *jobIndex {
	return &jobIndex{jobs: map[key]map[string]bool{}, owner: map[key]key{}}
}

// observe records a change of a Job and returns the CronJobs it concerns:
// the one controlling it, and the one that did before, if another.
func (x *jobIndex) observe(typ watch.EventType, job *batchv1.Job) []key {
	x.mu.Lock()
	defer x.mu.Unlock()
	jk := key{job.Namespace, job.Name}
	var touched []key
	if prev, ok := x.owner[jk]; ok {
		delete(x.jobs[prev], job.Name)
		if len(x.jobs[prev]) == 0 {
			delete(x.jobs, prev)
		}
		delete(x.owner, jk)
		touched = append(touched, prev)
	}
	ref := cronJobController(job)
	if typ == watch.Deleted || ref == nil {
		return touched
	}
	ck := key{job.Namespace, ref.Name}
	if x.jobs[ck] == nil {
		x.jobs[ck] = map[string]bool{}
	}
	x.jobs[ck][job.Name] = true
	x.owner[jk] = ck
	if len(touched) == 0 || touched[0] != ck {
		touched = append(touched, ck)
	}
	return touched
}

// jobsOf are the names of the Jobs the CronJob k controls, as last seen.
func (x *jobIndex) jobsOf(k key) []string {
	x.mu.Lock()
	defer x.mu.Unlock()
	names := make([]string, 0, len(x.jobs[k]))
	for name := range x.jobs[k] {
		names = append(names, name)
	}
	return names
}
