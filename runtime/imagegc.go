package runtime

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/containerd/containerd/images"
	"github.com/containerd/errdefs"
	"github.com/containerd/platforms"
	"golang.org/x/sys/unix"
)

// labelLastUsed on an image records when a container was last created from
// it (RFC 3339), for ImageGC's least-recently-used order.
const labelLastUsed = "io.skiff.image.last-used"

// imageUsage is one image as ImageGC weighs it: every name of one content
// digest (removing some names frees nothing).
type imageUsage struct {
	Names    []string
	LastUsed time.Time
	Size     int64
	InUse    bool
}

// ImageGC removes least-recently-used images that no container uses, when
// the disk holding containerd's snapshots is at least highPct full, until
// it is below lowPct (the kubelet's image garbage collection). inUse names
// the images pods still want (refs as pods write them, or image IDs); images
// of existing containers are kept anyway. It returns the names removed.
func (r *Runtime) ImageGC(ctx context.Context, highPct, lowPct int, inUse map[string]bool) ([]string, error) {
	ctx = r.withNS(ctx)
	root, err := r.snapshotterRoot(ctx)
	if err != nil {
		return nil, err
	}
	capacity, available, err := diskSpace(root)
	if err != nil {
		return nil, err
	}
	if capacity == 0 || 100-available*100/capacity < int64(highPct) {
		return nil, nil
	}
	toFree := capacity*int64(100-lowPct)/100 - available
	usage, err := r.imageUsage(ctx, inUse)
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, img := range imagesToRemove(usage, toFree) {
		if err := r.removeNames(ctx, img.Names); err != nil {
			return removed, err
		}
		removed = append(removed, img.Names...)
	}
	if len(removed) > 0 {
		logger("").WithField("images", removed).Info("image garbage collection removed images")
	}
	return removed, nil
}

// imagesToRemove picks, least recently used first, unused images until
// their sizes add up to toFree.
func imagesToRemove(usage []imageUsage, toFree int64) []imageUsage {
	candidates := make([]imageUsage, 0, len(usage))
	for _, img := range usage {
		if !img.InUse {
			candidates = append(candidates, img)
		}
	}
	sort.SliceStable(candidates, func(i, j int) bool { return candidates[i].LastUsed.Before(candidates[j].LastUsed) })
	var picked []imageUsage
	for _, img := range candidates {
		if toFree <= 0 {
			break
		}
		picked = append(picked, img)
		toFree -= img.Size
	}
	return picked
}

// imageUsage describes every image of the namespace, grouped by content.
func (r *Runtime) imageUsage(ctx context.Context, inUse map[string]bool) ([]imageUsage, error) {
	used, err := r.containerImages(ctx)
	if err != nil {
		return nil, err
	}
	for ref := range inUse {
		if name, err := NormalizeRef(ref); err == nil {
			used[name] = true
		}
		used[ref] = true
	}
	all, err := r.client.ImageService().List(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing images: %w", err)
	}
	byDigest := map[string]*imageUsage{}
	var order []string
	for i := range all {
		img := &all[i]
		key := img.Target.Digest.String()
		u, ok := byDigest[key]
		if !ok {
			size, err := img.Size(ctx, r.client.ContentStore(), platforms.Default())
			if err != nil {
				logger("").WithError(err).WithField("image", img.Name).Warn("sizing image for garbage collection")
			}
			u = &imageUsage{Size: size}
			byDigest[key] = u
			order = append(order, key)
		}
		u.Names = append(u.Names, img.Name)
		if last := lastUsed(*img); last.After(u.LastUsed) {
			u.LastUsed = last
		}
		id, _ := repoDigest(img.Name, img.Target.Digest)
		u.InUse = u.InUse || used[img.Name] || used[id]
	}
	usage := make([]imageUsage, 0, len(order))
	for _, key := range order {
		usage = append(usage, *byDigest[key])
	}
	return usage, nil
}

// lastUsed is when a container was last made from img, else when it was
// last updated (pulled, imported).
func lastUsed(img images.Image) time.Time {
	if t, err := time.Parse(time.RFC3339Nano, img.Labels[labelLastUsed]); err == nil {
		return t
	}
	return img.UpdatedAt
}

// containerImages is the set of image names the namespace's containers use.
func (r *Runtime) containerImages(ctx context.Context) (map[string]bool, error) {
	containers, err := r.client.ContainerService().List(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing containers: %w", err)
	}
	used := make(map[string]bool, len(containers))
	for _, c := range containers {
		used[c.Image] = true
	}
	return used, nil
}

// touchImage records that a container is being made from the image name.
func (r *Runtime) touchImage(ctx context.Context, name string) {
	now := time.Now()
	if !r.images.dueTouch(name, now) {
		return
	}
	img := images.Image{Name: name, Labels: map[string]string{labelLastUsed: now.UTC().Format(time.RFC3339Nano)}}
	if _, err := r.client.ImageService().Update(ctx, img, "labels."+labelLastUsed); err != nil {
		logger("").WithError(err).WithField("image", name).Warn("recording image use")
	}
}

// RemoveImage removes the image ref (this name of it), and with the last
// name its content and snapshots; absent is fine.
func (r *Runtime) RemoveImage(ctx context.Context, ref string) error {
	name, err := NormalizeRef(ref)
	if err != nil {
		return err
	}
	return r.removeNames(r.withNS(ctx), []string{name})
}

// removeNames deletes the image names, the last one synchronously so that
// containerd's garbage collector frees the space before it returns.
func (r *Runtime) removeNames(ctx context.Context, names []string) error {
	for i, name := range names {
		var opts []images.DeleteOpt
		if i == len(names)-1 {
			opts = append(opts, images.SynchronousDelete())
		}
		if err := r.client.ImageService().Delete(ctx, name, opts...); err != nil && !errdefs.IsNotFound(err) {
			return fmt.Errorf("removing image %q: %w", name, err)
		}
	}
	return nil
}

// snapshotterRoot is the directory containerd keeps the snapshots in.
func (r *Runtime) snapshotterRoot(ctx context.Context) (string, error) {
	resp, err := r.client.IntrospectionService().Plugins(ctx, []string{fmt.Sprintf("type==io.containerd.snapshotter.v1,id==%s", r.snapshotter)})
	if err != nil {
		return "", fmt.Errorf("asking containerd for the %s snapshotter: %w", r.snapshotter, err)
	}
	for _, p := range resp.Plugins {
		if root := p.Exports["root"]; root != "" {
			return root, nil
		}
	}
	return "", errors.New("containerd does not say where its snapshots are")
}

// diskSpace is the capacity and the space available to unprivileged users
// of the filesystem holding path, in bytes.
func diskSpace(path string) (capacity, available int64, err error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return 0, 0, fmt.Errorf("measuring the disk of %s: %w", path, err)
	}
	return int64(st.Blocks) * st.Bsize, int64(st.Bavail) * st.Bsize, nil
}
