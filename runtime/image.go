package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/containerd/containerd"
	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
)

// NormalizeRef names an image the way Docker and the kubelet do:
// busybox:1.35 → docker.io/library/busybox:1.35, busybox → docker.io/library/busybox:latest.
func NormalizeRef(ref string) (string, error) {
	named, err := reference.ParseDockerRef(ref)
	if err != nil {
		return "", fmt.Errorf("parsing image reference %q: %w", ref, err)
	}
	return named.String(), nil
}

// notPresentError is ErrImageNotPresent with the kubelet's message.
type notPresentError struct{ ref string }

// NOTE: the kubelet's ErrImageNeverPull message, so the pod agent can use
// err.Error() as the waiting container's message unchanged.
func (e *notPresentError) Error() string {
	return fmt.Sprintf("Container image %q is not present with pull policy of Never", e.ref)
}

func (e *notPresentError) Unwrap() error { return ErrImageNotPresent }

// EnsureImage makes ref present and unpacked according to policy.
// It returns ErrImageNotPresent (wrapped, with a message) for PullNever when absent,
// and the pull error, wrapping ErrImagePull, otherwise. ctx bounds the pull.
// Pulls use the credentials of WithRegistryConfig.
func (r *Runtime) EnsureImage(ctx context.Context, ref string, policy PullPolicy) error {
	return r.ensureImage(ctx, ref, policy, nil)
}

// ensureImage is EnsureImage reporting pull progress to progress (may be nil).
func (r *Runtime) ensureImage(ctx context.Context, ref string, policy PullPolicy, progress func(Progress)) error {
	ctx = r.withNS(ctx)
	name, err := NormalizeRef(ref)
	if err != nil {
		return err
	}
	switch policy {
	case PullAlways:
		return r.pull(ctx, ref, name, progress)
	case PullIfNotPresent, PullNever:
	default:
		return fmt.Errorf("unknown image pull policy %q", policy)
	}
	img, err := r.client.GetImage(ctx, name)
	switch {
	case errdefs.IsNotFound(err) && policy == PullNever:
		return &notPresentError{ref: ref}
	case errdefs.IsNotFound(err):
		return r.pull(ctx, ref, name, progress)
	case err != nil:
		return fmt.Errorf("looking up image %q: %w", name, err)
	}
	facts, err := r.images.factsOf(ctx, img)
	if err != nil {
		return err
	}
	return r.ensureUnpacked(ctx, img, facts)
}

// ensureUnpacked is unpack, unless img's layers were seen unpacked before
// (the container's creation unpacks them again if they went meanwhile).
func (r *Runtime) ensureUnpacked(ctx context.Context, img containerd.Image, facts imageFacts) error {
	if r.images.seenUnpacked(facts.chainID) {
		return nil
	}
	if err := r.unpack(ctx, img); err != nil {
		return err
	}
	r.images.setUnpacked(facts.chainID, true)
	return nil
}

// unpack unpacks img for the snapshotter unless it already is.
func (r *Runtime) unpack(ctx context.Context, img containerd.Image) error {
	ok, err := img.IsUnpacked(ctx, r.snapshotter)
	if err != nil {
		return fmt.Errorf("checking whether image %q is unpacked: %w", img.Name(), err)
	}
	if ok {
		return nil
	}
	if err := img.Unpack(ctx, r.snapshotter); err != nil {
		return fmt.Errorf("unpacking image %q: %w", img.Name(), err)
	}
	return nil
}

// ImportImage imports an OCI image layout or `docker save` tarball, unpacks
// its images for the snapshotter, and returns their names.
func (r *Runtime) ImportImage(ctx context.Context, rd io.Reader) ([]string, error) {
	ctx = r.withNS(ctx)
	imgs, err := r.client.Import(ctx, rd)
	if err != nil {
		return nil, fmt.Errorf("importing image archive: %w", err)
	}
	if len(imgs) == 0 {
		return nil, errors.New("importing image archive: no named image in it")
	}
	names := make([]string, 0, len(imgs))
	for _, img := range imgs {
		if err := r.unpack(ctx, containerd.NewImage(r.client, img)); err != nil {
			return nil, err
		}
		names = append(names, img.Name)
	}
	return names, nil
}

// image returns the local image named by ref, ErrImageNotPresent if absent.
func (r *Runtime) image(ctx context.Context, ref string) (containerd.Image, error) {
	name, err := NormalizeRef(ref)
	if err != nil {
		return nil, err
	}
	img, err := r.client.GetImage(ctx, name)
	if errdefs.IsNotFound(err) {
		return nil, fmt.Errorf("%w: %s", ErrImageNotPresent, name)
	}
	if err != nil {
		return nil, fmt.Errorf("looking up image %q: %w", name, err)
	}
	return img, nil
}
