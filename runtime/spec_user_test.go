package runtime

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/containerd/containerd/containers"
	"github.com/containerd/containerd/oci"
	"github.com/google/go-cmp/cmp"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// applyToRootfs applies opt to a spec whose rootfs is a directory holding
// files (path → content).
func applyToRootfs(t *testing.T, opt oci.SpecOpts, files map[string]string) (*oci.Spec, error) {
	t.Helper()
	root := t.TempDir()
	for path, content := range files {
		full := filepath.Join(root, path)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := &oci.Spec{Root: &specs.Root{Path: root}, Linux: &specs.Linux{}}
	err := opt(context.Background(), nil, &containers.Container{ID: "c1"}, s)
	return s, err
}

func TestWithUser(t *testing.T) {
	image := map[string]string{
		"etc/passwd": "root:x:0:0:root:/root:/bin/sh\napp:x:1000:1000::/home/app:/bin/sh\nnobody:x:65534:65534::/:/bin/false\n",
		"etc/group":  "root:x:0:\nwheel:x:10:root\napp:x:1000:\nvideo:x:44:app,other\nnogroup:x:65534:\n",
	}
	gid := func(g uint32) *uint32 { return &g }
	tests := map[string]struct {
		user      *User
		imageUser string
		files     map[string]string
		want      specs.User
	}{
		"root by default, with its groups": {files: image, want: specs.User{AdditionalGids: []uint32{0, 10}}},
		"image user by name":               {imageUser: "app", files: image, want: specs.User{UID: 1000, GID: 1000, AdditionalGids: []uint32{44, 1000}}},
		"image uid:gid":                    {imageUser: "1000:5", files: image, want: specs.User{UID: 1000, GID: 5, AdditionalGids: []uint32{5, 44}}},
		"runAsUser gets primary group from passwd": {
			user: &User{UID: 1000}, imageUser: "nobody", files: image,
			want: specs.User{UID: 1000, GID: 1000, AdditionalGids: []uint32{44, 1000}},
		},
		"runAsUser unknown to passwd gets group 0": {
			user: &User{UID: 4242}, files: image,
			want: specs.User{UID: 4242, GID: 0, AdditionalGids: []uint32{0}},
		},
		"runAsUser and runAsGroup": {
			user: &User{UID: 4242, GID: gid(3000)}, files: image,
			want: specs.User{UID: 4242, GID: 3000, AdditionalGids: []uint32{3000}},
		},
		"supplemental groups merged": {
			user: &User{UID: 1000, GID: gid(3000), Groups: []uint32{2000, 44, 1}}, files: image,
			want: specs.User{UID: 1000, GID: 3000, AdditionalGids: []uint32{1, 44, 2000, 3000}},
		},
		"image without passwd": {
			user: &User{UID: 1000},
			want: specs.User{UID: 1000, GID: 0, AdditionalGids: []uint32{0}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s, err := applyToRootfs(t, withUser(tc.user, tc.imageUser), tc.files)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, s.Process.User); diff != "" {
				t.Errorf("user (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestWithUserUnknownName(t *testing.T) {
	_, err := applyToRootfs(t, withUser(nil, "ghost"), map[string]string{"etc/passwd": "root:x:0:0::/:/bin/sh\n"})
	if err == nil {
		t.Error("an image USER missing from /etc/passwd was accepted")
	}
}

func TestMergeGroups(t *testing.T) {
	got := mergeGroups([]uint32{5, 1, 5}, []uint32{3, 1})
	if diff := cmp.Diff([]uint32{1, 3, 5}, got); diff != "" {
		t.Errorf("merged (-want,+got):\n%s", diff)
	}
}
