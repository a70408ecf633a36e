package runtime

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/containerd/platforms"
	"github.com/opencontainers/go-digest"
)

// ImageSummary describes one local image name.
type ImageSummary struct {
	// Name is the normalized reference: docker.io/library/busybox:1.35.
	Name string
	// Digest is the content the name points at (its manifest or index).
	Digest digest.Digest
	// Size is the bytes of content this node's platform uses: config and
	// layers, as stored (compressed), as the CRI reports an image's size.
	Size int64
	// LastUsed is when a container was last made from it; zero if never.
	LastUsed time.Time
}

// ListImages describes every image of the namespace, by name.
func (r *Runtime) ListImages(ctx context.Context) ([]ImageSummary, error) {
	ctx = r.withNS(ctx)
	all, err := r.client.ImageService().List(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing images: %w", err)
	}
	sizes := map[digest.Digest]int64{} // names of one content share its size
	out := make([]ImageSummary, 0, len(all))
	for _, img := range all {
		size, ok := sizes[img.Target.Digest]
		if !ok {
			if size, err = img.Size(ctx, r.client.ContentStore(), platforms.Default()); err != nil {
				logger("").WithError(err).WithField("image", img.Name).Warn("sizing image")
			}
			sizes[img.Target.Digest] = size
		}
		s := ImageSummary{Name: img.Name, Digest: img.Target.Digest, Size: size}
		if t, err := time.Parse(time.RFC3339Nano, img.Labels[labelLastUsed]); err == nil {
			s.LastUsed = t
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
