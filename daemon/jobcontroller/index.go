package jobcontroller

import (
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiff-sh/skiff/kube"
)

// jobKey names a Job: the work queue's unit.
type jobKey struct {
	namespace, name string
}

// podIndex maps each Job UID to its tracked pods: every pod controlled by
// the Job that is not both finished and counted. Counted finished pods leave
// the index, so a sync reads only the pods that can still change the Job's
// status, and a 5000-pod Job costs the same per event as a small one. The
// failure backoff of each Job is kept here too.
//
// A sync adds the pods it created as soon as its write commits, so the index
// never misses a pod the controller made; a stale entry (a pod deleted
// meanwhile) is dropped when the sync finds it gone.
type podIndex struct {
	mu    sync.Mutex
	jobs  map[types.UID]*jobEntry
	byKey map[jobKey]map[types.UID]bool
	owner map[podName]types.UID // tracked pod → the Job UID it is tracked under
}

type podName struct {
	namespace, name string
}

type jobEntry struct {
	key     jobKey
	pods    map[string]types.UID // tracked pod name → pod UID
	backoff backoffRecord
}

func newPodIndex() *podIndex {
	return &podIndex{
		jobs:  map[types.UID]*jobEntry{},
		byKey: map[jobKey]map[types.UID]bool{},
		owner: map[podName]types.UID{},
	}
}

// jobControllerOf returns the pod's controlling ownerReference if it is a
// batch/v1 Job, else nil.
func jobControllerOf(p *corev1.Pod) *metav1.OwnerReference {
	ref := metav1.GetControllerOfNoCopy(p)
	if ref == nil || ref.Kind != "Job" || ref.APIVersion != batchv1.SchemeGroupVersion.String() {
		return nil
	}
	return ref
}

// isTracked reports whether the pod can still change its Job's status.
func isTracked(p *corev1.Pod) bool {
	return !kube.IsPodTerminal(p) || hasTrackingFinalizer(p)
}

// observe records the current state of a pod and returns the key of the Job
// controlling it, if any.
func (ix *podIndex) observe(p *corev1.Pod) (jobKey, bool) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	n := podName{p.Namespace, p.Name}
	ref := jobControllerOf(p)
	if prev, ok := ix.owner[n]; ok && (ref == nil || ref.UID != prev) {
		ix.untrackLocked(prev, n)
	}
	if ref == nil {
		return jobKey{}, false
	}
	e := ix.entryLocked(ref.UID, jobKey{p.Namespace, ref.Name})
	if isTracked(p) {
		e.pods[p.Name] = p.UID
		ix.owner[n] = ref.UID
	} else {
		ix.untrackLocked(ref.UID, n)
	}
	return e.key, true
}

// forget drops a deleted pod and returns its Job's key, if any.
func (ix *podIndex) forget(p *corev1.Pod) (jobKey, bool) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	n := podName{p.Namespace, p.Name}
	if prev, ok := ix.owner[n]; ok {
		if e := ix.jobs[prev]; e != nil && e.pods[p.Name] == p.UID {
			ix.untrackLocked(prev, n)
		}
	}
	ref := jobControllerOf(p)
	if ref == nil {
		return jobKey{}, false
	}
	return jobKey{p.Namespace, ref.Name}, true
}

// addCreated tracks pods a sync created under the Job uid.
func (ix *podIndex) addCreated(uid types.UID, key jobKey, pods []*corev1.Pod) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	e := ix.entryLocked(uid, key)
	for _, p := range pods {
		e.pods[p.Name] = p.UID
		ix.owner[podName{p.Namespace, p.Name}] = uid
	}
}

// untrack drops pods a sync found counted-and-finished or gone.
func (ix *podIndex) untrack(uid types.UID, namespace string, names []string) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	for _, name := range names {
		ix.untrackLocked(uid, podName{namespace, name})
	}
}

// tracked returns, for each Job UID indexed under key, the names of its
// tracked pods, and the backoff record of want.
func (ix *podIndex) tracked(key jobKey, want types.UID) (map[types.UID][]string, backoffRecord) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	out := map[types.UID][]string{}
	for uid := range ix.byKey[key] {
		names := make([]string, 0, len(ix.jobs[uid].pods))
		for name := range ix.jobs[uid].pods {
			names = append(names, name)
		}
		out[uid] = names
	}
	var rec backoffRecord
	if e := ix.jobs[want]; e != nil {
		rec = e.backoff
	}
	return out, rec
}

// setBackoff stores the Job's backoff record after a committed sync.
func (ix *podIndex) setBackoff(uid types.UID, key jobKey, rec backoffRecord) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.entryLocked(uid, key).backoff = rec
}

// dropJob forgets a Job UID that no longer exists.
func (ix *podIndex) dropJob(uid types.UID) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	e := ix.jobs[uid]
	if e == nil {
		return
	}
	for name := range e.pods {
		delete(ix.owner, podName{e.key.namespace, name})
	}
	delete(ix.jobs, uid)
	delete(ix.byKey[e.key], uid)
	if len(ix.byKey[e.key]) == 0 {
		delete(ix.byKey, e.key)
	}
}

// keys returns every Job key in the index.
func (ix *podIndex) keys() []jobKey {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	out := make([]jobKey, 0, len(ix.byKey))
	for k := range ix.byKey {
		out = append(out, k)
	}
	return out
}

// rebuildBackoff sets the backoff records of Jobs the index does not know
// yet from their counted finished pods (pods not tracked), so that a daemon
// restart keeps the failure delay. Known Jobs keep their own record.
func (ix *podIndex) rebuildBackoff(pods []*corev1.Pod) {
	type finishes struct{ succeeded, failed []time.Time }
	byJob := map[types.UID]*finishes{}
	keys := map[types.UID]jobKey{}
	for _, p := range pods {
		ref := jobControllerOf(p)
		if ref == nil || isTracked(p) {
			continue
		}
		f := byJob[ref.UID]
		if f == nil {
			f = &finishes{}
			byJob[ref.UID] = f
			keys[ref.UID] = jobKey{p.Namespace, ref.Name}
		}
		if p.Status.Phase == corev1.PodSucceeded {
			f.succeeded = append(f.succeeded, finishedTime(p))
		} else {
			f.failed = append(f.failed, finishedTime(p))
		}
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	for uid, f := range byJob {
		if _, known := ix.jobs[uid]; known {
			continue
		}
		ix.entryLocked(uid, keys[uid]).backoff = backoffRecord{}.withFinished(f.succeeded, f.failed)
	}
}

func (ix *podIndex) entryLocked(uid types.UID, key jobKey) *jobEntry {
	e := ix.jobs[uid]
	if e == nil {
		e = &jobEntry{key: key, pods: map[string]types.UID{}}
		ix.jobs[uid] = e
		if ix.byKey[key] == nil {
			ix.byKey[key] = map[types.UID]bool{}
		}
		ix.byKey[key][uid] = true
	}
	return e
}

func (ix *podIndex) untrackLocked(uid types.UID, n podName) {
	if e := ix.jobs[uid]; e != nil {
		delete(e.pods, n.name)
	}
	if ix.owner[n] == uid {
		delete(ix.owner, n)
	}
}
