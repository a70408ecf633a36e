package runtime

import (
	"context"
	"fmt"
	"syscall"

	"github.com/containerd/containerd"
	"github.com/containerd/errdefs"
	"github.com/opencontainers/image-spec/identity"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/sys/unix"
)

// Create creates the container (snapshot, OCI spec, labels); it does not start it.
// The image must be present (EnsureImage; ErrImageNotPresent otherwise);
// the snapshot key is cfg.ID, which must match containerd's identifier
// syntax ([A-Za-z0-9]+ joined by single '.', '_' or '-', at most 76 bytes).
func (r *Runtime) Create(ctx context.Context, cfg ContainerConfig) (retErr error) {
	ctx = r.withNS(ctx)
	img, err := r.image(ctx, cfg.Image)
	if err != nil {
		return err
	}
	if err := r.unpack(ctx, img); err != nil {
		return err
	}
	imgSpec, err := img.Spec(ctx)
	if err != nil {
		return fmt.Errorf("reading config of image %q: %w", img.Name(), err)
	}
	// NOTE: the lease keeps containerd's garbage collector off the new
	// snapshot until the container record references it.
	ctx, done, err := r.client.WithLease(ctx)
	if err != nil {
		return fmt.Errorf("taking a lease for %q: %w", cfg.ID, err)
	}
	defer func() {
		dctx, cancel := deferContext(ctx)
		defer cancel()
		_ = done(dctx)
	}()

	if err := r.prepareSnapshot(ctx, cfg.ID, img); err != nil {
		return err
	}
	defer func() {
		if retErr != nil {
			r.removeSnapshot(ctx, cfg.ID)
		}
	}()

	_, err = r.client.NewContainer(ctx, cfg.ID,
		containerd.WithImageName(img.Name()),
		containerd.WithSnapshotter(r.snapshotter),
		containerd.WithSnapshot(cfg.ID),
		containerd.WithContainerLabels(containerLabels(cfg, imgSpec.Config)),
		containerd.WithNewSpec(specOpts(cfg, imgSpec.Config)...),
	)
	if err != nil {
		return fmt.Errorf("creating container %q: %w", cfg.ID, err)
	}
	r.touchImage(ctx, img.Name())
	return nil
}

// prepareSnapshot creates the container's writable snapshot, keyed id, over
// the image's layers.
func (r *Runtime) prepareSnapshot(ctx context.Context, id string, img containerd.Image) error {
	diffIDs, err := img.RootFS(ctx)
	if err != nil {
		return fmt.Errorf("reading layers of image %q: %w", img.Name(), err)
	}
	parent := identity.ChainID(diffIDs).String()
	if _, err := r.client.SnapshotService(r.snapshotter).Prepare(ctx, id, parent); err != nil {
		return fmt.Errorf("preparing snapshot for %q: %w", id, err)
	}
	return nil
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
