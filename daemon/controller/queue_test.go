package controller

import (
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"
	clocktesting "k8s.io/utils/clock/testing"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newTestQueue(clk *clocktesting.FakeClock) *queue[string] {
	return newQueue(clk, workqueue.NewTypedItemExponentialFailureRateLimiter[string](DefaultRetryBase, DefaultRetryMax))
}

func TestQueueDedupesAndSerializesKeys(t *testing.T) {
	q := newTestQueue(clocktesting.NewFakeClock(t0))
	q.add("a")
	q.add("b")
	q.add("a")
	if k, _ := q.get(); k != "a" {
		t.Fatalf("get = %q, want a", k)
	}
	q.add("a") // while processing: queued again only after done
	if k, _ := q.get(); k != "b" {
		t.Fatalf("get = %q, want b", k)
	}
	q.done("b")
	q.done("a")
	if k, _ := q.get(); k != "a" {
		t.Fatalf("get = %q, want a again after done", k)
	}
	q.done("a")
	q.shutDown()
	if _, ok := q.get(); ok {
		t.Fatalf("get after shutDown returned a key")
	}
}

// getWithin returns the key get hands out, or fails the test after d of
// real time.
func getWithin(t *testing.T, q *queue[string], d time.Duration) string {
	t.Helper()
	got := make(chan string, 1)
	go func() {
		k, _ := q.get()
		got <- k
	}()
	select {
	case k := <-got:
		return k
	case <-time.After(d):
		t.Fatalf("no key within %v", d)
		return ""
	}
}

// noKeyYet fails the test if a key is queued.
func noKeyYet(t *testing.T, q *queue[string]) {
	t.Helper()
	if n := q.keys.Len(); n != 0 {
		t.Fatalf("%d keys queued before their delay", n)
	}
}

func TestQueueAddAfterKeepsTheEarliest(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	q := newTestQueue(clk)
	defer q.shutDown()
	q.addAfter("a", 20*time.Second)
	q.addAfter("a", 10*time.Second) // earlier: replaces
	q.addAfter("a", 30*time.Second) // later: ignored
	if n := clk.Waiters(); n != 1 {
		t.Fatalf("%d timers armed, want 1", n)
	}
	clk.Step(9 * time.Second)
	noKeyYet(t, q)
	clk.Step(time.Second)
	if k := getWithin(t, q, 10*time.Second); k != "a" {
		t.Fatalf("get = %q, want a", k)
	}
	if clk.HasWaiters() {
		t.Errorf("a timer is left after the key was queued")
	}
}

func TestQueueRetryBacksOffPerKey(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	q := newTestQueue(clk)
	defer q.shutDown()
	for _, want := range []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond} {
		q.retry("a")
		clk.Step(want - time.Millisecond)
		noKeyYet(t, q)
		clk.Step(time.Millisecond)
		k := getWithin(t, q, 10*time.Second)
		q.done(k)
	}
	q.retry("b") // another key starts at the base delay
	clk.Step(DefaultRetryBase)
	q.done(getWithin(t, q, 10*time.Second))
	q.forget("a")
	q.retry("a")
	clk.Step(DefaultRetryBase)
	if k := getWithin(t, q, 10*time.Second); k != "a" {
		t.Fatalf("get = %q after forget, want a at the base delay", k)
	}
}

func TestQueueShutDownDropsDelays(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	q := newTestQueue(clk)
	q.addAfter("a", time.Second)
	q.shutDown()
	if clk.HasWaiters() {
		t.Errorf("a delay is still armed after shutDown")
	}
	q.addAfter("b", time.Second)
	clk.Step(time.Hour)
	if _, ok := q.get(); ok {
		t.Errorf("get returned a key after shutDown")
	}
}
