package runtime

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParsePullSecret(t *testing.T) {
	tests := map[string]struct {
		data    string
		want    dockerConfig
		wantErr bool
	}{
		"dockerconfigjson": {data: `{"auths":{"r.example":{"auth":"dTpw"}}}`,
			want: dockerConfig{Auths: map[string]dockerAuth{"r.example": {Auth: "dTpw"}}}},
		"legacy dockercfg": {data: `{"r.example":{"username":"u","password":"p"}}`,
			want: dockerConfig{Auths: map[string]dockerAuth{"r.example": {Username: "u", Password: "p"}}}},
		"not json":      {data: `hunter2`, wantErr: true},
		"not an object": {data: `["r.example"]`, wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := parsePullSecret([]byte(tc.data))
			if (err != nil) != tc.wantErr {
				t.Fatalf("error = %v, wantErr %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); err == nil && diff != "" {
				t.Errorf("config (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestPullConfigs: a pull tries the pod's pull secrets that know the
// image's registry, in their order, and the registry config last; secrets
// for other registries and unreadable ones are passed over.
func TestPullConfigs(t *testing.T) {
	node := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(node, []byte(`{"auths":{"r.example":{"auth":"bm9kZTpw"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	r := &Runtime{registryConfig: node}
	ctx := WithPullSecrets(context.Background(),
		[]byte(`{"auths":{"other.example":{"auth":"eDp5"}}}`),
		[]byte(`not json`),
		[]byte(`{"auths":{"https://R.example/v1/":{"username":"first","password":"p"}}}`),
		[]byte(`{"r.example":{"username":"legacy","password":"p"}}`),
	)
	got, err := r.pullConfigs(ctx, "r.example/team/app:1")
	if err != nil {
		t.Fatal(err)
	}
	var users []string
	for _, cfg := range got {
		user, _, err := cfg.credentials("r.example")
		if err != nil {
			t.Fatal(err)
		}
		users = append(users, user)
	}
	if diff := cmp.Diff([]string{"first", "legacy", "node"}, users); diff != "" {
		t.Errorf("credentials tried (-want,+got):\n%s", diff)
	}

	// Without pull secrets only the registry config is tried, and a pod's
	// secret never reaches a pull made without its context.
	if got, err := r.pullConfigs(context.Background(), "r.example/team/app:1"); err != nil || len(got) != 1 {
		t.Errorf("without pull secrets: %d configs, %v", len(got), err)
	}
	if WithPullSecrets(context.Background()) != context.Background() {
		t.Error("no pull secrets changed the context")
	}
}
