package network

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/containerd/containerd/pkg/netns"
)

// state is what sandbox.json records of a pod's sandbox once Setup has
// finished: its presence means the sandbox is complete.
type state struct {
	HostNetwork bool          `json:"hostNetwork,omitempty"`
	NetNSPath   string        `json:"netns,omitempty"`
	IP          string        `json:"ip"`
	Ports       []PortMapping `json:"ports,omitempty"`
	// CNIID is the container ID the CNI plugins know the sandbox by, when
	// it is not the pod's UID: a sandbox made ahead (pool.go), whose
	// namespace is in netns/<CNIID>/.
	CNIID string `json:"cniID,omitempty"`
}

// cniID is the container ID CNI knows the sandbox of pod uid by.
func (st state) cniID(uid string) string {
	if st.CNIID != "" {
		return st.CNIID
	}
	return uid
}

func (n *Network) statePath(uid string) string {
	return filepath.Join(n.podDir(uid), "sandbox.json")
}

func (n *Network) readState(uid string) (state, bool, error) {
	data, err := os.ReadFile(n.statePath(uid))
	if errors.Is(err, os.ErrNotExist) {
		return state{}, false, nil
	}
	if err != nil {
		return state{}, false, fmt.Errorf("reading sandbox state: %w", err)
	}
	var st state
	if err := json.Unmarshal(data, &st); err != nil {
		return state{}, false, fmt.Errorf("decoding %s: %w", n.statePath(uid), err)
	}
	return st, true, nil
}

func (n *Network) writeState(uid string, st state) error {
	data, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("encoding sandbox state: %w", err)
	}
	if err := writeFileAtomic(n.statePath(uid), data, 0o600); err != nil {
		return fmt.Errorf("writing sandbox state: %w", err)
	}
	return nil
}

func (n *Network) sandbox(uid string, st state) Sandbox {
	sb := Sandbox{
		NetNSPath:      st.NetNSPath,
		IP:             st.IP,
		HostsPath:      filepath.Join(n.podDir(uid), "hosts"),
		ResolvConfPath: filepath.Join(n.podDir(uid), "resolv.conf"),
	}
	// NOTE: a sandbox an older skiffd set up has no hostname file; its
	// containers go on without /etc/hostname rather than fail to mount it.
	hostname := filepath.Join(n.podDir(uid), "hostname")
	if b, err := os.ReadFile(hostname); err == nil {
		sb.HostnamePath = hostname
		if !st.HostNetwork {
			sb.Hostname = strings.TrimSuffix(string(b), "\n")
		}
	}
	return sb
}

// Find returns the pod's sandbox if Setup completed it and its network
// namespace still exists (it does not survive a reboot), for recovery
// after a restart of skiffd. ok is false when there is none.
func (n *Network) Find(uid string) (sb Sandbox, ok bool, err error) {
	if err := validUID(uid); err != nil {
		return Sandbox{}, false, err
	}
	st, ok, err := n.readState(uid)
	if err != nil || !ok {
		return Sandbox{}, false, err
	}
	if !st.HostNetwork {
		closed, err := netns.LoadNetNS(st.NetNSPath).Closed()
		if err != nil {
			return Sandbox{}, false, fmt.Errorf("checking network namespace of pod %s: %w", uid, err)
		}
		if closed {
			return Sandbox{}, false, nil
		}
	}
	return n.sandbox(uid, st), true, nil
}

// List returns the UIDs of the pods that have (part of) a sandbox, so
// that recovery can tear down those of pods deleted while skiffd was down.
// The pool's sandboxes are not pods'.
func (n *Network) List() ([]string, error) {
	return n.listDirs(func(name string) bool { return !isPoolID(name) })
}

// validUID refuses UIDs that would escape the data dir.
func validUID(uid string) error {
	if uid == "" || uid == "." || uid == ".." || filepath.Base(uid) != uid {
		return fmt.Errorf("network: invalid pod UID %q", uid)
	}
	return nil
}
