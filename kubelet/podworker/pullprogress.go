package podworker

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	skiffruntime "github.com/skiff-sh/skiff/runtime"
)

// progressEvery is the least time between two in-progress events of one
// layer; a layer fetched faster gets only its "done" event.
const progressEvery = 5 * time.Second

// pullProgress turns the progress reports of one image pull into Normal
// "Pulling" events: one when each layer is done, and at most one every
// progressEvery while a big layer downloads.
//
// NOTE: the kubelet records only Pulling and Pulled (or Failed) for a pull;
// these events are skiff's addition and reuse the reason "Pulling" so that
// `kubectl describe` shows them between the two.
type pullProgress struct {
	image string
	now   func() time.Time
	event func(eventtype, reason, messageFmt string, args ...any)

	last map[string]time.Time // layer digest → when first seen or last reported
	done map[string]bool      // layer digests reported done
}

func newPullProgress(image string, now func() time.Time, event func(eventtype, reason, messageFmt string, args ...any)) *pullProgress {
	return &pullProgress{image: image, now: now, event: event, last: map[string]time.Time{}, done: map[string]bool{}}
}

// report is the progress callback of Runtime.EnsureImageWithProgress.
func (p *pullProgress) report(pr skiffruntime.Progress) {
	if !isLayer(pr.MediaType) || p.done[pr.Digest] {
		return
	}
	if pr.Done {
		p.done[pr.Digest] = true
		delete(p.last, pr.Digest)
		p.event(corev1.EventTypeNormal, "Pulling", "Pulling image %q: layer %s done (%s)",
			p.image, shortDigest(pr.Digest), humanSize(pr.Total))
		return
	}
	now := p.now()
	last, seen := p.last[pr.Digest]
	if !seen {
		p.last[pr.Digest] = now
		return
	}
	if now.Sub(last) < progressEvery || pr.Total <= 0 || pr.Offset <= 0 || pr.Offset >= pr.Total {
		return
	}
	p.last[pr.Digest] = now
	p.event(corev1.EventTypeNormal, "Pulling", "Pulling image %q: layer %s %d%% (%s/%s)",
		p.image, shortDigest(pr.Digest), pr.Offset*100/pr.Total, humanSize(pr.Offset), humanSize(pr.Total))
}

// isLayer reports whether mediaType is an image layer's: OCI
// (application/vnd.oci.image.layer.*) or Docker
// (application/vnd.docker.image.rootfs.*), not a manifest, index or config.
func isLayer(mediaType string) bool {
	return strings.Contains(mediaType, ".layer.") || strings.Contains(mediaType, ".rootfs.")
}

// shortDigest is a digest with its hex cut to 12 characters: sha256:0123456789ab.
func shortDigest(d string) string {
	algo, hex, ok := strings.Cut(d, ":")
	if !ok || len(hex) <= 12 {
		return d
	}
	return algo + ":" + hex[:12]
}

// humanSize is a byte count in decimal units with one decimal: 512B,
// 1.5kB, 27.4MB.
func humanSize(n int64) string {
	if n < 1000 {
		return fmt.Sprintf("%dB", n)
	}
	size := float64(n)
	unit := ""
	for _, u := range []string{"kB", "MB", "GB", "TB"} {
		size /= 1000
		unit = u
		if size < 1000 {
			break
		}
	}
	return fmt.Sprintf("%.1f%s", size, unit)
}
