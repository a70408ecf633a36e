package network

import (
	"fmt"
	"strings"

	"github.com/coreos/go-iptables/iptables"
)

// hostRules are the iptables rules of one pod network (one bridge): a chain
// per job, each reached by one jump from a built-in chain. They are the
// same for every pod, so they are installed once per bridge instead of per
// pod by the plugins (the bridge plugin's ipMasq, the firewall plugin), which
// cost a dozen iptables runs, under iptables' lock, for every pod.
//
//	filter FORWARD     → SKIFF-FWD-<bridge>:  accept what pods send, and replies
//	                     and hostPort traffic to them (when FORWARD's policy is DROP)
//	filter INPUT       → SKIFF-IN-<bridge>:   drop what pods address to 127.0.0.0/8
//	nat    POSTROUTING → SKIFF-MASQ-<bridge>: masquerade what pods send off the node
//
// NOTE: the INPUT rule is kube-proxy's answer to CVE-2020-8558. The portmap
// plugin sets route_localnet on the bridge so that hostPorts answer on
// 127.0.0.1; that also lets a pod hand the node packets for 127.0.0.1 (a
// raw socket is enough), reaching every service that trusts loopback, such
// as skiffd's plain HTTP API. Only replies and hostPort traffic may come
// from the bridge to a loopback address.
type hostRules struct {
	bridge string
	subnet string
}

// hostChain is one chain of hostRules and the jump to it.
type hostChain struct {
	table, from, name string
	jump              []string   // the jump rule in from (without -j)
	rules             [][]string // the chain's rules, in order
}

// Chain name prefixes; with a bridge name (at most 15 bytes) they stay
// within iptables' 28.
const (
	forwardChainPrefix = "SKIFF-FWD-"
	inputChainPrefix   = "SKIFF-IN-"
	masqChainPrefix    = "SKIFF-MASQ-"
)

func (h hostRules) chains() []hostChain {
	comment := func(what string) []string {
		return []string{"-m", "comment", "--comment", fmt.Sprintf("skiff pod network %s: %s", h.bridge, what)}
	}
	return []hostChain{
		{
			table: "filter", from: "FORWARD", name: forwardChainPrefix + h.bridge,
			jump: comment("forwarding"),
			rules: [][]string{
				append([]string{"-i", h.bridge}, append(comment("from pods"), "-j", "ACCEPT")...),
				append([]string{"-o", h.bridge, "-m", "conntrack", "--ctstate", "RELATED,ESTABLISHED,DNAT"}, append(comment("replies and hostPorts to pods"), "-j", "ACCEPT")...),
			},
		},
		{
			table: "filter", from: "INPUT", name: inputChainPrefix + h.bridge,
			jump: append([]string{"-i", h.bridge}, comment("from pods")...),
			rules: [][]string{
				append([]string{"-d", "127.0.0.0/8", "-m", "conntrack", "!", "--ctstate", "RELATED,ESTABLISHED,DNAT"}, append(comment("no loopback from pods"), "-j", "DROP")...),
			},
		},
		{
			table: "nat", from: "POSTROUTING", name: masqChainPrefix + h.bridge,
			jump: comment("masquerade"),
			rules: [][]string{
				append([]string{"-s", h.subnet, "!", "-o", h.bridge}, append(comment("pods leaving the node"), "-j", "MASQUERADE")...),
			},
		},
	}
}

// ensure installs the rules, rewriting a chain only when it differs (the
// subnet changed), so that a restart of skiffd leaves running pods'
// traffic untouched.
func (h hostRules) ensure(ipt *iptables.IPTables) error {
	for _, c := range h.chains() {
		if err := ensureChain(ipt, c); err != nil {
			return fmt.Errorf("iptables %s %s: %w", c.table, c.name, err)
		}
	}
	return nil
}

func ensureChain(ipt *iptables.IPTables, c hostChain) error {
	exists, err := ipt.ChainExists(c.table, c.name)
	if err != nil {
		return err
	}
	if !exists {
		if err := ipt.NewChain(c.table, c.name); err != nil {
			return err
		}
	}
	same, err := chainHolds(ipt, c)
	if err != nil {
		return err
	}
	if !same {
		if err := ipt.ClearChain(c.table, c.name); err != nil {
			return err
		}
		for _, r := range c.rules {
			if err := ipt.Append(c.table, c.name, r...); err != nil {
				return err
			}
		}
	}
	// NOTE: first in the built-in chain, as the CNI plugins put theirs:
	// a DROP policy or rule further down (Docker's) must not shadow it.
	return ipt.InsertUnique(c.table, c.from, 1, append(c.jump, "-j", c.name)...)
}

// chainHolds reports whether the chain holds exactly c's rules.
func chainHolds(ipt *iptables.IPTables, c hostChain) (bool, error) {
	listed, err := ipt.List(c.table, c.name)
	if err != nil {
		return false, err
	}
	if len(listed) != len(c.rules)+1 { // "-N <chain>" first
		return false, nil
	}
	for _, r := range c.rules {
		ok, err := ipt.Exists(c.table, c.name, r...)
		if err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}

// RemoveHostRules removes the iptables chains of the pod network on bridge
// and the jumps to them. Pods on that bridge lose their way off the node:
// it is for a node that no longer runs skiff there (and for tests).
func RemoveHostRules(bridge string) error {
	ipt, err := iptables.New()
	if err != nil {
		return fmt.Errorf("iptables: %w", err)
	}
	var errs []string
	for _, c := range (hostRules{bridge: bridge, subnet: "0.0.0.0/0"}).chains() {
		// No chain, no jump: iptables refuses a jump to a missing chain.
		exists, err := ipt.ChainExists(c.table, c.name)
		if err == nil && exists {
			err = ipt.DeleteIfExists(c.table, c.from, append(c.jump, "-j", c.name)...)
			if err == nil {
				err = ipt.ClearAndDeleteChain(c.table, c.name)
			}
		}
		if err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("removing the iptables rules of %s: %s", bridge, strings.Join(errs, "; "))
	}
	return nil
}
