package runtime

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCredentials(t *testing.T) {
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	cfg := dockerConfig{Auths: map[string]dockerAuth{
		"https://index.docker.io/v1/": {Auth: b64("hubuser:hubpass")},
		"registry.local:5000":         {Username: "plain", Password: "secret"},
		"http://Other.Example/path":   {Auth: b64("o:p:with:colons")},
		"token.example":               {Auth: b64("ignored:ignored"), IdentityToken: "refresh"},
		"broken.example":              {Auth: "%%%"},
		"nocolon.example":             {Auth: b64("justuser")},
	}}
	tests := map[string]struct {
		host             string
		wantUser, wantPw string
		wantErr          bool
	}{
		"docker hub as the resolver names it": {host: "registry-1.docker.io", wantUser: "hubuser", wantPw: "hubpass"},
		"docker hub short name":               {host: "docker.io", wantUser: "hubuser", wantPw: "hubpass"},
		"username and password fields":        {host: "registry.local:5000", wantUser: "plain", wantPw: "secret"},
		"port matters":                        {host: "registry.local"},
		"scheme, path and case ignored":       {host: "other.example", wantUser: "o", wantPw: "p:with:colons"},
		"identity token as refresh token":     {host: "token.example", wantPw: "refresh"},
		"unknown registry":                    {host: "quay.io"},
		"bad base64":                          {host: "broken.example", wantErr: true},
		"auth without colon":                  {host: "nocolon.example", wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			user, pw, err := cfg.credentials(tc.host)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error = %v, wantErr %v", err, tc.wantErr)
			}
			if diff := cmp.Diff([2]string{tc.wantUser, tc.wantPw}, [2]string{user, pw}); diff != "" {
				t.Errorf("credentials (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestLoadDockerConfig(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "config.json")
	if err := os.WriteFile(good, []byte(`{"auths":{"r.example":{"auth":"dTpw"}},"credsStore":"desktop"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"auths":`), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		path    string
		want    dockerConfig
		wantErr bool
	}{
		"no path":      {},
		"missing file": {path: filepath.Join(dir, "absent.json")},
		"auths read":   {path: good, want: dockerConfig{Auths: map[string]dockerAuth{"r.example": {Auth: "dTpw"}}}},
		"malformed":    {path: bad, wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := loadDockerConfig(tc.path)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error = %v, wantErr %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("config (-want,+got):\n%s", diff)
			}
		})
	}
}
