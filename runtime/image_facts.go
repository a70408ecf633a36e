package runtime

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/containerd/containerd"
	"github.com/opencontainers/go-digest"
	"github.com/opencontainers/image-spec/identity"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// imageFacts are what a container's creation reads of its image. They
// depend only on the image's content (its target digest), which never
// changes, so they are read from containerd's content store once per
// digest: reading them again for each container (the manifest, the config
// blob, the layers' sizes, once for the kubelet's checks and again for the
// container) was about a tenth of a pod's start.
type imageFacts struct {
	config  ocispec.Image
	size    int64
	chainID string // the snapshot of the image's unpacked layers
}

// maxImageFacts bounds the cache: a node holds a few dozen images; past
// this the cache starts again empty.
const maxImageFacts = 256

// touchEvery is how often, at most, a container's creation records the use
// of its image (labelLastUsed, a containerd write): image garbage collection
// orders images by it, to the minute.
const touchEvery = time.Minute

// imageCache holds the imageFacts read so far, the layer chains seen
// unpacked, and when each image name's use was last recorded.
type imageCache struct {
	mu         sync.Mutex
	facts      map[digest.Digest]imageFacts
	unpacked   map[string]bool      // chain IDs
	touched    map[string]time.Time // image names
	identities map[identityKey]specs.User
}

func newImageCache() *imageCache {
	return &imageCache{facts: map[digest.Digest]imageFacts{}, unpacked: map[string]bool{}, touched: map[string]time.Time{},
		identities: map[identityKey]specs.User{}}
}

// resolveImage looks ref up (one round trip: a tag may have moved) and
// returns it with its facts.
func (r *Runtime) resolveImage(ctx context.Context, ref string) (containerd.Image, imageFacts, error) {
	img, err := r.image(ctx, ref)
	if err != nil {
		return nil, imageFacts{}, err
	}
	facts, err := r.images.factsOf(ctx, img)
	return img, facts, err
}

// factsOf returns img's facts, read from the content store the first time.
func (c *imageCache) factsOf(ctx context.Context, img containerd.Image) (imageFacts, error) {
	key := img.Target().Digest
	c.mu.Lock()
	f, ok := c.facts[key]
	c.mu.Unlock()
	if ok {
		return f, nil
	}
	config, err := img.Spec(ctx)
	if err != nil {
		return imageFacts{}, fmt.Errorf("reading config of image %q: %w", img.Name(), err)
	}
	size, err := img.Size(ctx)
	if err != nil {
		return imageFacts{}, fmt.Errorf("sizing image %q: %w", img.Name(), err)
	}
	diffIDs, err := img.RootFS(ctx)
	if err != nil {
		return imageFacts{}, fmt.Errorf("reading layers of image %q: %w", img.Name(), err)
	}
	f = imageFacts{config: config, size: size, chainID: identity.ChainID(diffIDs).String()}
	c.mu.Lock()
	if len(c.facts) >= maxImageFacts {
		clear(c.facts)
	}
	c.facts[key] = f
	c.mu.Unlock()
	return f, nil
}

// seenUnpacked reports whether the layer chain was found unpacked before.
func (c *imageCache) seenUnpacked(chainID string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.unpacked[chainID]
}

// setUnpacked records whether the layer chain is unpacked: true once it was
// found so, false when a snapshot of it could not be made (its layers were
// removed under the image).
func (c *imageCache) setUnpacked(chainID string, unpacked bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !unpacked {
		delete(c.unpacked, chainID)
		return
	}
	if len(c.unpacked) >= maxImageFacts {
		clear(c.unpacked)
	}
	c.unpacked[chainID] = true
}

// dueTouch reports whether the use of image name at now must be recorded,
// and if so takes note that it is.
func (c *imageCache) dueTouch(name string, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if last, ok := c.touched[name]; ok && now.Sub(last) < touchEvery && !now.Before(last) {
		return false
	}
	if len(c.touched) >= maxImageFacts {
		clear(c.touched)
	}
	c.touched[name] = now
	return true
}

// identityKey names a process identity resolved in a layer chain's files:
// the chain, and what withUser was asked (see userKey).
type identityKey struct{ chainID, user string }

// identity returns the process identity resolved before under k, if any.
func (c *imageCache) identity(k identityKey) (specs.User, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	u, ok := c.identities[k]
	return copyUser(u), ok
}

// setIdentity records the process identity resolved under k.
func (c *imageCache) setIdentity(k identityKey, u specs.User) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.identities) >= maxImageFacts {
		clear(c.identities)
	}
	c.identities[k] = copyUser(u)
}

// copyUser is u sharing nothing with it.
func copyUser(u specs.User) specs.User {
	u.AdditionalGids = slices.Clone(u.AdditionalGids)
	if u.Umask != nil {
		umask := *u.Umask
		u.Umask = &umask
	}
	return u
}
