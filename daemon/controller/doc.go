// Package controller is the skeleton every controller of skiffd runs on,
// the part of client-go's informers and work queues a single process with
// one store needs. A controller gives a Loop the resources it follows, a
// handler for their changes and a sync of one key; the Loop lists and
// watches, queues keys, syncs them with retries and shuts down.
//
// A controller has the same shape everywhere: New(Config) builds it and its
// Loop, Run(ctx) error runs the Loop; its Watch handlers update what the
// controller keeps in memory and queue keys, its sync reads the store in a
// transaction and writes in the same one.
//
// What a Loop guarantees:
//
//   - Lists first. Run lists the Watches in Config order; no event is
//     handed on and no worker starts before every list is done, so a
//     controller's first syncs see all it follows.
//   - Ordering. A Watch's changes reach OnEvent one at a time, from one
//     goroutine per Watch, in resourceVersion order, each exactly once;
//     handlers of different Watches may run at the same time.
//   - A broken watch (the consumer fell too far behind, ErrTooSlow) resumes
//     from the last change delivered, replayed from the store's persisted
//     change log: nothing missed, nothing twice. When the change log no
//     longer reaches back that far, the Watch is listed again and the list
//     compared with what was delivered: OnEvent gets Deleted for what is
//     gone — a tombstone with the namespace, name, uid, labels and
//     ownerReferences last delivered, its last state is not known —, then
//     Added and Modified for what is new or changed, and nothing for what
//     did not change. Those events are not in resourceVersion order.
//     OnList is not called again.
//   - The queue. A key added again before a worker takes it is synced once;
//     a key is never synced by two workers at once (added while it is
//     synced, it is synced again after); AddAfter keeps the earliest of a
//     key's pending delays. A sync that fails is retried after a delay per
//     key (DefaultRetryBase doubling per failure up to DefaultRetryMax, or
//     Config.RateLimiter), reset by a sync that succeeds. Keys are
//     client-go's workqueue, delays run on Config.Clock.
//   - Shutdown. When ctx ends, the queue stops (pending delays are dropped,
//     keys still queued are not synced), syncs under way finish, and Run
//     returns once every watch, worker and Task has ended. A closed store
//     ends Run with its error; a failed sync after ctx ended, or one that
//     met the closed store, is not retried.
//
// Periodic work that follows no resource and has no keys (image GC, the
// node's status heartbeat, the event writer's batches) stays a plain loop.
package controller
