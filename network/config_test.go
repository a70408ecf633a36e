package network

import (
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestConflist(t *testing.T) {
	bridge := map[string]any{
		"type":        "bridge",
		"bridge":      "skiff0",
		"isGateway":   true,
		"hairpinMode": true,
		"ipam": map[string]any{
			"type":    "host-local",
			"ranges":  []any{[]any{map[string]any{"subnet": "10.88.0.0/16"}}},
			"routes":  []any{map[string]any{"dst": "0.0.0.0/0"}},
			"dataDir": "/var/lib/skiff/network/ipam",
		},
	}
	tests := map[string]struct {
		hostPorts bool
		plugins   []any
	}{
		"pods without hostPorts: the bridge alone": {plugins: []any{bridge}},
		"pods with hostPorts: portmap after it": {hostPorts: true, plugins: []any{
			bridge,
			map[string]any{"type": "portmap", "capabilities": map[string]any{"portMappings": true}},
		}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			b, err := conflist("skiff0", "10.88.0.0/16", "/var/lib/skiff/network/ipam", tc.hostPorts)
			if err != nil {
				t.Fatal(err)
			}
			var got any
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatalf("conflist is not JSON: %v\n%s", err, b)
			}
			want := map[string]any{"cniVersion": "1.0.0", "name": "skiff", "plugins": tc.plugins}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("conflist (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestHostRules(t *testing.T) {
	var got []string
	for _, c := range (hostRules{bridge: "skiff0", subnet: "10.88.0.0/16"}).chains() {
		got = append(got, fmt.Sprintf("%s %s %s -j %s", c.table, c.from, strings.Join(c.jump, " "), c.name))
		for _, r := range c.rules {
			got = append(got, fmt.Sprintf("%s %s %s", c.table, c.name, strings.Join(r, " ")))
		}
	}
	want := []string{
		`filter FORWARD -m comment --comment skiff pod network skiff0: forwarding -j SKIFF-FWD-skiff0`,
		`filter SKIFF-FWD-skiff0 -i skiff0 -m comment --comment skiff pod network skiff0: from pods -j ACCEPT`,
		`filter SKIFF-FWD-skiff0 -o skiff0 -m conntrack --ctstate RELATED,ESTABLISHED,DNAT -m comment --comment skiff pod network skiff0: replies and hostPorts to pods -j ACCEPT`,
		`filter INPUT -i skiff0 -m comment --comment skiff pod network skiff0: from pods -j SKIFF-IN-skiff0`,
		`filter SKIFF-IN-skiff0 -d 127.0.0.0/8 -m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT -m comment --comment skiff pod network skiff0: no loopback from pods -j DROP`,
		`nat POSTROUTING -m comment --comment skiff pod network skiff0: masquerade -j SKIFF-MASQ-skiff0`,
		`nat SKIFF-MASQ-skiff0 -s 10.88.0.0/16 ! -o skiff0 -m comment --comment skiff pod network skiff0: pods leaving the node -j MASQUERADE`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("host rules (-want,+got):\n%s", diff)
	}
	// iptables' limit on chain names, with the longest bridge name.
	for _, c := range (hostRules{bridge: "abcdefghijklmno", subnet: "10.88.0.0/16"}).chains() {
		if len(c.name) > 28 {
			t.Errorf("chain name %q is longer than iptables takes", c.name)
		}
	}
}

func TestClashingRoute(t *testing.T) {
	const table = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n" +
		"eth0\t00000000\t010200C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\n" +
		"eth0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n" +
		"skiff0\t0000580A\t00000000\t0001\t0\t0\t0\t0000FFFF\t0\t0\t0\n" +
		"wg0\t0000C80A\t00000000\t0001\t0\t0\t0\t0000FFFF\t0\t0\t0\n"
	tests := map[string]struct {
		subnet string
		want   string
	}{
		"own bridge and default route are fine": {subnet: "10.88.0.0/16"},
		"unrelated":                             {subnet: "172.30.0.0/16"},
		"inside a host network":                 {subnet: "192.0.2.128/25", want: "192.0.2.0/24 dev eth0"},
		"containing a host network":             {subnet: "192.0.0.0/16", want: "192.0.2.0/24 dev eth0"},
		"other interface with the same range":   {subnet: "10.200.3.0/24", want: "10.200.0.0/16 dev wg0"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, subnet, err := net.ParseCIDR(tc.subnet)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := clashingRoute(table, subnet, "skiff0")
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("clashingRoute (-want,+got):\n%s", diff)
			}
		})
	}
}
