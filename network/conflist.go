package network

import (
	"encoding/json"
	"fmt"
)

// cniVersion is the CNI spec version of the conflist; Debian 12's plugins
// (1.1.1) and go-cni's libcni speak 1.0.0.
const cniVersion = "1.0.0"

// conflist is skiff's CNI network: a bridge that is the pods' gateway, with
// addresses from host-local keeping its reservations under ipamDir, and,
// with hostPorts, portmap to forward them.
//
// NOTE: masquerading and forwarding are not the plugins' (the bridge's
// ipMasq, the firewall plugin): hostRules does both once per bridge. And
// portmap runs only for pods that have hostPorts. Per pod, each of those
// costs several iptables runs under iptables' lock, which made a Job of
// 100 pods 1.4 times slower on the pod network than on the host's (see
// BENCHMARKS.md).
func conflist(bridge, subnet, ipamDir string, hostPorts bool) ([]byte, error) {
	type obj = map[string]any
	plugins := []obj{{
		"type":        "bridge",
		"bridge":      bridge,
		"isGateway":   true,
		"hairpinMode": true,
		"ipam": obj{
			"type":    "host-local",
			"ranges":  [][]obj{{{"subnet": subnet}}},
			"routes":  []obj{{"dst": "0.0.0.0/0"}},
			"dataDir": ipamDir,
		},
	}}
	if hostPorts {
		plugins = append(plugins, obj{"type": "portmap", "capabilities": obj{"portMappings": true}})
	}
	conf := obj{"cniVersion": cniVersion, "name": networkName, "plugins": plugins}
	b, err := json.MarshalIndent(conf, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding CNI config: %w", err)
	}
	return append(b, '\n'), nil
}
