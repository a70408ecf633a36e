package daemon

import (
	"context"
	"io"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/api"
	"github.com/skiff-sh/skiff/runtime"
)

// imageService gives the API the runtime's images in the API's terms.
type imageService struct{ rt *runtime.Runtime }

var _ api.Images = imageService{}

func (s imageService) ImportImage(ctx context.Context, rd io.Reader) ([]string, error) {
	return s.rt.ImportImage(ctx, rd)
}

func (s imageService) ListImages(ctx context.Context) ([]api.Image, error) {
	summaries, err := s.rt.ListImages(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]api.Image, 0, len(summaries))
	for _, img := range summaries {
		item := api.Image{Name: img.Name, Digest: img.Digest.String(), Size: img.Size}
		if !img.LastUsed.IsZero() {
			t := metav1.NewTime(img.LastUsed)
			item.LastUsed = &t
		}
		out = append(out, item)
	}
	return out, nil
}
