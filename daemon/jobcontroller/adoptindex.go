package jobcontroller

import (
	"sync"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// adoptIndex finds orphan pods a Job may adopt without scanning all pods.
// It keeps the orphan pods (no controller reference, not being deleted) and
// the selectors of the Jobs, both by namespace. An orphan is checked against
// the selectors of its namespace's Jobs when it appears or its labels
// change; a Job's selector is checked against its namespace's orphans when
// the Job appears or its selector changes. Matches wait in pending until the
// Job's sync has looked at them in a transaction.
type adoptIndex struct {
	mu        sync.Mutex
	orphans   map[string]map[string]labels.Set    // namespace → pod name → labels
	selectors map[string]map[string]selectorEntry // namespace → Job name → selector
	pending   map[jobKey]map[string]uint64        // Job → orphan pod name to check → when it was added
	seq       uint64
}

type selectorEntry struct {
	text string // the selector's String(), to see changes
	sel  labels.Selector
}

func newAdoptIndex() *adoptIndex {
	return &adoptIndex{
		orphans:   map[string]map[string]labels.Set{},
		selectors: map[string]map[string]selectorEntry{},
		pending:   map[jobKey]map[string]uint64{},
	}
}

// isAdoptable reports whether a pod has no controller and is not being
// deleted.
func isAdoptable(p *corev1.Pod) bool {
	return metav1.GetControllerOfNoCopy(p) == nil && p.DeletionTimestamp == nil
}

// observePod records the pod's state and returns the Jobs whose selector
// it matches as an orphan.
func (ax *adoptIndex) observePod(p *corev1.Pod) []jobKey {
	if !isAdoptable(p) {
		ax.forgetPod(p.Namespace, p.Name)
		return nil
	}
	ax.mu.Lock()
	defer ax.mu.Unlock()
	set := labels.Set(p.Labels)
	if ax.orphans[p.Namespace] == nil {
		ax.orphans[p.Namespace] = map[string]labels.Set{}
	}
	ax.orphans[p.Namespace][p.Name] = set
	var out []jobKey
	for name, s := range ax.selectors[p.Namespace] {
		if s.sel.Matches(set) {
			k := jobKey{p.Namespace, name}
			ax.addPendingLocked(k, p.Name)
			out = append(out, k)
		}
	}
	return out
}

// forgetPod drops a pod that is gone or no longer an orphan.
func (ax *adoptIndex) forgetPod(namespace, name string) {
	ax.mu.Lock()
	defer ax.mu.Unlock()
	if m := ax.orphans[namespace]; m != nil {
		delete(m, name)
		if len(m) == 0 {
			delete(ax.orphans, namespace)
		}
	}
}

// observeJob records the Job's selector; when it is new or changed, the
// namespace's orphans it matches become pending for the Job.
func (ax *adoptIndex) observeJob(job *batchv1.Job) {
	sel, err := metav1.LabelSelectorAsSelector(job.Spec.Selector)
	if err != nil {
		sel = labels.Nothing()
	}
	ax.mu.Lock()
	defer ax.mu.Unlock()
	ns := job.Namespace
	if prev, ok := ax.selectors[ns][job.Name]; ok && prev.text == sel.String() {
		return
	}
	if ax.selectors[ns] == nil {
		ax.selectors[ns] = map[string]selectorEntry{}
	}
	ax.selectors[ns][job.Name] = selectorEntry{text: sel.String(), sel: sel}
	k := jobKey{ns, job.Name}
	for name, set := range ax.orphans[ns] {
		if sel.Matches(set) {
			ax.addPendingLocked(k, name)
		}
	}
}

// forgetJob drops a deleted Job.
func (ax *adoptIndex) forgetJob(k jobKey) {
	ax.mu.Lock()
	defer ax.mu.Unlock()
	if m := ax.selectors[k.namespace]; m != nil {
		delete(m, k.name)
		if len(m) == 0 {
			delete(ax.selectors, k.namespace)
		}
	}
	delete(ax.pending, k)
}

// resetJobs replaces the known Jobs with a fresh list (after a relist).
func (ax *adoptIndex) resetJobs(jobs []*batchv1.Job) {
	ax.mu.Lock()
	ax.selectors = map[string]map[string]selectorEntry{}
	ax.pending = map[jobKey]map[string]uint64{}
	ax.mu.Unlock()
	for _, j := range jobs {
		ax.observeJob(j)
	}
}

// candidates returns the orphan pods pending for the Job, each with the
// mark checked takes back.
func (ax *adoptIndex) candidates(k jobKey) map[string]uint64 {
	ax.mu.Lock()
	defer ax.mu.Unlock()
	out := make(map[string]uint64, len(ax.pending[k]))
	for name, seq := range ax.pending[k] {
		out[name] = seq
	}
	return out
}

// checked drops candidates a sync has looked at, unless they became
// pending again meanwhile.
func (ax *adoptIndex) checked(k jobKey, seen map[string]uint64) {
	ax.mu.Lock()
	defer ax.mu.Unlock()
	m := ax.pending[k]
	for name, seq := range seen {
		if m[name] == seq {
			delete(m, name)
		}
	}
	if len(m) == 0 {
		delete(ax.pending, k)
	}
}

func (ax *adoptIndex) addPendingLocked(k jobKey, name string) {
	if ax.pending[k] == nil {
		ax.pending[k] = map[string]uint64{}
	}
	ax.seq++
	ax.pending[k][name] = ax.seq
}
