package api

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// fakeImages records what it read and answers names or err; it lists list.
type fakeImages struct {
	names []string
	err   error
	read  string
	list  []Image
}

var _ Images = (*fakeImages)(nil)

func (f *fakeImages) ImportImage(_ context.Context, rd io.Reader) ([]string, error) {
	data, err := io.ReadAll(rd)
	f.read = string(data)
	if err != nil {
		return nil, err
	}
	return f.names, f.err
}

func (f *fakeImages) ListImages(context.Context) ([]Image, error) { return f.list, f.err }

func TestImagesImport(t *testing.T) {
	busybox := []string{"docker.io/library/busybox:1.35"}
	tests := map[string]struct {
		method      string
		contentType string
		body        string
		images      *fakeImages
		maxSize     int64
		chunked     bool // no Content-Length: the limit is met while streaming
		wantCode    int
		wantReason  metav1.StatusReason
		wantMsg     string // substring of the Status message
		wantImages  []string
		wantRead    string
	}{
		"tar": {
			method: "POST", contentType: "application/x-tar", body: "tarball",
			images: &fakeImages{names: busybox}, wantCode: 200, wantImages: busybox, wantRead: "tarball",
		},
		"octet-stream": {
			method: "POST", contentType: "application/octet-stream", body: "tarball",
			images: &fakeImages{names: busybox}, wantCode: 200, wantImages: busybox, wantRead: "tarball",
		},
		"exactly the limit": {
			method: "POST", contentType: "application/x-tar", body: "1234", maxSize: 4,
			images: &fakeImages{names: busybox}, wantCode: 200, wantImages: busybox, wantRead: "1234",
		},
		"JSON body": {
			method: "POST", contentType: "application/json", body: "{}",
			images: &fakeImages{}, wantCode: 415, wantReason: metav1.StatusReasonUnsupportedMediaType, wantMsg: "application/x-tar",
		},
		"too large by Content-Length": {
			method: "POST", contentType: "application/x-tar", body: "12345", maxSize: 4,
			images: &fakeImages{}, wantCode: 413, wantReason: metav1.StatusReasonRequestEntityTooLarge, wantMsg: "limit is 4 bytes",
		},
		"too large while streaming": {
			method: "POST", contentType: "application/x-tar", body: "12345", maxSize: 4, chunked: true,
			images: &fakeImages{}, wantCode: 413, wantReason: metav1.StatusReasonRequestEntityTooLarge, wantRead: "1234",
		},
		"refused by containerd": {
			method: "POST", contentType: "application/x-tar", body: "not a tarball",
			images:   &fakeImages{err: errors.New("importing image archive: unrecognized image format")},
			wantCode: 400, wantReason: metav1.StatusReasonBadRequest, wantMsg: "unrecognized image format", wantRead: "not a tarball",
		},
		"no runtime": {
			method: "POST", contentType: "application/x-tar", body: "tarball",
			wantCode: 503, wantReason: metav1.StatusReasonServiceUnavailable,
		},
		"PUT": {
			method: "PUT", images: &fakeImages{}, wantCode: 405, wantReason: metav1.StatusReasonMethodNotAllowed,
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			cfg := Config{MaxImageSize: tt.maxSize}
			if tt.images != nil {
				cfg.Images = tt.images
			}
			srv := httptest.NewServer(New(cfg))
			defer srv.Close()
			var body io.Reader = strings.NewReader(tt.body)
			if tt.chunked {
				body = io.MultiReader(body)
			}
			req, err := http.NewRequest(tt.method, srv.URL+ImagesPath, body)
			if err != nil {
				t.Fatal(err)
			}
			if tt.contentType != "" {
				req.Header.Set("Content-Type", tt.contentType)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			data, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.wantCode {
				t.Fatalf("code %d, want %d; body %s", resp.StatusCode, tt.wantCode, data)
			}
			if tt.wantCode == 200 {
				var got ImportResult
				if err := json.Unmarshal(data, &got); err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tt.wantImages, got.Images); diff != "" {
					t.Errorf("images (-want,+got):\n%s", diff)
				}
			} else {
				st := statusOf(t, string(data))
				if st.Reason != tt.wantReason || !strings.Contains(st.Message, tt.wantMsg) {
					t.Errorf("Status %s %q, want %s containing %q", st.Reason, st.Message, tt.wantReason, tt.wantMsg)
				}
			}
			if tt.images != nil && tt.images.read != tt.wantRead {
				t.Errorf("runtime read %q, want %q", tt.images.read, tt.wantRead)
			}
		})
	}
}

func TestImagesList(t *testing.T) {
	used := metav1.NewTime(time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC))
	tests := map[string]struct {
		images   Images
		wantCode int
		wantBody string
	}{
		"images": {
			images: &fakeImages{list: []Image{
				{Name: "docker.io/library/alpine:3", Digest: "sha256:aa", Size: 3_000_000},
				{Name: "docker.io/library/busybox:1.35", Digest: "sha256:bb", Size: 1_000_000, LastUsed: &used},
			}},
			wantCode: 200,
			wantBody: `{"kind":"ImageList","apiVersion":"skiff/v1","items":[` +
				`{"name":"docker.io/library/alpine:3","digest":"sha256:aa","size":3000000},` +
				`{"name":"docker.io/library/busybox:1.35","digest":"sha256:bb","size":1000000,"lastUsed":"2025-03-01T12:00:00Z"}]}`,
		},
		"none":            {images: &fakeImages{}, wantCode: 200, wantBody: `{"kind":"ImageList","apiVersion":"skiff/v1","items":[]}`},
		"containerd down": {images: &fakeImages{err: errors.New("connection refused")}, wantCode: 500},
		"no runtime":      {wantCode: 503},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(New(Config{Images: tt.images}))
			defer srv.Close()
			resp, err := http.Get(srv.URL + ImagesPath)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			data, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.wantCode {
				t.Fatalf("code %d, want %d; body %s", resp.StatusCode, tt.wantCode, data)
			}
			if tt.wantBody != "" {
				if diff := cmp.Diff(tt.wantBody, strings.TrimSpace(string(data))); diff != "" {
					t.Errorf("body (-want,+got):\n%s", diff)
				}
			} else if st := statusOf(t, string(data)); st.Code != int32(tt.wantCode) {
				t.Errorf("Status %+v", st)
			}
		})
	}
}

func TestLimitedReader(t *testing.T) {
	tests := map[string]struct {
		body         string
		limit        int64
		wantRead     string
		wantExceeded bool
	}{
		"under":   {body: "abc", limit: 4, wantRead: "abc"},
		"at":      {body: "abcd", limit: 4, wantRead: "abcd"},
		"over":    {body: "abcdef", limit: 4, wantRead: "abcd", wantExceeded: true},
		"limit 0": {body: "a", limit: 0, wantRead: "", wantExceeded: true},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			l := &limitedReader{r: strings.NewReader(tt.body), left: tt.limit}
			got, err := io.ReadAll(l)
			if diff := cmp.Diff(tt.wantRead, string(got)); diff != "" {
				t.Errorf("read (-want,+got):\n%s", diff)
			}
			if l.exceeded != tt.wantExceeded || (err != nil) != tt.wantExceeded {
				t.Errorf("exceeded %v, err %v; want exceeded %v", l.exceeded, err, tt.wantExceeded)
			}
		})
	}
}
