package admission

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

// Allocatable is what the node offers to pods: capacity minus the
// reserve. A zero Storage means the node's ephemeral storage is unknown
// and not checked; Pods ≤ 0 means kube.DefaultMaxPods.
type Allocatable struct {
	CPU, Memory, Storage resource.Quantity
	Pods                 int
}

// of returns the allocatable amount of resource name and whether the
// scheduler checks it.
func (a Allocatable) of(name corev1.ResourceName) (resource.Quantity, bool) {
	switch name {
	case corev1.ResourceCPU:
		return a.CPU, true
	case corev1.ResourceMemory:
		return a.Memory, true
	case corev1.ResourceEphemeralStorage:
		// NOTE: the scheduler's NodeResourcesFit checks ephemeral-storage
		// requests against the node's allocatable like cpu and memory; a
		// node that reports no storage capacity is left unchecked here.
		return a.Storage, !a.Storage.IsZero()
	}
	return resource.Quantity{}, false
}

// Insufficient lists, as the scheduler's NodeResourcesFit filter does, why
// a pod requesting req does not fit beside pods already bound pods
// requesting used in total; empty when it fits.
func Insufficient(req, used corev1.ResourceList, pods int, alloc Allocatable) []string {
	var reasons []string
	if pods+1 > alloc.Pods {
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

// UnschedulableMessage is the scheduler's FitError message for this one
// node: "0/1 nodes are available: 1 Insufficient cpu, 1 Insufficient memory."
func UnschedulableMessage(reasons []string) string {
	parts := make([]string, len(reasons))
	for i, r := range reasons {
		parts[i] = "1 " + r
	}
	sort.Strings(parts)
	return fmt.Sprintf("0/1 nodes are available: %s.", strings.Join(parts, ", "))
}

// Scheduler admits pods to the node in creation order, as long as their
// requests fit beside the pods already admitted and not yet finished: the
// role of kube-scheduler for skiff's one node. It holds new pods back until
// recovery has registered the pods admitted by an earlier run.
//
// Its cost does not grow with the square of the pods waiting: the
// requests in use are kept as a running sum, a new pod is checked alone
// (nothing else can fit that did not before), and only the release of an
// admitted pod looks at the waiting ones again.
type Scheduler struct {
	mu      sync.Mutex
	alloc   Allocatable
	bound   map[types.UID]corev1.ResourceList
	used    corev1.ResourceList // the sum of bound's requests
	queue   []*Ticket           // waiting, in creation order
	started bool
}

// Ticket is a pod waiting for room (Scheduler.Enqueue).
type Ticket struct {
	uid      types.UID
	created  time.Time
	name     string
	req      corev1.ResourceList
	admitted chan struct{}
	reasons  []string // why it did not fit, at its last try
}

// Admitted is closed once the ticket's pod is bound.
func (t *Ticket) Admitted() <-chan struct{} { return t.admitted }

// before orders tickets by creation, then name.
func (t *Ticket) before(o *Ticket) bool {
	if !t.created.Equal(o.created) {
		return t.created.Before(o.created)
	}
	return t.name < o.name
}

// NewScheduler returns a Scheduler of the node's alloc; it admits
// nothing before Start.
func NewScheduler(alloc Allocatable) *Scheduler {
	if alloc.Pods <= 0 {
		alloc.Pods = kube.DefaultMaxPods
	}
	return &Scheduler{alloc: alloc, bound: map[types.UID]corev1.ResourceList{}, used: corev1.ResourceList{}}
}

// Bind records a pod admitted earlier (recovery): it counts at once.
func (s *Scheduler) Bind(uid types.UID, spec *corev1.PodSpec) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bindLocked(uid, podRequests(spec))
}

func (s *Scheduler) bindLocked(uid types.UID, req corev1.ResourceList) {
	if _, ok := s.bound[uid]; ok {
		return
	}
	s.bound[uid] = req
	addResources(s.used, req)
}

// Start lets queued pods in; called once recovery has bound the old pods.
func (s *Scheduler) Start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.started = true
	s.schedule()
}

// Enqueue asks for room for pod. The ticket's Admitted channel is closed
// when the pod is bound (maybe already on return); otherwise reasons says
// why it waits.
func (s *Scheduler) Enqueue(pod *corev1.Pod) *Ticket {
	t := &Ticket{
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

// WhyWaiting returns why the ticket's pod still waits (nil once admitted).
func (s *Scheduler) WhyWaiting(t *Ticket) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return t.reasons
}

// Release frees the place of a pod that finished or went away, and of a
// ticket that no longer waits; waiting pods that now fit are admitted.
func (s *Scheduler) Release(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if req, ok := s.bound[uid]; ok {
		delete(s.bound, uid)
		subtractResources(s.used, req)
		s.schedule()
		return
	}
	if i := slices.IndexFunc(s.queue, func(t *Ticket) bool { return t.uid == uid }); i >= 0 {
		s.queue = slices.Delete(s.queue, i, i+1)
	}
}

// schedule admits, in queue order, every waiting pod that fits.
func (s *Scheduler) schedule() {
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

func (s *Scheduler) fit(req corev1.ResourceList) []string {
	return Insufficient(req, s.used, len(s.bound), s.alloc)
}
