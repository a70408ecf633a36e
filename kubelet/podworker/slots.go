package podworker

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
)

// reasonMaxContainers is the waiting reason (and the event's) of a
// container that waits for a slot because the node runs --max-containers
// containers already.
//
// NOTE: the kubelet has no such cap (it relies on PID limits and eviction);
// the reason names the flag, so that whoever sees it finds the knob.
const reasonMaxContainers = "MaxContainersReached"

// slotPool is the node-wide cap on containers that run at once
// (--max-containers): each container instance takes a slot before its task
// starts and gives it back once the instance is removed. An instance past
// the cap waits for a slot, first come first served.
//
// NOTE: every running container costs the node a shim and a log driver
// (about 18 threads, each a PID, and 8 MiB) besides its own processes: one
// pod with thousands of containers would otherwise start them all at once
// and exhaust the machine's PIDs for everyone.
type slotPool struct {
	max int // <= 0: no cap

	mu      sync.Mutex
	held    map[string]bool // instance IDs holding a slot
	waiting []*slotWaiter   // in arrival order
}

type slotWaiter struct {
	id      string
	granted chan struct{}
}

func newSlotPool(max int) *slotPool {
	return &slotPool{max: max, held: map[string]bool{}}
}

// acquire takes a slot for instance id, waiting while the pool is full;
// onWait is called once, before the wait, with a message saying why. It
// is false when ctx ends or halt or stop is closed first (nothing is
// taken; a nil channel never closes). An instance already holding a slot
// keeps it.
func (p *slotPool) acquire(ctx context.Context, halt, stop <-chan struct{}, id string, onWait func(message string)) bool {
	p.mu.Lock()
	if p.held[id] || p.max <= 0 || (len(p.held) < p.max && len(p.waiting) == 0) {
		p.held[id] = true
		p.mu.Unlock()
		return true
	}
	w := &slotWaiter{id: id, granted: make(chan struct{})}
	p.waiting = append(p.waiting, w)
	msg := fmt.Sprintf("the node runs its maximum of %d containers (--max-containers); waiting for one to end", p.max)
	p.mu.Unlock()

	onWait(msg)
	select {
	case <-w.granted:
		return true
	case <-ctx.Done():
	case <-halt:
	case <-stop:
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-w.granted: // granted meanwhile: give it on
		delete(p.held, id)
		p.grant()
	default:
		for i, x := range p.waiting {
			if x == w {
				p.waiting = append(p.waiting[:i], p.waiting[i+1:]...)
				break
			}
		}
	}
	return false
}

// take gives instance id a slot without waiting, even past the cap: an
// instance that already runs (found again after a restart of skiffd).
func (p *slotPool) take(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.held[id] = true
}

// release gives back the slot of instance id, if it holds one, to the
// first waiter.
func (p *slotPool) release(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.held[id] {
		return
	}
	delete(p.held, id)
	p.grant()
}

// grant hands free slots to waiters in order.
func (p *slotPool) grant() {
	for len(p.waiting) > 0 && (p.max <= 0 || len(p.held) < p.max) {
		w := p.waiting[0]
		p.waiting[0] = nil
		p.waiting = p.waiting[1:]
		p.held[w.id] = true
		close(w.granted)
	}
}

// running is how many slots are held.
func (p *slotPool) running() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.held)
}

// takeSlot is the start path's one acquire point: it waits for a slot for
// instance id, showing the container waiting with reasonMaxContainers and
// recording an event while it does. False when the container is stopped
// or the daemon is first.
func (r *containerRun) takeSlot(ctx context.Context, id string) bool {
	return r.w.m.slots.acquire(ctx, r.halt, r.podStop(), id, func(msg string) {
		r.log.WithField("max", r.w.m.slots.max).Info("waiting for a container slot")
		r.event(corev1.EventTypeWarning, reasonMaxContainers, "Container %s waits: %s", r.spec.Name, msg)
		if err := r.setWaiting(reasonMaxContainers, msg); err != nil {
			r.w.logError("recording waiting reason", err)
		}
	})
}
