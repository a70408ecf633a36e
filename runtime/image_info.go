package runtime

import (
	"context"
	"fmt"

	"github.com/distribution/reference"
	"github.com/opencontainers/go-digest"
)

// ImageInfo describes a local image (after EnsureImage); ErrImageNotPresent
// when it is absent.
func (r *Runtime) ImageInfo(ctx context.Context, ref string) (ImageInfo, error) {
	ctx = r.withNS(ctx)
	img, facts, err := r.resolveImage(ctx, ref)
	if err != nil {
		return ImageInfo{}, err
	}
	id, err := repoDigest(img.Name(), img.Target().Digest)
	if err != nil {
		return ImageInfo{}, err
	}
	return ImageInfo{Ref: img.Name(), ID: id, User: facts.config.Config.User, Size: facts.size}, nil
}

// repoDigest names the image content dgst in the repository of name:
// docker.io/library/busybox@sha256:….
//
// NOTE: the kubelet reports containerStatuses[].imageID this way (from the
// runtime's repo digests), whatever tag the pod asked for.
func repoDigest(name string, dgst digest.Digest) (string, error) {
	named, err := reference.ParseNormalizedNamed(name)
	if err != nil {
		return "", fmt.Errorf("parsing image name %q: %w", name, err)
	}
	canonical, err := reference.WithDigest(reference.TrimNamed(named), dgst)
	if err != nil {
		return "", fmt.Errorf("naming %s in %q: %w", dgst, name, err)
	}
	return canonical.String(), nil
}
