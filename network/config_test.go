package network

import (
	"encoding/json"
	"net"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestConflist(t *testing.T) {
	b, err := conflist("skiff0", "10.88.0.0/16", "/var/lib/skiff/network/ipam")
	if err != nil {
		t.Fatal(err)
	}
	var got any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("conflist is not JSON: %v\n%s", err, b)
	}
	want := map[string]any{
		"cniVersion": "1.0.0",
		"name":       "skiff",
		"plugins": []any{
			map[string]any{
				"type":        "bridge",
				"bridge":      "skiff0",
				"isGateway":   true,
				"ipMasq":      true,
				"hairpinMode": true,
				"ipam": map[string]any{
					"type":    "host-local",
					"ranges":  []any{[]any{map[string]any{"subnet": "10.88.0.0/16"}}},
					"routes":  []any{map[string]any{"dst": "0.0.0.0/0"}},
					"dataDir": "/var/lib/skiff/network/ipam",
				},
			},
			map[string]any{"type": "portmap", "capabilities": map[string]any{"portMappings": true}},
			map[string]any{"type": "firewall"},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("conflist (-want,+got):\n%s", diff)
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
