package runtime

import (
	"context"
	"errors"
	"testing"

	"github.com/containerd/containerd/content"
	"github.com/containerd/containerd/images"
	"github.com/google/go-cmp/cmp"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

func TestPullTracker(t *testing.T) {
	layer := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageLayerGzip, Digest: digest.FromString("layer"), Size: 100}
	other := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageLayerGzip, Digest: digest.FromString("other"), Size: 50}
	var got []Progress
	tracker := newPullTracker("docker.io/library/x:1", func(p Progress) { got = append(got, p) })

	failing := errors.New("fetch failed")
	handler := tracker.wrap(images.HandlerFunc(func(_ context.Context, desc ocispec.Descriptor) ([]ocispec.Descriptor, error) {
		if desc.Digest == other.Digest {
			return nil, failing
		}
		// Mid-download: containerd reports the ingest, plus one of no interest.
		tracker.update([]content.Status{
			{Ref: "layer", Expected: layer.Digest, Offset: 40, Total: 100},
			{Ref: "unrelated", Expected: digest.FromString("unrelated"), Offset: 1},
		})
		return nil, nil
	}))
	if _, err := handler.Handle(context.Background(), layer); err != nil {
		t.Fatal(err)
	}
	if _, err := handler.Handle(context.Background(), other); !errors.Is(err, failing) {
		t.Fatalf("error = %v", err)
	}
	tracker.update([]content.Status{{Expected: layer.Digest, Offset: 100}}) // done: no longer reported

	p := func(d ocispec.Descriptor, offset int64, done bool) Progress {
		return Progress{Ref: "docker.io/library/x:1", Digest: d.Digest.String(), MediaType: d.MediaType, Offset: offset, Total: d.Size, Done: done}
	}
	want := []Progress{p(layer, 0, false), p(layer, 40, false), p(layer, 100, true), p(other, 0, false)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("reports (-want,+got):\n%s", diff)
	}
}
