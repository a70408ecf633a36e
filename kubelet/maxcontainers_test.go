package kubelet

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCgroupPIDsMax(t *testing.T) {
	tests := map[string]struct {
		procCgroup string
		files      map[string]string // under the cgroup root
		wantLimit  int64
		wantPath   string
		wantOK     bool
	}{
		"v2, limit on a parent": {
			procCgroup: "0::/system.slice/skiffd.service\n",
			files: map[string]string{
				"system.slice/skiffd.service/pids.max": "max\n",
				"system.slice/pids.max":                "4096\n",
			},
			wantLimit: 4096, wantPath: "system.slice/pids.max", wantOK: true,
		},
		"v1 pids controller, lowest wins": {
			procCgroup: "9:name=systemd:/x\n8:pids:/a/b\n4:memory:/a/b\n",
			files: map[string]string{
				"pids/a/b/pids.max": "300\n",
				"pids/a/pids.max":   "1000\n",
			},
			wantLimit: 300, wantPath: "pids/a/b/pids.max", wantOK: true,
		},
		"no limit anywhere": {
			procCgroup: "0::/\n",
			files:      map[string]string{"pids.max": "max\n"},
		},
		"no pids controller": {
			procCgroup: "4:memory:/a\n",
			files:      map[string]string{"pids/a/pids.max": "5\n"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			root := filepath.Join(dir, "cgroup")
			for p, v := range tc.files {
				full := filepath.Join(root, p)
				if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(full, []byte(v), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			proc := filepath.Join(dir, "cgroup-of-self")
			if err := os.WriteFile(proc, []byte(tc.procCgroup), 0o644); err != nil {
				t.Fatal(err)
			}
			limit, path, ok := cgroupPIDsMax(proc, root)
			wantPath := ""
			if tc.wantPath != "" {
				wantPath = filepath.Join(root, tc.wantPath)
			}
			if diff := cmp.Diff([]any{tc.wantLimit, wantPath, tc.wantOK}, []any{limit, path, ok}); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
		})
	}
}

func TestDefaultMaxContainers(t *testing.T) {
	n, why := DefaultMaxContainers(24 << 30)
	pids, _ := pidLimit()
	want := int(min(pids/2/pidsPerContainer, int64(24<<30)/4/memoryPerContainer))
	if n != want || n < 1 {
		t.Errorf("DefaultMaxContainers(24 GiB) = %d (%s), want %d", n, why, want)
	}
	if n, _ := DefaultMaxContainers(1 << 20); n != 1 {
		t.Errorf("DefaultMaxContainers(1 MiB) = %d, want at least 1", n)
	}
}
