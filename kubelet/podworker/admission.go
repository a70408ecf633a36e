package podworker

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiff-sh/skiff/kube"
)

// allocatable is what the node offers to pods: capacity minus the
// reserve. A zero storage means the node's ephemeral storage is unknown
// and not checked.
type allocatable struct {
	cpu, memory, storage resource.Quantity
	pods                 int
}

// of returns the allocatable amount of resource name and whether the
// scheduler checks it.
func (a allocatable) of(name corev1.ResourceName) (resource.Quantity, bool) {
	switch name {
	case corev1.ResourceCPU:
		return a.cpu, true
	case corev1.ResourceMemory:
		return a.memory, true
	case corev1.ResourceEphemeralStorage:
		// NOTE: the scheduler's NodeResourcesFit checks ephemeral-storage
		// requests against the node's allocatable like cpu and memory; a
		// node that reports no storage capacity is left unchecked here.
		return a.storage, !a.storage.IsZero()
	}
	return resource.Quantity{}, false
}

// insufficient lists, as the scheduler's NodeResourcesFit filter does, why
// a pod requesting req does not fit beside pods already bound pods
// requesting used in total; empty when it fits.
func insufficient(req, used corev1.ResourceList, pods int, alloc allocatable) []string {
	var reasons []string
	if pods+1 > alloc.pods {
		reasons = append(reasons, "Too many pods")
	}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage} {
		want := req[name]
		total, checked := alloc.of(name)
		if want.Sign() <= 0 || !checked {
			continue
		}
		free := total.DeepCopy()
		free.Sub(used[name])
		if want.Cmp(free) > 0 {
			reasons = append(reasons, "Insufficient "+string(name))
		}
	}
	return reasons
}

// unschedulableMessage is the scheduler's FitError message for this one
// node: "0/1 nodes are available: 1 Insufficient cpu, 1 Insufficient memory."
func unschedulableMessage(reasons []string) string {
	parts := make([]string, len(reasons))
	for i, r := range reasons {
		parts[i] = "1 " + r
	}
	sort.Strings(parts)
	return fmt.Sprintf("0/1 nodes are available: %s.", strings.Join(parts, ", "))
}

// scheduler admits pods to the node in creation order, as long as their
// requests fit beside the pods already admitted and not yet finished: the
// role of kube-scheduler for skiff's one node. It holds new pods back until
// recovery has registered the pods admitted by an earlier run.
//
// Its cost does not grow with the square of the pods waiting: the
// requests in use are kept as a running sum, a new pod is checked alone
// (nothing else can fit that did not before), and only the release of an
// admitted pod looks at the waiting ones again.
type scheduler struct {
	mu      sync.Mutex
	alloc   allocatable
	bound   map[types.UID]corev1.ResourceList
	used    corev1.ResourceList // the sum of bound's requests
	queue   []*ticket           // waiting, in creation order
	started bool
}

// ticket is a pod waiting for room: admitted is closed once it is bound.
type ticket struct {
	uid      types.UID
	created  time.Time
	name     string
	req      corev1.ResourceList
	admitted chan struct{}
	reasons  []string // why it did not fit, at its last try
}

// before orders tickets by creation, then name.
func (t *ticket) before(o *ticket) bool {
	if !t.created.Equal(o.created) {
		return t.created.Before(o.created)
	}
	return t.name < o.name
}

func newScheduler(alloc allocatable) *scheduler {
	if alloc.pods <= 0 {
		alloc.pods = kube.DefaultMaxPods
	}
	return &scheduler{alloc: alloc, bound: map[types.UID]corev1.ResourceList{}, used: corev1.ResourceList{}}
}

// bind records a pod admitted earlier (recovery): it counts at once.
func (s *scheduler) bind(uid types.UID, spec *corev1.PodSpec) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bindLocked(uid, podRequests(spec))
}

func (s *scheduler) bindLocked(uid types.UID, req corev1.ResourceList) {
	if _, ok := s.bound[uid]; ok {
		return
	}
	s.bound[uid] = req
	addResources(s.used, req)
}

// start lets queued pods in; called once recovery has bound the old pods.
func (s *scheduler) start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.started = true
	s.schedule()
}

// enqueue asks for room for pod. The ticket's admitted channel is closed
// when the pod is bound (maybe already on return); otherwise reasons says
// why it waits.
func (s *scheduler) enqueue(pod *corev1.Pod) *ticket {
	t := &ticket{
		uid: pod.UID, created: pod.CreationTimestamp.Time, name: pod.Namespace + "/" + pod.Name,
		req: podRequests(&pod.Spec), admitted: make(chan struct{}),
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.bound[pod.UID]; ok {
		close(t.admitted)
		return t
	}
	t.reasons = s.fit(t.req)
	if s.started && len(t.reasons) == 0 {
		s.bindLocked(t.uid, t.req)
		close(t.admitted)
		return t
	}
	i := sort.Search(len(s.queue), func(i int) bool { return t.before(s.queue[i]) })
	s.queue = slices.Insert(s.queue, i, t)
	return t
}

// whyWaiting returns why the ticket's pod still waits (nil once admitted).
func (s *scheduler) whyWaiting(t *ticket) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return t.reasons
}

// release frees the place of a pod that finished or went away, and of a
// ticket that no longer waits; waiting pods that now fit are admitted.
func (s *scheduler) release(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if req, ok := s.bound[uid]; ok {
		delete(s.bound, uid)
		subtractResources(s.used, req)
		s.schedule()
		return
	}
	if i := slices.IndexFunc(s.queue, func(t *ticket) bool { return t.uid == uid }); i >= 0 {
		s.queue = slices.Delete(s.queue, i, i+1)
	}
}

// schedule admits, in queue order, every waiting pod that fits.
func (s *scheduler) schedule() {
	if !s.started {
		return
	}
	kept := s.queue[:0]
	for _, t := range s.queue {
		t.reasons = s.fit(t.req)
		if len(t.reasons) > 0 {
			kept = append(kept, t)
			continue
		}
		s.bindLocked(t.uid, t.req)
		close(t.admitted)
	}
	clear(s.queue[len(kept):])
	s.queue = kept
}

func (s *scheduler) fit(req corev1.ResourceList) []string {
	return insufficient(req, s.used, len(s.bound), s.alloc)
}
