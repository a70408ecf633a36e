package network

import (
	"encoding/json"
	"fmt"
)

// cniVersion is the CNI spec version of the conflist; Debian 12's plugins
// (1.1.1) and go-cni's libcni speak 1.0.0.
const cniVersion = "1.0.0"

// conflist is skiff's CNI network: a bridge that is the pods' gateway and
// masquerades their traffic leaving the node, addresses from host-local
// with its reservations under ipamDir, hostPort through portmap, and the
// firewall plugin so that forwarding works when the host's FORWARD policy
// is DROP (as Docker leaves it).
func conflist(bridge, subnet, ipamDir string) ([]byte, error) {
	type obj = map[string]any
	conf := obj{
		"cniVersion": cniVersion,
		"name":       networkName,
		"plugins": []obj{
			{
				"type":        "bridge",
				"bridge":      bridge,
				"isGateway":   true,
				"ipMasq":      true,
				"hairpinMode": true,
				"ipam": obj{
					"type":    "host-local",
					"ranges":  [][]obj{{{"subnet": subnet}}},
					"routes":  []obj{{"dst": "0.0.0.0/0"}},
					"dataDir": ipamDir,
				},
			},
			{"type": "portmap", "capabilities": obj{"portMappings": true}},
			{"type": "firewall"},
		},
	}
	b, err := json.MarshalIndent(conf, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding CNI config: %w", err)
	}
	return append(b, '\n'), nil
}
