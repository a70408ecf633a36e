package serviceproxy

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestChainNames(t *testing.T) {
	a, b := chainsFor("skiff0"), chainsFor("skd123-1")
	if a.prefix == b.prefix {
		t.Fatalf("two bridges share the prefix %s", a.prefix)
	}
	for _, name := range []string{a.services(), a.postrouting(), a.markMasq(), a.svc("default/web:http", "tcp"),
		a.sep("default/web:http", "tcp", Endpoint{IP: "10.88.0.255", Port: 65535})} {
		if len(name) > 28 || !a.owns(name) || b.owns(name) {
			t.Errorf("chain %q: %d characters, owned by a %v, by b %v", name, len(name), a.owns(name), b.owns(name))
		}
	}
}

func TestRules(t *testing.T) {
	c := chains{prefix: "SKt"}
	web := Service{Namespace: "default", Name: "web", ClusterIP: "10.43.0.10", Ports: []Port{{Name: "http", Protocol: "tcp", Port: 80,
		Endpoints: []Endpoint{{IP: "10.88.0.5", Port: 8080}, {IP: "10.88.0.6", Port: 8080}, {IP: "10.88.0.7", Port: 8080}}}}}
	empty := Service{Namespace: "default", Name: "idle", ClusterIP: "10.43.0.11", Ports: []Port{{Protocol: "udp", Port: 53}}}
	got := string(rules(c, "10.88.0.0/16", false, []Service{web, empty}, []string{"SKt-SVC-OLD", "SKt-SERVICES"}))

	svc := c.svc("default/web:http", "tcp")
	seps := []string{
		c.sep("default/web:http", "tcp", Endpoint{IP: "10.88.0.5", Port: 8080}),
		c.sep("default/web:http", "tcp", Endpoint{IP: "10.88.0.6", Port: 8080}),
		c.sep("default/web:http", "tcp", Endpoint{IP: "10.88.0.7", Port: 8080}),
	}
	want := []string{
		"*nat",
		":SKt-SERVICES - [0:0]",
		":SKt-POSTROUTING - [0:0]",
		":SKt-MARK-MASQ - [0:0]",
		":" + svc + " - [0:0]",
		":" + seps[0] + " - [0:0]",
		":" + seps[1] + " - [0:0]",
		":" + seps[2] + " - [0:0]",
		":SKt-SVC-OLD - [0:0]",
		"-A SKt-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN",
		"-A SKt-POSTROUTING -j MARK --xor-mark 0x4000",
		`-A SKt-POSTROUTING -m comment --comment "skiff service traffic requiring SNAT" -j MASQUERADE`,
		"-A SKt-MARK-MASQ -j MARK --or-mark 0x4000",
		`-A SKt-SERVICES -m comment --comment "default/web:http cluster IP" -m tcp -p tcp -d 10.43.0.10/32 --dport 80 -j ` + svc,
		`-A ` + svc + ` -m comment --comment "default/web:http cluster IP" -m tcp -p tcp -d 10.43.0.10/32 --dport 80 ! -s 10.88.0.0/16 -j SKt-MARK-MASQ`,
		`-A ` + svc + ` -m comment --comment "default/web:http -> 10.88.0.5:8080" -m statistic --mode random --probability 0.3333333333 -j ` + seps[0],
		`-A ` + seps[0] + ` -m comment --comment "default/web:http" -s 10.88.0.5/32 -j SKt-MARK-MASQ`,
		`-A ` + seps[0] + ` -m comment --comment "default/web:http" -m tcp -p tcp -j DNAT --to-destination 10.88.0.5:8080`,
		`-A ` + svc + ` -m comment --comment "default/web:http -> 10.88.0.6:8080" -m statistic --mode random --probability 0.5000000000 -j ` + seps[1],
		`-A ` + seps[1] + ` -m comment --comment "default/web:http" -s 10.88.0.6/32 -j SKt-MARK-MASQ`,
		`-A ` + seps[1] + ` -m comment --comment "default/web:http" -m tcp -p tcp -j DNAT --to-destination 10.88.0.6:8080`,
		`-A ` + svc + ` -m comment --comment "default/web:http -> 10.88.0.7:8080" -j ` + seps[2],
		`-A ` + seps[2] + ` -m comment --comment "default/web:http" -s 10.88.0.7/32 -j SKt-MARK-MASQ`,
		`-A ` + seps[2] + ` -m comment --comment "default/web:http" -m tcp -p tcp -j DNAT --to-destination 10.88.0.7:8080`,
		"-X SKt-SVC-OLD",
		"COMMIT",
		"*filter",
		":SKt-SERVICES - [0:0]",
		`-A SKt-SERVICES -m comment --comment "default/idle has no endpoints" -m udp -p udp -d 10.43.0.11/32 --dport 53 -j REJECT --reject-with icmp-port-unreachable`,
		"COMMIT",
	}
	if diff := cmp.Diff(want, strings.Split(strings.TrimSpace(got), "\n")); diff != "" {
		t.Errorf("rules (-want,+got):\n%s", diff)
	}
}

func TestRulesAffinityAndMasqueradeAll(t *testing.T) {
	c := chains{prefix: "SKt"}
	svc := Service{Namespace: "default", Name: "web", ClusterIP: "10.43.0.10", AffinitySeconds: 10800,
		Ports: []Port{{Protocol: "tcp", Port: 80, Endpoints: []Endpoint{{IP: "10.88.0.5", Port: 80}}}}}
	got := string(rules(c, "10.88.0.0/16", true, []Service{svc}, nil))
	sep := c.sep("default/web", "tcp", Endpoint{IP: "10.88.0.5", Port: 80})
	for _, line := range []string{
		"-m recent --name " + sep + " --mask 255.255.255.255 --rsource --rcheck --seconds 10800 --reap -j " + sep,
		"-m recent --name " + sep + " --mask 255.255.255.255 --rsource --set -m tcp -p tcp -j DNAT --to-destination 10.88.0.5:80",
		"--dport 80 -j SKt-MARK-MASQ",
	} {
		if !strings.Contains(got, line) {
			t.Errorf("rules lack %q:\n%s", line, got)
		}
	}
}

func TestSplitRule(t *testing.T) {
	got := splitRule(`-m comment --comment "skiff service portals (skiff0)" -j SKt-SERVICES`)
	want := []string{"-m", "comment", "--comment", "skiff service portals (skiff0)", "-j", "SKt-SERVICES"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want,+got):\n%s", diff)
	}
}

// BenchmarkRules renders the rules of 1000 Services of 3 endpoints each.
func BenchmarkRules(b *testing.B) {
	var svcs []Service
	for i := 0; i < 1000; i++ {
		svcs = append(svcs, Service{Namespace: "default", Name: fmt.Sprintf("svc-%d", i), ClusterIP: fmt.Sprintf("10.43.%d.%d", i/250, i%250+1),
			Ports: []Port{{Name: "http", Protocol: "tcp", Port: 80, Endpoints: []Endpoint{
				{IP: "10.88.0.5", Port: 8080}, {IP: "10.88.0.6", Port: 8080}, {IP: "10.88.0.7", Port: 8080}}}}})
	}
	c := chainsFor("skiff0")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_ = rules(c, "10.88.0.0/16", false, svcs, nil)
	}
}
