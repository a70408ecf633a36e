package runtime

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"github.com/containerd/containerd"
	"github.com/containerd/containerd/leases"
	"github.com/containerd/containerd/snapshots"
	"github.com/containerd/errdefs"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/sys/unix"

	"github.com/skiff-sh/skiff/failpoint"
)

// Create creates the container (snapshot, OCI spec, labels); it does not start it.
// The image must be present (EnsureImage; ErrImageNotPresent otherwise);
// the snapshot key is cfg.ID, which must match containerd's identifier
// syntax ([A-Za-z0-9]+ joined by single '.', '_' or '-', at most 76 bytes).
//
// A snapshot or lease left by an interrupted Create of the same ID is
// removed and made again; an existing container of that ID is never replaced: the
// error is errdefs' already exists, and the caller removes the container
// if it never started (Inspect) before creating it again.
func (r *Runtime) Create(ctx context.Context, cfg ContainerConfig) (retErr error) {
	defer r.locks.lock(cfg.ID)()
	ctx = r.withNS(ctx)
	img, facts, err := r.resolveImage(ctx, cfg.Image)
	if err != nil {
		return err
	}
	if err := r.ensureUnpacked(ctx, img, facts); err != nil {
		return err
	}
	if err := r.refuseExisting(ctx, cfg.ID); err != nil {
		return err
	}
	ctx, done, err := r.createLease(ctx, cfg.ID)
	if err != nil {
		return err
	}
	defer func() {
		if retErr != nil {
			dctx, cancel := deferContext(ctx)
			defer cancel()
			_ = done(dctx)
			return
		}
		// NOTE: once the container record holds the snapshot the lease
		// protects nothing: it goes off the start's path (one containerd
		// write). A crash before leaves it to the sweep (sweepLeases).
		r.background(func() {
			dctx, cancel := deferContext(ctx)
			defer cancel()
			_ = done(dctx)
		})
	}()

	if err := r.prepareSnapshot(ctx, cfg.ID, img, facts.chainID); err != nil {
		return err
	}
	failpoint.Hit(failpoint.AfterSnapshotPrepare)
	defer func() {
		if retErr != nil {
			r.removeSnapshot(ctx, cfg.ID)
		}
	}()

	runtimeType := cfg.RuntimeType
	if runtimeType == "" {
		runtimeType = DefaultRuntimeType
	}
	labels := containerLabels(cfg, facts.config.Config)
	container, err := r.client.NewContainer(ctx, cfg.ID,
		containerd.WithImageName(img.Name()),
		containerd.WithSnapshotter(r.snapshotter),
		containerd.WithSnapshot(cfg.ID),
		containerd.WithRuntime(runtimeType, nil),
		containerd.WithContainerLabels(labels),
		containerd.WithNewSpec(specOpts(cfg, facts.config.Config,
			r.images.withCachedUser(facts.chainID, cfg.User, facts.config.Config.User))...),
	)
	if err != nil {
		return fmt.Errorf("creating container %q: %w", cfg.ID, err)
	}
	failpoint.Hit(failpoint.AfterContainerCreate)
	r.rememberCreated(cfg.ID, container, labels)
	r.touchImage(ctx, img.Name())
	return nil
}

// createLease is the name of the lease Create holds on id's snapshot.
func createLease(id string) string { return "skiff-create-" + id }

// refuseExisting fails with errdefs' already exists when a container of
// id exists: Create never replaces one (the caller removes an instance that
// never started, after Inspect).
func (r *Runtime) refuseExisting(ctx context.Context, id string) error {
	_, err := r.client.LoadContainer(ctx, id)
	switch {
	case err == nil:
		return fmt.Errorf("creating container %q: %w", id, errdefs.ErrAlreadyExists)
	case !errdefs.IsNotFound(err):
		return fmt.Errorf("loading container %q: %w", id, err)
	}
	return nil
}

// createLease takes the lease that keeps containerd's garbage collector off
// id's new snapshot until the container record references it. It is named
// after the instance: one left by an interrupted Create is deleted and
// taken again.
func (r *Runtime) createLease(ctx context.Context, id string) (context.Context, func(context.Context) error, error) {
	for retried := false; ; retried = true {
		lctx, done, err := r.client.WithLease(ctx, leases.WithID(createLease(id)), leases.WithExpiration(time.Hour))
		if err == nil {
			return lctx, done, nil
		}
		if retried || !errdefs.IsAlreadyExists(err) {
			return ctx, nil, fmt.Errorf("taking a lease for %q: %w", id, err)
		}
		logger(id).Info("deleting a lease left by an interrupted create")
		if err := r.deleteLease(ctx, id); err != nil {
			return ctx, nil, err
		}
	}
}

// deleteLease deletes id's create lease; absent is fine.
func (r *Runtime) deleteLease(ctx context.Context, id string) error {
	err := r.client.LeasesService().Delete(ctx, leases.Lease{ID: createLease(id)})
	if err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("deleting lease of %q: %w", id, err)
	}
	return nil
}

// prepareSnapshot creates the container's writable snapshot, keyed id, over
// the image's layers, labelled managed so that the sweep can tell it from
// image snapshots. One left by an interrupted Create (no container holds
// it: the caller checked, under id's lock) is removed and prepared again.
func (r *Runtime) prepareSnapshot(ctx context.Context, id string, img containerd.Image, chainID string) error {
	sn := r.client.SnapshotService(r.snapshotter)
	removed, unpacked := false, false
	for {
		_, err := sn.Prepare(ctx, id, chainID, snapshots.WithLabels(map[string]string{LabelManaged: "true"}))
		switch {
		case err == nil:
			return nil
		case errdefs.IsAlreadyExists(err) && !removed:
			removed = true
			logger(id).Info("removing a snapshot left by an interrupted create")
			if err := sn.Remove(ctx, id); err != nil && !errdefs.IsNotFound(err) {
				return fmt.Errorf("removing snapshot left for %q: %w", id, err)
			}
		case errdefs.IsNotFound(err) && !unpacked:
			// NOTE: the image's layers were seen unpacked (imageCache) and
			// have been removed since: unpack them again.
			unpacked = true
			r.images.setUnpacked(chainID, false)
			if err := r.unpack(ctx, img); err != nil {
				return err
			}
		default:
			return fmt.Errorf("preparing snapshot for %q: %w", id, err)
		}
	}
}

// removeSnapshot deletes the snapshot keyed id; absent is fine. It uses a
// fresh context, as it runs while undoing a failure.
func (r *Runtime) removeSnapshot(ctx context.Context, id string) {
	dctx, cancel := deferContext(ctx)
	defer cancel()
	err := r.client.SnapshotService(r.snapshotter).Remove(dctx, id)
	if err != nil && !errdefs.IsNotFound(err) {
		logger(id).WithError(err).Error("removing snapshot")
	}
}

// containerLabels are cfg's labels plus the ones runtime itself reads back:
// managed, the log path, stdin and tty, and the stop signal.
func containerLabels(cfg ContainerConfig, img ocispec.ImageConfig) map[string]string {
	labels := make(map[string]string, len(cfg.Labels)+3)
	for k, v := range cfg.Labels {
		labels[k] = v
	}
	labels[LabelManaged] = "true"
	if cfg.LogPath != "" {
		labels[LabelLogPath] = cfg.LogPath
	}
	if cfg.Stdin {
		labels[labelStdin] = "true"
	}
	if cfg.TTY {
		labels[labelTTY] = "true"
	}
	if sig := stopSignal(cfg.StopSignal, img.StopSignal); sig != "" {
		labels[containerd.StopSignalLabel] = sig
	}
	return labels
}

// stopSignal is the signal Stop sends, as containerd's stop-signal label
// holds it: the configured one, else the image's STOPSIGNAL, else "" (SIGTERM).
func stopSignal(configured syscall.Signal, image string) string {
	if configured == 0 {
		return image
	}
	if name := unix.SignalName(configured); name != "" {
		return name
	}
	return fmt.Sprint(int(configured))
}
