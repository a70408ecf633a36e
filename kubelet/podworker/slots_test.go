package podworker

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// acquireAsync asks for a slot in the background; the channel yields
// whether it was granted.
func acquireAsync(p *slotPool, ctx context.Context, halt chan struct{}, id string, waited chan<- string) <-chan bool {
	got := make(chan bool, 1)
	go func() {
		got <- p.acquire(ctx, halt, nil, id, func(msg string) { waited <- id })
	}()
	return got
}

func TestSlotPool(t *testing.T) {
	ctx := context.Background()
	p := newSlotPool(2)
	noWait := func(string) { t.Error("waited with a free slot") }
	for _, id := range []string{"a", "b", "a"} { // a again: it keeps its slot
		if !p.acquire(ctx, nil, nil, id, noWait) {
			t.Fatalf("acquire %s with a free slot failed", id)
		}
	}
	waited := make(chan string, 10)
	c := acquireAsync(p, ctx, nil, "c", waited)
	if id := <-waited; id != "c" {
		t.Fatalf("%s waited, want c", id)
	}
	haltD := make(chan struct{})
	d := acquireAsync(p, ctx, haltD, "d", waited)
	<-waited
	e := acquireAsync(p, ctx, nil, "e", waited)
	<-waited

	close(haltD) // d stops waiting: it must not take a slot
	if <-d {
		t.Fatal("a halted waiter got a slot")
	}
	p.release("a")
	if !<-c {
		t.Fatal("c not granted the slot a freed")
	}
	p.release("nobody") // no slot: nothing happens
	select {
	case <-e:
		t.Fatal("e granted a slot nobody freed")
	default:
	}
	p.release("b")
	if !<-e {
		t.Fatal("e not granted the slot b freed")
	}
	p.take("running") // found running after a restart: past the cap
	if got := p.running(); got != 3 {
		t.Errorf("%d slots held, want 3 (c, e, running)", got)
	}
}

// TestSlotPoolOrder: waiters get slots in the order they asked.
func TestSlotPoolOrder(t *testing.T) {
	ctx := context.Background()
	p := newSlotPool(1)
	p.take("first")
	waited := make(chan string, 10)
	var grants []<-chan bool
	for _, id := range []string{"w1", "w2", "w3"} {
		grants = append(grants, acquireAsync(p, ctx, nil, id, waited))
		<-waited // queued before the next asks
	}
	var order []string
	holder := "first"
	for range 3 {
		p.release(holder)
		for i, g := range grants {
			select {
			case <-g:
				holder = []string{"w1", "w2", "w3"}[i]
				order = append(order, holder)
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	if diff := cmp.Diff([]string{"w1", "w2", "w3"}, order); diff != "" {
		t.Errorf("grant order (-want,+got):\n%s", diff)
	}
}

// TestSlotPoolUncapped: 0 means no cap.
func TestSlotPoolUncapped(t *testing.T) {
	p := newSlotPool(0)
	for i := range 1000 {
		if !p.acquire(context.Background(), nil, nil, string(rune('a'+i%26))+string(rune(i)), func(string) { t.Fatal("waited") }) {
			t.Fatal("acquire failed")
		}
	}
}
