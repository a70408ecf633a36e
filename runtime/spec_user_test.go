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

// TestWithCachedUser: an identity is resolved in a layer chain's files
// once; the same chain and request are answered from memory (the files of
// the second rootfs differ only to show that they were not read), another
// chain or another request reads them again, and a failure is not kept.
func TestWithCachedUser(t *testing.T) {
	images := newImageCache()
	first := map[string]string{
		"etc/passwd": "root:x:0:0:root:/root:/bin/sh\napp:x:1000:1000::/home/app:/bin/sh\n",
		"etc/group":  "root:x:0:\nwheel:x:10:root\nvideo:x:44:app\n",
	}
	changed := map[string]string{
		"etc/passwd": "root:x:0:0:root:/root:/bin/sh\napp:x:2000:2000::/home/app:/bin/sh\n",
		"etc/group":  "root:x:0:\naudio:x:29:root,app\n",
	}
	tests := []struct {
		name      string
		chainID   string
		user      *User
		imageUser string
		files     map[string]string
		want      specs.User
	}{
		{"root, first read", "chain-a", nil, "", first, specs.User{AdditionalGids: []uint32{0, 10}}},
		{"root, from memory", "chain-a", nil, "", changed, specs.User{AdditionalGids: []uint32{0, 10}}},
		{"root, another chain", "chain-b", nil, "", changed, specs.User{AdditionalGids: []uint32{0, 29}}},
		{"image user, first read", "chain-a", nil, "app", first, specs.User{UID: 1000, GID: 1000, AdditionalGids: []uint32{44, 1000}}},
		{"image user, from memory", "chain-a", nil, "app", changed, specs.User{UID: 1000, GID: 1000, AdditionalGids: []uint32{44, 1000}}},
		{"runAsUser, another request", "chain-a", &User{UID: 0, Groups: []uint32{5}}, "app", changed, specs.User{AdditionalGids: []uint32{0, 5, 29}}},
	}
	for _, tc := range tests {
		s, err := applyToRootfs(t, images.withCachedUser(tc.chainID, tc.user, tc.imageUser), tc.files)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if diff := cmp.Diff(tc.want, s.Process.User); diff != "" {
			t.Errorf("%s: user (-want +got):\n%s", tc.name, diff)
		}
		// What a spec holds is its own: changing it changes no other.
		s.Process.User.AdditionalGids = append(s.Process.User.AdditionalGids[:0], 99)
	}

	missing := images.withCachedUser("chain-c", nil, "ghost")
	if _, err := applyToRootfs(t, missing, first); err == nil {
		t.Fatal("a user the image lacks resolved")
	}
	withGhost := map[string]string{"etc/passwd": "ghost:x:7:7::/:/bin/sh\n", "etc/group": ""}
	s, err := applyToRootfs(t, missing, withGhost)
	if err != nil {
		t.Fatalf("after a failure, the files are read again: %v", err)
	}
	if s.Process.User.UID != 7 || s.Process.User.GID != 7 {
		t.Errorf("user %+v, want 7:7", s.Process.User)
	}
}
