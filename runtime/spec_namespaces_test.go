package runtime

import (
	"context"
	"testing"

	"github.com/containerd/containerd/containers"
	"github.com/containerd/containerd/oci"
	"github.com/google/go-cmp/cmp"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// withNamespaces is a spec holding containerd's default namespaces.
func withNamespaces() *oci.Spec {
	return &oci.Spec{Linux: &specs.Linux{Namespaces: []specs.LinuxNamespace{
		{Type: specs.PIDNamespace}, {Type: specs.NetworkNamespace}, {Type: specs.UTSNamespace},
	}}}
}

func TestWithNetwork(t *testing.T) {
	tests := map[string]struct {
		path string
		want []specs.LinuxNamespace
	}{
		"host network": {want: []specs.LinuxNamespace{{Type: specs.PIDNamespace}, {Type: specs.UTSNamespace}}},
		"pod netns": {path: "/var/run/netns/cni-1", want: []specs.LinuxNamespace{
			{Type: specs.PIDNamespace}, {Type: specs.NetworkNamespace, Path: "/var/run/netns/cni-1"}, {Type: specs.UTSNamespace},
		}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := withNamespaces()
			if err := withNetwork(tc.path)(context.Background(), nil, &containers.Container{}, s); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, s.Linux.Namespaces); diff != "" {
				t.Errorf("namespaces (-want,+got):\n%s", diff)
			}
			if _, err := applyToEmpty(t, withNetwork(tc.path)); err != nil {
				t.Errorf("on an empty spec: %v", err)
			}
		})
	}
}

func TestWithPIDNamespace(t *testing.T) {
	tests := map[string]struct {
		path string
		want []specs.LinuxNamespace
	}{
		"own": {want: withNamespaces().Linux.Namespaces},
		"joined": {path: "/proc/42/ns/pid", want: []specs.LinuxNamespace{
			{Type: specs.PIDNamespace, Path: "/proc/42/ns/pid"}, {Type: specs.NetworkNamespace}, {Type: specs.UTSNamespace},
		}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := withNamespaces()
			if err := withPIDNamespace(tc.path)(context.Background(), nil, &containers.Container{}, s); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, s.Linux.Namespaces); diff != "" {
				t.Errorf("namespaces (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestWithEtcFiles(t *testing.T) {
	hostFiles := []specs.Mount{
		{Destination: "/etc/resolv.conf", Type: "bind", Source: "/etc/resolv.conf", Options: []string{"rbind", "ro"}},
		{Destination: "/etc/hosts", Type: "bind", Source: "/etc/hosts", Options: []string{"rbind", "ro"}},
	}
	tests := map[string]struct {
		hosts, resolv, hostname string
		readOnlyRoot            bool
		want                    []specs.Mount
	}{
		"host's files read-only": {want: hostFiles},
		"pod's files writable": {hosts: "/pods/u/hosts", resolv: "/pods/u/resolv.conf", want: []specs.Mount{
			{Destination: "/etc/resolv.conf", Type: "bind", Source: "/pods/u/resolv.conf", Options: []string{"rbind", "rw"}},
			{Destination: "/etc/hosts", Type: "bind", Source: "/pods/u/hosts", Options: []string{"rbind", "rw"}},
		}},
		"pod's files with a read-only root": {hosts: "/pods/u/hosts", readOnlyRoot: true, want: []specs.Mount{
			hostFiles[0],
			{Destination: "/etc/hosts", Type: "bind", Source: "/pods/u/hosts", Options: []string{"rbind", "ro"}},
		}},
		"pod's hostname file": {hosts: "/pods/u/hosts", resolv: "/pods/u/resolv.conf", hostname: "/pods/u/hostname", want: []specs.Mount{
			{Destination: "/etc/resolv.conf", Type: "bind", Source: "/pods/u/resolv.conf", Options: []string{"rbind", "rw"}},
			{Destination: "/etc/hosts", Type: "bind", Source: "/pods/u/hosts", Options: []string{"rbind", "rw"}},
			{Destination: "/etc/hostname", Type: "bind", Source: "/pods/u/hostname", Options: []string{"rbind", "rw"}},
		}},
		"pod's hostname file with a read-only root": {hostname: "/pods/u/hostname", readOnlyRoot: true, want: append(append([]specs.Mount{}, hostFiles...),
			specs.Mount{Destination: "/etc/hostname", Type: "bind", Source: "/pods/u/hostname", Options: []string{"rbind", "ro"}})},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s, err := applyToEmpty(t, withEtcFiles(tc.hosts, tc.resolv, tc.hostname, tc.readOnlyRoot))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, s.Mounts); diff != "" {
				t.Errorf("mounts (-want,+got):\n%s", diff)
			}
			// Applying twice does not mount twice.
			if err := withEtcFiles(tc.hosts, tc.resolv, tc.hostname, tc.readOnlyRoot)(context.Background(), nil, &containers.Container{}, s); err != nil {
				t.Fatal(err)
			}
			if len(s.Mounts) != len(tc.want) {
				t.Errorf("after a second apply: %v", s.Mounts)
			}
		})
	}
}

func TestWithHostname(t *testing.T) {
	tests := map[string]struct {
		name string
		want *oci.Spec
	}{
		"named": {name: "job-a-0", want: &oci.Spec{
			Hostname: "job-a-0",
			Linux:    &specs.Linux{Namespaces: []specs.LinuxNamespace{{Type: specs.UTSNamespace}}},
		}},
		"unnamed keeps own namespace": {want: &oci.Spec{
			Linux: &specs.Linux{Namespaces: []specs.LinuxNamespace{{Type: specs.UTSNamespace}}},
		}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s, err := applyToEmpty(t, withHostname(tc.name))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, s); diff != "" {
				t.Errorf("spec (-want,+got):\n%s", diff)
			}
			// Applying twice does not add a second UTS namespace.
			if err := withHostname(tc.name)(context.Background(), nil, &containers.Container{}, s); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, s); diff != "" {
				t.Errorf("spec after second apply (-want,+got):\n%s", diff)
			}
		})
	}
}
