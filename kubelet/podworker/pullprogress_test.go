package podworker

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/skiff-sh/skiff/runtime"
)

func (f *fakeImages) EnsureImageWithProgress(ctx context.Context, ref string, policy runtime.PullPolicy, _ func(runtime.Progress)) error {
	return f.EnsureImage(ctx, ref, policy)
}

// pullStep is one progress report of a fake pull, after the clock moved on.
type pullStep struct {
	after time.Duration
	runtime.Progress
}

// fakePull is fakeImages whose pulls report steps, on the clock *now.
type fakePull struct {
	*fakeImages
	now   *time.Time
	steps []pullStep
}

func (f *fakePull) EnsureImageWithProgress(ctx context.Context, ref string, policy runtime.PullPolicy, progress func(runtime.Progress)) error {
	for _, s := range f.steps {
		*f.now = f.now.Add(s.after)
		progress(s.Progress)
	}
	return f.EnsureImage(ctx, ref, policy)
}

const (
	layerType    = "application/vnd.oci.image.layer.v1.tar+gzip"
	dockerLayer  = "application/vnd.docker.image.rootfs.diff.tar.gzip"
	manifestType = "application/vnd.oci.image.manifest.v1+json"
	digestA      = "sha256:aaaaaaaaaaaa0123456789abcdef0123456789abcdef0123456789abcdef0123"
	digestB      = "sha256:bbbbbbbbbbbb0123456789abcdef0123456789abcdef0123456789abcdef0123"
)

func TestPullProgressEvents(t *testing.T) {
	step := func(after time.Duration, d, mediaType string, offset, total int64, done bool) pullStep {
		return pullStep{after: after, Progress: runtime.Progress{Ref: "docker.io/library/busybox:1.35",
			Digest: d, MediaType: mediaType, Offset: offset, Total: total, Done: done}}
	}
	const (
		pulling = `spec.containers{c} Normal Pulling Pulling image "busybox:1.35"`
		pulled  = `spec.containers{c} Normal Pulled Successfully pulled image "busybox:1.35" in T (T including waiting). Image size: 1234 bytes.`
	)
	tests := map[string]struct {
		steps   []pullStep
		pullErr error
		wantErr bool
		want    []string
	}{
		"small layers are reported once each, manifests not at all": {
			steps: []pullStep{
				step(0, "sha256:m", manifestType, 0, 400, false),
				step(0, "sha256:m", manifestType, 400, 400, true),
				step(0, digestA, layerType, 0, 772_000, false),
				step(0, digestB, dockerLayer, 0, 512, false),
				step(time.Second, digestB, dockerLayer, 512, 512, true),
				step(time.Second, digestA, layerType, 772_000, 772_000, true),
				step(0, digestA, layerType, 772_000, 772_000, true), // found again: no second event
			},
			want: []string{
				pulling,
				`spec.containers{c} Normal Pulling Pulling image "busybox:1.35": layer sha256:bbbbbbbbbbbb done (512B)`,
				`spec.containers{c} Normal Pulling Pulling image "busybox:1.35": layer sha256:aaaaaaaaaaaa done (772.0kB)`,
				pulled,
			},
		},
		"a big layer reports its progress at most every few seconds": {
			steps: []pullStep{
				step(0, digestA, layerType, 0, 27_400_000, false),
				step(time.Second, digestA, layerType, 1_000_000, 27_400_000, false),
				step(4*time.Second, digestA, layerType, 12_330_000, 27_400_000, false),
				step(time.Second, digestA, layerType, 14_000_000, 27_400_000, false),
				step(3*time.Second, digestA, layerType, 20_000_000, 27_400_000, false),
				step(2*time.Second, digestA, layerType, 26_000_000, 27_400_000, false),
				step(time.Second, digestA, layerType, 27_400_000, 27_400_000, true),
			},
			want: []string{
				pulling,
				`spec.containers{c} Normal Pulling Pulling image "busybox:1.35": layer sha256:aaaaaaaaaaaa 45% (12.3MB/27.4MB)`,
				`spec.containers{c} Normal Pulling Pulling image "busybox:1.35": layer sha256:aaaaaaaaaaaa 94% (26.0MB/27.4MB)`,
				`spec.containers{c} Normal Pulling Pulling image "busybox:1.35": layer sha256:aaaaaaaaaaaa done (27.4MB)`,
				pulled,
			},
		},
		"a failed pull keeps the kubelet's events": {
			steps: []pullStep{
				step(0, digestA, layerType, 0, 2_000_000_000, false),
				step(6*time.Second, digestA, layerType, 500_000_000, 2_000_000_000, false),
			},
			pullErr: errors.New("connection reset by peer"),
			wantErr: true,
			want: []string{
				pulling,
				`spec.containers{c} Normal Pulling Pulling image "busybox:1.35": layer sha256:aaaaaaaaaaaa 25% (500.0MB/2.0GB)`,
				`spec.containers{c} Warning Failed Failed to pull image "busybox:1.35": pulling image "busybox:1.35": connection reset by peer`,
				`spec.containers{c} Warning Failed Error: ErrImagePull`,
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			rec := &fakeRecorder{}
			rt := &fakePull{fakeImages: &fakeImages{present: map[string]bool{}, pullErr: tc.pullErr}, now: &now, steps: tc.steps}
			cfg := Config{Runtime: rt, Recorder: rec, Now: func() time.Time { return now }}
			checkEnsureImage(t, cfg, rec, corev1.PullIfNotPresent, tc.wantErr, tc.want)
		})
	}
}

func TestHumanSize(t *testing.T) {
	tests := map[int64]string{
		0: "0B", 999: "999B", 1000: "1.0kB", 1500: "1.5kB", 12_345_678: "12.3MB",
		27_400_000: "27.4MB", 2_000_000_000: "2.0GB", 3_500_000_000_000: "3.5TB",
	}
	for n, want := range tests {
		if diff := cmp.Diff(want, humanSize(n)); diff != "" {
			t.Errorf("humanSize(%d) (-want,+got):\n%s", n, diff)
		}
	}
}

func TestShortDigest(t *testing.T) {
	tests := map[string]string{
		digestA:        "sha256:aaaaaaaaaaaa",
		"sha256:abc":   "sha256:abc",
		"not-a-digest": "not-a-digest",
	}
	for d, want := range tests {
		if diff := cmp.Diff(want, shortDigest(d)); diff != "" {
			t.Errorf("shortDigest(%q) (-want,+got):\n%s", d, diff)
		}
	}
}
