package runtime

import (
	"context"
	"fmt"
	"time"

	"github.com/containerd/containerd"
)

// ServerVersion asks the containerd at address its version without
// setting up a Runtime, giving up after timeout: for `skiffd version`,
// which must answer quickly when containerd is absent or not ours to reach.
func ServerVersion(ctx context.Context, address string, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client, err := containerd.New(address, containerd.WithTimeout(timeout))
	if err != nil {
		return "", fmt.Errorf("connecting to containerd at %s: %w", address, err)
	}
	defer client.Close()
	v, err := client.Version(ctx)
	if err != nil {
		return "", fmt.Errorf("asking containerd at %s its version: %w", address, err)
	}
	return v.Version, nil
}
