package network

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func newTestNetwork(t *testing.T, cfg Config) *Network {
	t.Helper()
	dir := t.TempDir()
	cfg.DataDir = filepath.Join(dir, "data")
	if cfg.PluginDirs == nil {
		cfg.PluginDirs = []string{filepath.Join(dir, "no-plugins")}
	}
	if cfg.ResolvConf == "" {
		cfg.ResolvConf = filepath.Join(dir, "resolv.conf")
		if err := os.WriteFile(cfg.ResolvConf, []byte("nameserver 127.0.0.53\nnameserver 10.255.255.53\nsearch corp.example\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if cfg.HostsFile == "" {
		cfg.HostsFile = filepath.Join(dir, "hosts")
		if err := os.WriteFile(cfg.HostsFile, []byte("127.0.0.1 localhost\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	n, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return n
}

func TestNewRejectsBadConfig(t *testing.T) {
	tests := map[string]Config{
		"no data dir":      {},
		"not a CIDR":       {DataDir: "x", Subnet: "10.88.0.0"},
		"IPv6 subnet":      {DataDir: "x", Subnet: "fd00::/64"},
		"too small":        {DataDir: "x", Subnet: "10.88.0.0/31"},
		"bad bridge name":  {DataDir: "x", Bridge: "a-much-too-long-name"},
		"slash in bridge ": {DataDir: "x", Bridge: "a/b"},
	}
	for name, cfg := range tests {
		t.Run(name, func(t *testing.T) {
			if cfg.DataDir != "" {
				cfg.DataDir = filepath.Join(t.TempDir(), cfg.DataDir)
			}
			if _, err := New(cfg); err == nil {
				t.Errorf("New(%+v) succeeded", cfg)
			}
		})
	}
}

func TestMissingPluginsMakeTheNetworkUnavailable(t *testing.T) {
	n := newTestNetwork(t, Config{})
	if err := n.Status(); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Status = %v, want ErrUnavailable", err)
	}
	_, err := n.Setup(context.Background(), Pod{UID: "u1", Namespace: "default", Name: "p", Hostname: "p"})
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Setup = %v, want ErrUnavailable", err)
	}
	if uids, err := n.List(); err != nil || len(uids) != 0 {
		t.Errorf("List after a failed Setup = %v, %v; want nothing left", uids, err)
	}
}

func TestHostNetworkSandbox(t *testing.T) {
	ctx := context.Background()
	n := newTestNetwork(t, Config{HostIP: "192.0.2.2"})
	pod := Pod{UID: "u1", Namespace: "default", Name: "p", Hostname: "p", HostNetwork: true}
	sb, err := n.Setup(ctx, pod)
	if err != nil {
		t.Fatalf("Setup: %v", err)
	}
	want := Sandbox{
		IP:             "192.0.2.2",
		HostsPath:      filepath.Join(n.cfg.DataDir, "pods", "u1", "hosts"),
		ResolvConfPath: filepath.Join(n.cfg.DataDir, "pods", "u1", "resolv.conf"),
		HostnamePath:   filepath.Join(n.cfg.DataDir, "pods", "u1", "hostname"),
	}
	if diff := cmp.Diff(want, sb); diff != "" {
		t.Errorf("Setup (-want,+got):\n%s", diff)
	}
	node, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		sb.HostsPath:      "# Kubernetes-managed hosts file (host network).\n127.0.0.1 localhost\n",
		sb.ResolvConfPath: "search corp.example\nnameserver 127.0.0.53\nnameserver 10.255.255.53\n",
		// The node's name, not the pod's: a hostNetwork sandbox has none.
		sb.HostnamePath: node + "\n",
	}
	for path, want := range files {
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, string(got)); diff != "" {
			t.Errorf("%s (-want,+got):\n%s", filepath.Base(path), diff)
		}
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o644 {
			t.Errorf("%s: mode %v (%v), want 0644", path, fi.Mode(), err)
		}
	}

	found, ok, err := n.Find("u1")
	if err != nil || !ok {
		t.Fatalf("Find = %v, %v", ok, err)
	}
	if diff := cmp.Diff(sb, found); diff != "" {
		t.Errorf("Find (-Setup,+Find):\n%s", diff)
	}
	if uids, err := n.List(); err != nil || !cmp.Equal(uids, []string{"u1"}) {
		t.Errorf("List = %v, %v; want [u1]", uids, err)
	}
	for i := 0; i < 2; i++ { // idempotent
		if err := n.Teardown(ctx, "u1"); err != nil {
			t.Fatalf("Teardown #%d: %v", i+1, err)
		}
	}
	if _, ok, err := n.Find("u1"); ok || err != nil {
		t.Errorf("Find after Teardown = %v, %v", ok, err)
	}
	if uids, err := n.List(); err != nil || len(uids) != 0 {
		t.Errorf("List after Teardown = %v, %v", uids, err)
	}
}

func TestInvalidUIDs(t *testing.T) {
	n := newTestNetwork(t, Config{})
	for _, uid := range []string{"", ".", "..", "a/b", "../x"} {
		if _, err := n.Setup(context.Background(), Pod{UID: uid, HostNetwork: true}); err == nil {
			t.Errorf("Setup(%q) succeeded", uid)
		}
		if err := n.Teardown(context.Background(), uid); err == nil {
			t.Errorf("Teardown(%q) succeeded", uid)
		}
	}
}

func TestOverlapErrorClasses(t *testing.T) {
	err := fmt.Errorf("starting: %w", overlapError{subnet: "192.0.2.0/25", route: "192.0.2.0/24 dev eth0"})
	if !errors.Is(err, ErrSubnetOverlap) || !errors.Is(err, ErrUnavailable) {
		t.Errorf("%v is not both ErrSubnetOverlap and ErrUnavailable", err)
	}
	if want := "starting: pod subnet 192.0.2.0/25 overlaps the host route 192.0.2.0/24 dev eth0"; err.Error() != want {
		t.Errorf("message %q, want %q", err, want)
	}
}

func TestBridgeNameTakenByAnotherInterface(t *testing.T) {
	if err := notABridge("lo"); !errors.Is(err, ErrUnavailable) {
		t.Errorf("notABridge(lo) = %v, want ErrUnavailable", err)
	}
	if err := notABridge("skiffnone0"); err != nil {
		t.Errorf("notABridge of a name no interface has = %v", err)
	}
}
