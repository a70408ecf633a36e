package runtime

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/containerd/containerd"
	"github.com/containerd/containerd/content"
	"github.com/containerd/containerd/images"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// progressInterval is how often a pull reports the bytes of blobs in flight.
const progressInterval = 500 * time.Millisecond

// Progress is the state of one blob (manifest, config or layer) of an image
// being pulled.
type Progress struct {
	Ref       string // the image, normalized
	Digest    string
	MediaType string
	Offset    int64 // bytes fetched so far
	Total     int64 // the blob's size
	Done      bool  // fetched (or found already present)
}

// EnsureImageWithProgress is EnsureImage reporting the progress of a pull,
// blob by blob, to progress (nil = no reports): once when a blob starts,
// every half second while it downloads, and once when it is done. progress
// is never called concurrently and should return quickly.
func (r *Runtime) EnsureImageWithProgress(ctx context.Context, ref string, policy PullPolicy, progress func(Progress)) error {
	return r.ensureImage(ctx, ref, policy, progress)
}

// pull fetches name from its registry and unpacks it, with the pod's pull
// secrets for that registry (see WithPullSecrets), one after the other,
// then the registry config's credentials: the first that works wins.
func (r *Runtime) pull(ctx context.Context, ref, name string, progress func(Progress)) error {
	configs, err := r.pullConfigs(ctx, name)
	if err != nil {
		return fmt.Errorf("%w %q: %w", ErrImagePull, ref, err)
	}
	for _, cfg := range configs {
		if err = r.pullWith(ctx, cfg, name, progress); err == nil {
			return nil
		}
	}
	return fmt.Errorf("%w %q: %w", ErrImagePull, ref, err)
}

// pullWith pulls name with the credentials of cfg.
func (r *Runtime) pullWith(ctx context.Context, cfg dockerConfig, name string, progress func(Progress)) error {
	opts := []containerd.RemoteOpt{
		containerd.WithPullUnpack,
		containerd.WithPullSnapshotter(r.snapshotter),
		containerd.WithResolver(resolver(cfg)),
	}
	if progress != nil {
		tracker := newPullTracker(name, progress)
		stop := tracker.poll(ctx, r.client.ContentStore())
		defer stop()
		opts = append(opts, containerd.WithImageHandlerWrapper(tracker.wrap))
	}
	_, err := r.client.Pull(ctx, name, opts...)
	return err
}

// pullTracker turns the blobs a pull handles, and containerd's ingest
// statuses, into Progress reports.
type pullTracker struct {
	ref    string
	report func(Progress)

	mu     sync.Mutex // serialises reports
	active map[digest.Digest]ocispec.Descriptor
}

func newPullTracker(ref string, report func(Progress)) *pullTracker {
	return &pullTracker{ref: ref, report: report, active: map[digest.Digest]ocispec.Descriptor{}}
}

// wrap reports each blob the pull's handler works on before and after.
func (t *pullTracker) wrap(h images.Handler) images.Handler {
	return images.HandlerFunc(func(ctx context.Context, desc ocispec.Descriptor) ([]ocispec.Descriptor, error) {
		t.started(desc)
		children, err := h.Handle(ctx, desc)
		if err == nil {
			t.done(desc)
		}
		return children, err
	})
}

func (t *pullTracker) started(desc ocispec.Descriptor) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.active[desc.Digest] = desc
	t.report(t.progress(desc, 0, false))
}

func (t *pullTracker) done(desc ocispec.Descriptor) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.active, desc.Digest)
	t.report(t.progress(desc, desc.Size, true))
}

// update reports the ingest statuses of blobs still in flight.
func (t *pullTracker) update(statuses []content.Status) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, st := range statuses {
		if desc, ok := t.active[st.Expected]; ok {
			t.report(t.progress(desc, st.Offset, false))
		}
	}
}

func (t *pullTracker) progress(desc ocispec.Descriptor, offset int64, done bool) Progress {
	return Progress{
		Ref: t.ref, Digest: desc.Digest.String(), MediaType: desc.MediaType,
		Offset: offset, Total: desc.Size, Done: done,
	}
}

// poll reports the store's ingest statuses every progressInterval until
// the returned stop is called.
func (t *pullTracker) poll(ctx context.Context, store content.Store) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(progressInterval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			statuses, err := store.ListStatuses(ctx)
			if err != nil {
				logger("").WithError(err).Debug("reading pull progress")
				continue
			}
			t.update(statuses)
		}
	}()
	return func() {
		cancel()
		wg.Wait()
	}
}
