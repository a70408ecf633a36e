package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// pullSecretsKey is the context key of a pull's own credentials.
type pullSecretsKey struct{}

// WithPullSecrets returns ctx carrying registry credentials of the pod a
// pull is for (the contents of its imagePullSecrets: docker config.json
// documents, {"auths": …}, or the legacy .dockercfg map). A pull made with
// ctx tries each of them that has credentials for the image's registry, in
// order, then the registry config's, as the kubelet merges a pod's pull
// secrets with the node's credentials.
func WithPullSecrets(ctx context.Context, secrets ...[]byte) context.Context {
	if len(secrets) == 0 {
		return ctx
	}
	return context.WithValue(ctx, pullSecretsKey{}, secrets)
}

// parsePullSecret reads a pull secret in either docker format.
func parsePullSecret(data []byte) (dockerConfig, error) {
	var cfg dockerConfig
	if err := json.Unmarshal(data, &cfg); err == nil && len(cfg.Auths) > 0 {
		return cfg, nil
	}
	// NOTE: the legacy format (kubernetes.io/dockercfg) is the auths map itself.
	cfg = dockerConfig{}
	if err := json.Unmarshal(data, &cfg.Auths); err != nil {
		return cfg, fmt.Errorf("parsing a pull secret: %w", err)
	}
	return cfg, nil
}

// pullConfigs are the credential sets to try for pulling name, in order:
// the pod's pull secrets that know its registry, then the registry
// config's (which may have none: an anonymous pull).
func (r *Runtime) pullConfigs(ctx context.Context, name string) ([]dockerConfig, error) {
	node, err := loadDockerConfig(r.registryConfig)
	if err != nil {
		return nil, err
	}
	domain, _, _ := strings.Cut(name, "/")
	var out []dockerConfig
	secrets, _ := ctx.Value(pullSecretsKey{}).([][]byte)
	for _, data := range secrets {
		cfg, err := parsePullSecret(data)
		if err != nil {
			continue // the kubelet skips a secret it cannot read
		}
		if cfg.has(domain) {
			out = append(out, cfg)
		}
	}
	return append(out, node), nil
}

// has reports whether c holds credentials for registry host.
func (c dockerConfig) has(host string) bool {
	want := canonicalRegistry(host)
	for key := range c.Auths {
		if canonicalRegistry(key) == want {
			return true
		}
	}
	return false
}
