package podworker

import "context"

// NOTE: the kubelet starts a pod's regular containers one after the other
// in spec order (SyncPod's last step): for each, it pulls the image,
// creates and starts the container, then goes on to the next, also when
// the start failed. It does not wait for a container to be ready. Here
// each container's run waits for its predecessor's first start to have
// been tried: started, failed, or waiting to retry (a pull back-off, a
// creation error, the stop of the pod). A container waiting for a slot
// (--max-containers) keeps its turn, so containers also take the node's
// slots in spec order.

// passTurn lets the next regular container of the pod start. Safe to call
// more than once.
func (r *containerRun) passTurn() {
	r.attemptOnce.Do(func() { close(r.attempted) })
}

// waitTurn waits until prev (nil for the first container) passed its turn;
// false when the daemon stops first.
func (r *containerRun) waitTurn(ctx context.Context, prev *containerRun) bool {
	if prev == nil {
		return true
	}
	select {
	case <-prev.attempted:
		return true
	case <-r.halt: // stopped before it started: run ends at once
		return true
	case <-r.w.stop:
		return true
	case <-ctx.Done():
		return false
	}
}
