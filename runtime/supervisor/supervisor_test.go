package supervisor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestWriteConfig(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{
		Root:    filepath.Join(dir, "root"),
		State:   filepath.Join(dir, "state"),
		Address: filepath.Join(dir, "run", "containerd.sock"),
	}
	path, err := writeConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if path != filepath.Join(cfg.State, "config.toml") {
		t.Errorf("config at %s", path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var settings []string
	for _, line := range strings.Split(string(data), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			settings = append(settings, line)
		}
	}
	want := []string{
		"version = 2",
		`root = "` + cfg.Root + `"`,
		`state = "` + cfg.State + `"`,
		`disabled_plugins = ["io.containerd.grpc.v1.cri"]`,
		"[grpc]",
		`address = "` + cfg.Address + `"`,
	}
	if diff := cmp.Diff(want, settings); diff != "" {
		t.Errorf("config (-want,+got):\n%s", diff)
	}
	for _, d := range []string{cfg.Root, cfg.State, filepath.Dir(cfg.Address)} {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			t.Errorf("%s not created: %v", d, err)
		}
	}
}

func TestAnswering(t *testing.T) {
	dir := t.TempDir()
	tests := map[string]string{
		"no socket":    filepath.Join(dir, "absent.sock"),
		"not a socket": writeFile(t, filepath.Join(dir, "file")),
	}
	for name, address := range tests {
		t.Run(name, func(t *testing.T) {
			if Answering(context.Background(), address) {
				t.Errorf("Answering(%s) = true", address)
			}
		})
	}
}

func writeFile(t *testing.T, path string) string {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestWithoutNotify(t *testing.T) {
	env := []string{"PATH=/usr/bin", "NOTIFY_SOCKET=/run/systemd/notify", "WATCHDOG_USEC=30000000", "WATCHDOG_PID=1", "NOTIFY_SOCKETS=kept"}
	want := []string{"PATH=/usr/bin", "NOTIFY_SOCKETS=kept"}
	if diff := cmp.Diff(want, withoutNotify(env)); diff != "" {
		t.Errorf("(-want,+got):\n%s", diff)
	}
}
