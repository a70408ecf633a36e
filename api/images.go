package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ImagesPath is skiff's own endpoint for the node's images: GET lists them
// (an ImageList), POST side-loads an OCI or docker-archive tarball, for
// nodes without a registry.
//
// NOTE: Kubernetes has no API for this (the kubelet leaves images to the
// runtime), so it lives outside the Kubernetes groups.
const ImagesPath = "/skiff/v1/images"

// DefaultMaxImageSize is the largest image tarball POST ImagesPath takes
// when Config.MaxImageSize is 0: 16Gi.
const DefaultMaxImageSize int64 = 16 << 30

// Images is the node's image store, as the daemon gives it to the API.
type Images interface {
	// ImportImage reads an OCI or docker-archive tarball from rd, stores
	// and unpacks its images and returns their names.
	ImportImage(ctx context.Context, rd io.Reader) ([]string, error)
	// ListImages describes the images the node has, by name.
	ListImages(ctx context.Context) ([]Image, error)
}

// ImageList is the body of GET ImagesPath.
type ImageList struct {
	metav1.TypeMeta `json:",inline"`
	Items           []Image `json:"items"`
}

// Image is one image name the node has.
type Image struct {
	// Name is the normalized reference: docker.io/library/busybox:1.35.
	Name string `json:"name"`
	// Digest is the digest of the content the name points at (its
	// manifest or index), as `ctr images ls` shows it.
	Digest string `json:"digest"`
	// Size is the bytes this node's platform uses of it, as stored.
	Size int64 `json:"size"`
	// LastUsed is when a container was last made from it; absent if never.
	LastUsed *metav1.Time `json:"lastUsed,omitempty"`
}

// imageListKind and imagesAPIVersion type an ImageList: skiff's own
// group, as the path says.
const (
	imageListKind    = "ImageList"
	imagesAPIVersion = "skiff/v1"
)

// ImportResult is the body of a successful POST ImagesPath.
type ImportResult struct {
	// Images are the names of the imported images.
	Images []string `json:"images"`
}

// errImageTooLarge marks a tarball beyond the size limit.
var errImageTooLarge = errors.New("image tarball too large")

var imagesResource = schema.GroupResource{Group: "skiff", Resource: "images"}

// images serves ImagesPath: GET lists the images, POST streams the body
// into Images.ImportImage.
func (s *server) images(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost && r.Method != http.MethodGet {
		writeError(w, r, methodNotSupported(imagesResource, r.Method))
		return
	}
	if s.cfg.Images == nil {
		writeError(w, r, apierrors.NewServiceUnavailable("images are not available"))
		return
	}
	if r.Method == http.MethodGet {
		s.listImages(w, r)
		return
	}
	if mt := mediaType(r); mt != "application/x-tar" && mt != "application/octet-stream" {
		writeError(w, r, unsupportedImageType(mt))
		return
	}
	limit := s.maxImageSize()
	if r.ContentLength > limit {
		writeError(w, r, imageTooLarge(limit))
		return
	}
	body := &limitedReader{r: r.Body, left: limit}
	names, err := s.cfg.Images.ImportImage(r.Context(), body)
	switch {
	case body.exceeded:
		writeError(w, r, imageTooLarge(limit))
	case body.err != nil:
		writeError(w, r, apierrors.NewBadRequest(fmt.Sprintf("reading image tarball: %v", body.err)))
	case err != nil:
		// NOTE: the body was read whole, so the tarball itself is what
		// containerd refused.
		writeError(w, r, apierrors.NewBadRequest(err.Error()))
	default:
		writeJSON(w, r, http.StatusOK, ImportResult{Images: names})
	}
}

// listImages answers GET ImagesPath with an ImageList.
func (s *server) listImages(w http.ResponseWriter, r *http.Request) {
	items, err := s.cfg.Images.ListImages(r.Context())
	if err != nil {
		writeError(w, r, apierrors.NewInternalError(err))
		return
	}
	if items == nil {
		items = []Image{}
	}
	writeJSON(w, r, http.StatusOK, ImageList{
		TypeMeta: metav1.TypeMeta{Kind: imageListKind, APIVersion: imagesAPIVersion},
		Items:    items,
	})
}

func (s *server) maxImageSize() int64 {
	if s.cfg.MaxImageSize > 0 {
		return s.cfg.MaxImageSize
	}
	return DefaultMaxImageSize
}

func imageTooLarge(limit int64) error {
	return apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d bytes", limit))
}

func unsupportedImageType(contentType string) error {
	err := unsupportedMediaType(contentType).(*apierrors.StatusError)
	err.ErrStatus.Message = fmt.Sprintf("the body of the request was in an unknown format (%q) - accepted media types include: application/x-tar, application/octet-stream", contentType)
	return err
}

// limitedReader reads at most left bytes from r, then fails with
// errImageTooLarge; it records why reading stopped so that the handler
// can tell a client's fault from containerd's refusal.
type limitedReader struct {
	r        io.Reader
	left     int64
	exceeded bool
	err      error // a read error other than io.EOF
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.exceeded {
		return 0, errImageTooLarge
	}
	if int64(len(p)) > l.left+1 {
		p = p[:l.left+1]
	}
	n, err := l.r.Read(p)
	if int64(n) > l.left {
		l.exceeded = true
		return int(l.left), errImageTooLarge
	}
	l.left -= int64(n)
	if err != nil && err != io.EOF {
		l.err = err
	}
	return n, err
}
