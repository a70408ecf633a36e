//go:build integration

package serviceproxy

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// saved is iptables-save of table.
func saved(t *testing.T, table string) string {
	t.Helper()
	out, err := exec.Command("iptables-save", "-t", table).Output()
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func TestProxierSyncAndRemove(t *testing.T) {
	bridge := fmt.Sprintf("sptest%d", os.Getpid()%100000)
	ctx := context.Background()
	t.Cleanup(func() { _ = Remove(ctx, bridge) })
	p, err := New(Config{Bridge: bridge, PodCIDR: "10.251.0.0/24"})
	if err != nil {
		t.Fatal(err)
	}
	web := Service{Namespace: "default", Name: "web", ClusterIP: "10.252.0.10", Ports: []Port{{Name: "http", Protocol: "tcp", Port: 80,
		Endpoints: []Endpoint{{IP: "10.251.0.5", Port: 8080}, {IP: "10.251.0.6", Port: 8080}}}}}
	idle := Service{Namespace: "default", Name: "idle", ClusterIP: "10.252.0.11", Ports: []Port{{Protocol: "udp", Port: 53}}}
	if err := p.Sync(ctx, []Service{web, idle}); err != nil {
		t.Fatal(err)
	}
	// Syncing twice inserts the jumps once.
	if err := p.Sync(ctx, []Service{web, idle}); err != nil {
		t.Fatal(err)
	}
	nat, filter := saved(t, "nat"), saved(t, "filter")
	c := p.chains
	for _, want := range []string{
		"--to-destination 10.251.0.5:8080", "--to-destination 10.251.0.6:8080",
		"-d 10.252.0.10/32 -p tcp -m comment --comment \"default/web:http cluster IP\"",
	} {
		if !strings.Contains(nat, want) {
			t.Errorf("nat table lacks %q", want)
		}
	}
	if !strings.Contains(filter, "default/idle has no endpoints") {
		t.Errorf("filter table lacks the reject of idle:\n%s", filter)
	}
	if n := strings.Count(nat, "-j "+c.services()); n != 2 {
		t.Errorf("%d jumps to %s in nat, want PREROUTING and OUTPUT once each", n, c.services())
	}

	// One endpoint less: its chain goes.
	web.Ports[0].Endpoints = web.Ports[0].Endpoints[:1]
	if err := p.Sync(ctx, []Service{web}); err != nil {
		t.Fatal(err)
	}
	nat, filter = saved(t, "nat"), saved(t, "filter")
	gone := c.sep("default/web:http", "tcp", Endpoint{IP: "10.251.0.6", Port: 8080})
	if strings.Contains(nat, gone) || strings.Contains(nat, "10.251.0.6") {
		t.Errorf("stale endpoint chain %s left:\n%s", gone, nat)
	}
	if strings.Contains(filter, "default/idle") {
		t.Errorf("deleted service's reject left")
	}

	if err := Remove(ctx, bridge); err != nil {
		t.Fatal(err)
	}
	for table, s := range map[string]string{"nat": saved(t, "nat"), "filter": saved(t, "filter")} {
		if strings.Contains(s, c.prefix) {
			t.Errorf("%s table still has %s chains or jumps:\n%s", table, c.prefix, s)
		}
	}
}

// BenchmarkProxierSync measures one full sync (iptables-save, one
// iptables-restore, the jump checks) of 100 Services of 2 endpoints.
func BenchmarkProxierSync(b *testing.B) {
	bridge := fmt.Sprintf("spbench%d", os.Getpid()%100000)
	ctx := context.Background()
	b.Cleanup(func() { _ = Remove(ctx, bridge) })
	p, err := New(Config{Bridge: bridge, PodCIDR: "10.251.0.0/24"})
	if err != nil {
		b.Fatal(err)
	}
	var svcs []Service
	for i := 0; i < 100; i++ {
		svcs = append(svcs, Service{Namespace: "default", Name: fmt.Sprintf("svc-%d", i), ClusterIP: fmt.Sprintf("10.252.0.%d", i+1),
			Ports: []Port{{Name: "http", Protocol: "tcp", Port: 80, Endpoints: []Endpoint{{IP: "10.251.0.5", Port: 8080}, {IP: "10.251.0.6", Port: 8080}}}}})
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := p.Sync(ctx, svcs); err != nil {
			b.Fatal(err)
		}
	}
}
