//go:build integration

package daemon_test

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/client-go/util/retry"
)

// TestClientGoInformer: shared informers on jobs and pods (list, then
// watch) see every one of many concurrent writes, in order, end with the
// state a fresh list shows, and see every deletion; once with JSON and once
// with client-go's default protobuf.
func TestClientGoInformer(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.start()
	proto, sent := s.protobufClient()
	clients := map[string]kubernetes.Interface{"json": s.client, "protobuf": proto}
	for name, c := range clients {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			createNamespace(t, s.client, name)
			testInformer(t, c, name)
		})
	}
	t.Cleanup(func() {
		if n := sent.count("application/vnd.kubernetes.protobuf"); n == 0 {
			t.Errorf("the protobuf client sent no protobuf body")
		}
	})
}

func testInformer(t *testing.T, c kubernetes.Interface, ns string) {
	const objects, writes = 4, 25
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log, deleted := newSeqLog(), map[string]bool{}
	var mu sync.Mutex
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { log.note(keyOf(obj), obj.(metav1.Object)) },
		UpdateFunc: func(_, obj any) { log.note(keyOf(obj), obj.(metav1.Object)) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				t.Errorf("deletion of %s seen only by a relist", d.Key)
				return
			}
			mu.Lock()
			deleted[keyOf(obj)] = true
			mu.Unlock()
		},
	}
	// Half the objects exist before the informers list, half come by watch.
	create := func(i int) {
		if _, err := c.BatchV1().Jobs(ns).Create(ctx, suspendedJob(fmt.Sprintf("job-%d", i)), metav1.CreateOptions{}); err != nil {
			t.Error(err)
		}
		if _, err := c.CoreV1().Pods(ns).Create(ctx, sleepPod(fmt.Sprintf("pod-%d", i)), metav1.CreateOptions{}); err != nil {
			t.Error(err)
		}
	}
	for i := 0; i < objects/2; i++ {
		create(i)
	}
	factory := informers.NewSharedInformerFactoryWithOptions(c, 0, informers.WithNamespace(ns))
	jobs, pods := factory.Batch().V1().Jobs().Informer(), factory.Core().V1().Pods().Informer()
	for _, inf := range []cache.SharedIndexInformer{jobs, pods} {
		if _, err := inf.AddEventHandler(handler); err != nil {
			t.Fatal(err)
		}
	}
	factory.Start(ctx.Done())
	defer func() {
		cancel() // before Shutdown, which waits for the informers to end
		factory.Shutdown()
	}()
	if !cache.WaitForCacheSync(ctx.Done(), jobs.HasSynced, pods.HasSynced) {
		t.Fatal("informers did not sync")
	}
	for i := objects / 2; i < objects; i++ {
		create(i)
	}

	// Every object is written concurrently with the others: jobs by
	// read-modify-write Updates, pods by merge patches.
	var wg sync.WaitGroup
	for i := 0; i < objects; i++ {
		wg.Add(2)
		go func() { defer wg.Done(); updateJobSeq(ctx, t, c, ns, fmt.Sprintf("job-%d", i), writes) }()
		go func() { defer wg.Done(); patchPodSeq(ctx, t, c, ns, fmt.Sprintf("pod-%d", i), writes) }()
	}
	wg.Wait()
	keys := informerKeys(ns, objects)
	waitFor(t, time.Minute, "the informers to see the last writes", func() (bool, error) {
		for _, k := range keys {
			if log.last(k) != writes {
				return false, nil
			}
		}
		return true, nil
	})
	for _, k := range keys {
		if diff := cmp.Diff(upTo(writes), log.get(k)); diff != "" {
			t.Errorf("%s: write numbers seen (-want,+got):\n%s", k, diff)
		}
	}
	compareWithList(ctx, t, c, ns, jobs, pods)

	if err := c.BatchV1().Jobs(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(0))}, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "the informers to see every deletion", func() (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		return len(deleted) == len(keys), nil
	})
}

// informerKeys are the cache keys of the objects testInformer writes.
func informerKeys(ns string, n int) []string {
	var keys []string
	for i := 0; i < n; i++ {
		keys = append(keys, fmt.Sprintf("jobs/%s/job-%d", ns, i), fmt.Sprintf("pods/%s/pod-%d", ns, i))
	}
	return keys
}

// keyOf is "jobs/<ns>/<name>" or "pods/<ns>/<name>".
func keyOf(obj any) string {
	kind := "pods"
	if _, ok := obj.(*batchv1.Job); ok {
		kind = "jobs"
	}
	m := obj.(metav1.Object)
	return kind + "/" + m.GetNamespace() + "/" + m.GetName()
}

// updateJobSeq writes 1…n to the job's annotation with Get+Update,
// retrying on conflicts (the job controller writes its status meanwhile).
func updateJobSeq(ctx context.Context, t *testing.T, c kubernetes.Interface, ns, name string, n int) {
	for i := 1; i <= n; i++ {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			job, err := c.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			job.Annotations[seqAnnotation] = fmt.Sprint(i)
			_, err = c.BatchV1().Jobs(ns).Update(ctx, job, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Errorf("updating %s: %v", name, err)
			return
		}
	}
}

// patchPodSeq writes 1…n to the pod's annotation with merge patches.
func patchPodSeq(ctx context.Context, t *testing.T, c kubernetes.Interface, ns, name string, n int) {
	for i := 1; i <= n; i++ {
		if _, err := c.CoreV1().Pods(ns).Patch(ctx, name, types.MergePatchType, seqPatch(i), metav1.PatchOptions{}); err != nil {
			t.Errorf("patching %s: %v", name, err)
			return
		}
	}
}

// compareWithList checks that the informers' caches hold what a fresh list
// returns, once the writers (ours and the controllers') are quiet.
func compareWithList(ctx context.Context, t *testing.T, c kubernetes.Interface, ns string, jobs, pods cache.SharedIndexInformer) {
	t.Helper()
	var want, got map[string]string
	waitFor(t, time.Minute, "the caches to match a list", func() (bool, error) {
		jl, err := c.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		pl, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		want = map[string]string{}
		for i := range jl.Items {
			want[keyOf(&jl.Items[i])] = jl.Items[i].ResourceVersion
		}
		for i := range pl.Items {
			want[keyOf(&pl.Items[i])] = pl.Items[i].ResourceVersion
		}
		got = map[string]string{}
		for _, obj := range append(jobs.GetStore().List(), pods.GetStore().List()...) {
			got[keyOf(obj)] = obj.(metav1.Object).GetResourceVersion()
		}
		return cmp.Equal(want, got), nil
	})
}

// TestClientGoRetryWatcher: a RetryWatcher started before a skiffd restart
// delivers every change made before and after it, in order, without a gap
// or a repeat: it resumes from the last resourceVersion it saw, which the
// persisted change log still holds.
func TestClientGoRetryWatcher(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.start()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	jobs := s.client.BatchV1().Jobs("default")
	job, err := jobs.Create(ctx, suspendedJob("rw"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lw := &cache.ListWatch{WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		o.FieldSelector = "metadata.name=rw"
		return jobs.Watch(ctx, o)
	}}
	rw, err := watchtools.NewRetryWatcherWithContext(ctx, job.ResourceVersion, lw)
	if err != nil {
		t.Fatal(err)
	}
	defer rw.Stop()
	log := newSeqLog()
	var rvs []string
	go func() {
		for ev := range rw.ResultChan() {
			if ev.Type == watch.Error {
				t.Errorf("watch error: %v", ev.Object)
				continue
			}
			obj := ev.Object.(*batchv1.Job)
			rvs = append(rvs, obj.ResourceVersion)
			log.note("rw", obj)
		}
	}()
	const before, after = 20, 20
	for i := 1; i <= before; i++ {
		if _, err := jobs.Patch(ctx, "rw", types.MergePatchType, seqPatch(i), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	s.stop() // right after the writes: some may not have reached the watcher
	s.start()
	// NOTE: the RetryWatcher retries at most once a second, so these writes
	// are done before it is back: it must read them from the change log.
	for i := before + 1; i <= before+after; i++ {
		if _, err := jobs.Patch(ctx, "rw", types.MergePatchType, seqPatch(i), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, time.Minute, "the watcher to see the last write", func() (bool, error) {
		return log.last("rw") == before+after, nil
	})
	got := log.get("rw")
	if len(got) > 0 && got[0] == 0 {
		got = got[1:] // the job controller's first status write
	}
	if diff := cmp.Diff(upTo(before + after)[1:], got); diff != "" {
		t.Errorf("write numbers seen (-want,+got):\n%s", diff)
	}
	select {
	case <-rw.Done():
		t.Errorf("the RetryWatcher gave up")
	default:
	}
	seen := map[string]bool{}
	for _, rv := range rvs {
		if seen[rv] {
			t.Errorf("resourceVersion %s delivered twice", rv)
		}
		seen[rv] = true
	}
}

// TestClientGoPagination: pages of a list (limit/continue) taken while
// another goroutine creates, updates and deletes Jobs form one snapshot:
// exactly what an Exact list at the first page's resourceVersion returns.
func TestClientGoPagination(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.start()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	jobs := s.client.BatchV1().Jobs("default")
	const initial = 60
	for i := 0; i < initial; i++ {
		if _, err := jobs.Create(ctx, suspendedJob(fmt.Sprintf("p-%03d", i)), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Between two pages, another goroutine writes one round: a new Job, an
	// update and a deletion, each after the snapshot.
	round, written := make(chan int), make(chan struct{})
	go func() {
		defer close(written)
		for i := range round {
			_, err1 := jobs.Create(ctx, suspendedJob(fmt.Sprintf("q-%03d", i)), metav1.CreateOptions{})
			_, err2 := jobs.Patch(ctx, fmt.Sprintf("p-%03d", i), types.MergePatchType, seqPatch(1), metav1.PatchOptions{})
			err3 := jobs.Delete(ctx, fmt.Sprintf("p-%03d", initial-1-i), metav1.DeleteOptions{})
			for _, err := range []error{err1, err2, err3} {
				if err != nil {
					t.Errorf("writer round %d: %v", i, err)
				}
			}
			written <- struct{}{}
		}
	}()
	var paged []batchv1.Job
	var snapshot string
	opts := metav1.ListOptions{Limit: 7}
	for page := 0; ; page++ {
		l, err := jobs.List(ctx, opts)
		if err != nil {
			t.Fatalf("page %d: %v", page, err)
		}
		if page == 0 {
			snapshot = l.ResourceVersion
		} else if l.ResourceVersion != snapshot {
			t.Errorf("page %d has resourceVersion %s, want the first page's %s", page, l.ResourceVersion, snapshot)
		}
		paged = append(paged, l.Items...)
		if l.Continue == "" {
			break
		}
		opts.Continue = l.Continue
		round <- page
		<-written
	}
	close(round)
	if len(paged) != initial {
		t.Errorf("%d jobs paged, want the %d of the snapshot", len(paged), initial)
	}

	exact, err := s.client.BatchV1().Jobs("default").List(context.Background(), metav1.ListOptions{
		ResourceVersion: snapshot, ResourceVersionMatch: metav1.ResourceVersionMatchExact,
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(summarizeJobs(exact.Items), summarizeJobs(paged)); diff != "" {
		t.Errorf("paged list differs from the snapshot at %s (-want,+got):\n%s", snapshot, diff)
	}
	names := make([]string, len(paged))
	for i, j := range paged {
		names[i] = j.Name
	}
	if !sort.StringsAreSorted(names) {
		t.Errorf("pages are not in name order: %v", names)
	}
}

// summarizeJobs is "name@resourceVersion seq" of each job.
func summarizeJobs(items []batchv1.Job) []string {
	var out []string
	for i := range items {
		out = append(out, fmt.Sprintf("%s@%s %d", items[i].Name, items[i].ResourceVersion, seqOf(&items[i])))
	}
	return out
}
