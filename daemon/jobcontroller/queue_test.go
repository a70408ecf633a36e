package jobcontroller

import (
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func TestQueueDedupesAndSerializesKeys(t *testing.T) {
	q := newQueue[string](clocktesting.NewFakeClock(t0))
	q.Add("a")
	q.Add("b")
	q.Add("a")
	k, _ := q.Get()
	if k != "a" {
		t.Fatalf("Get = %q, want a", k)
	}
	q.Add("a") // while processing: queued again only after Done
	if k, _ := q.Get(); k != "b" {
		t.Fatalf("Get = %q, want b", k)
	}
	q.Done("b")
	q.Done("a")
	if k, _ := q.Get(); k != "a" {
		t.Fatalf("Get = %q, want a again after Done", k)
	}
	q.Done("a")
	q.ShutDown()
	if _, ok := q.Get(); ok {
		t.Fatalf("Get after ShutDown returned a key")
	}
}

func TestQueueAddAfter(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	q := newQueue[string](clk)
	defer q.ShutDown()
	q.AddAfter("a", 10*time.Second)
	q.AddAfter("a", 20*time.Second) // a later add does not replace the earlier
	got := make(chan string)
	go func() {
		k, _ := q.Get()
		got <- k
	}()
	for !clk.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
	clk.Step(9 * time.Second)
	select {
	case k := <-got:
		t.Fatalf("Get returned %q before the delay", k)
	default:
	}
	clk.Step(time.Second)
	select {
	case k := <-got:
		if k != "a" {
			t.Fatalf("Get = %q, want a", k)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("key not queued after its delay")
	}
}
