package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skiff-sh/skiff/logs"
)

func TestFindLogDriver(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "driver")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	tests := map[string]struct {
		configured string
		want       string // the path found, or a part of the error
		ok         bool
	}{
		"configured":                {configured: exe, want: exe, ok: true},
		"relative is made absolute": {configured: "driver", want: exe, ok: true},
		"missing":                   {configured: filepath.Join(dir, "none"), want: "make build and make install put " + logs.DriverBinary + " beside skiffd"},
		"not executable":            {configured: plain, want: "not an executable file"},
		"a directory":               {configured: dir, want: "not an executable file"},
		// The test binary has no driver beside it.
		"beside the executable": {want: logs.DriverBinary + ": no such file or directory"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := findLogDriver(tt.configured)
			if tt.ok {
				if err != nil || got != tt.want {
					t.Errorf("findLogDriver(%q) = %q, %v; want %q", tt.configured, got, err, tt.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("findLogDriver(%q) = %q, %v; want an error with %q", tt.configured, got, err, tt.want)
			}
		})
	}
}
