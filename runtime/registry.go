package runtime

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/containerd/containerd/remotes"
	"github.com/containerd/containerd/remotes/docker"
)

// dockerConfig is the part of a docker config.json that skiff reads.
type dockerConfig struct {
	Auths map[string]dockerAuth `json:"auths"`
}

// dockerAuth is one registry's entry in the auths map.
type dockerAuth struct {
	Auth          string `json:"auth"` // base64 of "user:password"
	Username      string `json:"username"`
	Password      string `json:"password"`
	IdentityToken string `json:"identitytoken"`
}

// loadDockerConfig reads the docker config.json at path; a missing file (or
// no path) has no credentials.
func loadDockerConfig(path string) (dockerConfig, error) {
	var cfg dockerConfig
	if path == "" {
		return cfg, nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return cfg, nil
	}
	if err != nil {
		return cfg, fmt.Errorf("reading registry config: %w", err)
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return cfg, fmt.Errorf("parsing registry config %s: %w", path, err)
	}
	return cfg, nil
}

// credentials returns the username and secret for registry host (as the
// resolver names it: registry-1.docker.io, localhost:5000); both empty when
// the config has none. An identity token comes back as the secret with an
// empty username, which containerd's authorizer sends as a refresh token.
//
// NOTE: keys match the way docker matches them: by host, whatever scheme or
// path they carry ("https://index.docker.io/v1/" is Docker Hub's).
func (c dockerConfig) credentials(host string) (username, secret string, err error) {
	want := canonicalRegistry(host)
	for key, entry := range c.Auths {
		if canonicalRegistry(key) != want {
			continue
		}
		return entry.decode(key)
	}
	return "", "", nil
}

// decode extracts the credentials of an entry.
func (a dockerAuth) decode(key string) (username, secret string, err error) {
	if a.IdentityToken != "" {
		return "", a.IdentityToken, nil
	}
	if a.Auth == "" {
		return a.Username, a.Password, nil
	}
	raw, err := base64.StdEncoding.DecodeString(a.Auth)
	if err != nil {
		return "", "", fmt.Errorf("decoding the auth of %s in the registry config: %w", key, err)
	}
	username, secret, ok := strings.Cut(string(raw), ":")
	if !ok {
		return "", "", fmt.Errorf("the auth of %s in the registry config is not user:password", key)
	}
	return username, secret, nil
}

// canonicalRegistry is the host of a registry name or URL, with Docker
// Hub's several names made one.
func canonicalRegistry(name string) string {
	if _, rest, ok := strings.Cut(name, "://"); ok {
		name = rest
	}
	name, _, _ = strings.Cut(name, "/")
	name = strings.ToLower(name)
	switch name {
	case "docker.io", "index.docker.io", "registry-1.docker.io", "registry.hub.docker.com":
		return "docker.io"
	}
	return name
}

// resolver is a registry resolver using the credentials of cfg;
// registries on localhost are spoken to over plain HTTP, as containerd's
// own client does.
func resolver(cfg dockerConfig) remotes.Resolver {
	authorizer := docker.NewDockerAuthorizer(docker.WithAuthCreds(cfg.credentials))
	return docker.NewResolver(docker.ResolverOptions{
		Hosts: docker.ConfigureDefaultRegistries(
			docker.WithAuthorizer(authorizer),
			docker.WithPlainHTTP(docker.MatchLocalhost),
		),
	})
}
