package runtime

import (
	"context"
	"errors"
	"testing"

	"github.com/containerd/containerd/containers"
	"github.com/containerd/containerd/oci"
	"github.com/google/go-cmp/cmp"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

func TestWithMounts(t *testing.T) {
	shm := specs.Mount{Destination: "/dev/shm", Type: "tmpfs", Source: "shm", Options: []string{"nosuid"}}
	proc := specs.Mount{Destination: "/proc", Type: "proc", Source: "proc"}
	tests := map[string]struct {
		mounts  []Mount
		want    []specs.Mount
		wantErr error
	}{
		"none": {want: []specs.Mount{proc, shm}},
		"bind gets rbind and rprivate": {
			mounts: []Mount{{Source: "/pods/u/volumes/data", Destination: "/data"}},
			want:   []specs.Mount{proc, shm, {Destination: "/data", Type: "bind", Source: "/pods/u/volumes/data", Options: []string{"rbind", "rprivate"}}},
		},
		"read-only bind keeps its options": {
			mounts: []Mount{{Source: "/etc/ssl", Destination: "/ssl/", Type: "bind", Options: []string{"bind", "ro", "rslave"}}},
			want:   []specs.Mount{proc, shm, {Destination: "/ssl", Type: "bind", Source: "/etc/ssl", Options: []string{"bind", "ro", "rslave"}}},
		},
		"tmpfs with size": {
			mounts: []Mount{{Destination: "/cache", Type: "tmpfs", Options: []string{"size=64m"}}},
			want:   []specs.Mount{proc, shm, {Destination: "/cache", Type: "tmpfs", Source: "tmpfs", Options: []string{"size=64m"}}},
		},
		"replaces a default at the same destination": {
			mounts: []Mount{{Destination: "/dev/shm", Type: "tmpfs", Options: []string{"size=1g"}}},
			want:   []specs.Mount{proc, {Destination: "/dev/shm", Type: "tmpfs", Source: "tmpfs", Options: []string{"size=1g"}}},
		},
		"parents before children, otherwise in order": {
			mounts: []Mount{
				{Source: "/v/b", Destination: "/data/b"},
				{Source: "/v/data", Destination: "/data"},
				{Source: "/v/a", Destination: "/data/a"},
				{Source: "/v/z", Destination: "/z"},
			},
			want: []specs.Mount{proc, shm,
				{Destination: "/data", Type: "bind", Source: "/v/data", Options: []string{"rbind", "rprivate"}},
				{Destination: "/z", Type: "bind", Source: "/v/z", Options: []string{"rbind", "rprivate"}},
				{Destination: "/data/b", Type: "bind", Source: "/v/b", Options: []string{"rbind", "rprivate"}},
				{Destination: "/data/a", Type: "bind", Source: "/v/a", Options: []string{"rbind", "rprivate"}},
			},
		},
		"relative destination": {mounts: []Mount{{Source: "/v", Destination: "data"}}, wantErr: errBadMount},
		"relative source":      {mounts: []Mount{{Source: "v", Destination: "/data"}}, wantErr: errBadMount},
		"unknown type":         {mounts: []Mount{{Source: "/dev/sda1", Destination: "/data", Type: "ext4"}}, wantErr: errBadMount},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := &oci.Spec{Mounts: []specs.Mount{proc, shm}}
			err := withMounts(tc.mounts)(context.Background(), nil, &containers.Container{}, s)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("error = %v, want %v", err, tc.wantErr)
			}
			if tc.wantErr != nil {
				return
			}
			if diff := cmp.Diff(tc.want, s.Mounts); diff != "" {
				t.Errorf("mounts (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestWithCgroupMount(t *testing.T) {
	s, err := applyToEmpty(t, oci.Compose(withCgroupMount, withCgroupMount))
	if err != nil {
		t.Fatal(err)
	}
	want := []specs.Mount{{
		Destination: "/sys/fs/cgroup", Type: "cgroup", Source: "cgroup",
		Options: []string{"nosuid", "noexec", "nodev", "relatime", "ro"},
	}}
	if diff := cmp.Diff(want, s.Mounts); diff != "" {
		t.Errorf("mounts (-want,+got):\n%s", diff)
	}
}
