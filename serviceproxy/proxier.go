package serviceproxy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
)

// Config configures a Proxier.
type Config struct {
	// Bridge is the pod network's bridge; the chains are named after it.
	Bridge string
	// PodCIDR is the pod network: Service traffic from elsewhere (the
	// host, other machines) is masqueraded.
	PodCIDR string
	// MasqueradeAll masquerades all Service traffic, pod to pod included:
	// needed when bridged traffic does not pass iptables (no
	// br_netfilter), or replies between pods would skip the reverse NAT.
	MasqueradeAll bool
}

// Proxier writes the rules. Its methods may be called from several
// goroutines; syncs run one at a time.
type Proxier struct {
	cfg    Config
	chains chains
	mu     sync.Mutex
}

// New returns a Proxier, after checking that iptables is installed.
func New(cfg Config) (*Proxier, error) {
	for _, bin := range []string{"iptables", "iptables-save", "iptables-restore"} {
		if _, err := exec.LookPath(bin); err != nil {
			return nil, fmt.Errorf("service proxy: %s not found (install iptables): %w", bin, err)
		}
	}
	return &Proxier{cfg: cfg, chains: chainsFor(cfg.Bridge)}, nil
}

// Sync makes the rules those of services, in one iptables-restore batch
// (the chains of this pod network only), and the jumps into them; then it
// deletes the conntrack entries of UDP flows the rules no longer send
// where they go (conntrack.go).
func (p *Proxier) Sync(ctx context.Context, services []Service) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	existing, err := p.ownChains(ctx, "nat")
	if err != nil {
		return err
	}
	data := rules(p.chains, p.cfg.PodCIDR, p.cfg.MasqueradeAll, services, existing)
	if err := restore(ctx, data); err != nil {
		return err
	}
	if err := p.ensureJumps(ctx); err != nil {
		return err
	}
	return forgetStaleUDP(p.cfg.PodCIDR, services)
}

// ownChains are the chains of this pod network in table.
func (p *Proxier) ownChains(ctx context.Context, table string) ([]string, error) {
	out, err := run(ctx, nil, "iptables-save", "-t", table)
	if err != nil {
		return nil, err
	}
	var list []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if name, ok := strings.CutPrefix(line, ":"); ok {
			name, _, _ = strings.Cut(name, " ")
			if p.chains.owns(name) {
				list = append(list, name)
			}
		}
	}
	return list, sc.Err()
}

// ensureJumps inserts the jumps from the built-in chains that are missing.
func (p *Proxier) ensureJumps(ctx context.Context) error {
	for _, j := range jumps(p.chains, p.cfg.Bridge) {
		args := splitRule(j[2])
		if _, err := run(ctx, nil, "iptables", append([]string{"-w", "5", "-t", j[0], "-C", j[1]}, args...)...); err == nil {
			continue
		}
		if _, err := run(ctx, nil, "iptables", append([]string{"-w", "5", "-t", j[0], "-I", j[1]}, args...)...); err != nil {
			return err
		}
	}
	return nil
}

// Remove deletes the jumps and the chains of the pod network of bridge:
// what a test leaves behind, or an uninstall. Missing ones are no error.
func Remove(ctx context.Context, bridge string) error {
	c := chainsFor(bridge)
	var errs []error
	for _, j := range jumps(c, bridge) {
		args := splitRule(j[2])
		for {
			if _, err := run(ctx, nil, "iptables", append([]string{"-w", "5", "-t", j[0], "-D", j[1]}, args...)...); err != nil {
				break // no (more) such rule
			}
		}
	}
	for _, table := range []string{"nat", "filter"} {
		p := &Proxier{chains: c}
		own, err := p.ownChains(ctx, table)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if len(own) == 0 {
			continue
		}
		var b bytes.Buffer
		fmt.Fprintf(&b, "*%s\n", table)
		for _, ch := range own {
			fmt.Fprintf(&b, ":%s - [0:0]\n", ch)
		}
		for _, ch := range own {
			fmt.Fprintf(&b, "-X %s\n", ch)
		}
		b.WriteString("COMMIT\n")
		errs = append(errs, restore(ctx, b.Bytes()))
	}
	return errors.Join(errs...)
}

// restore loads data with iptables-restore, leaving the other chains alone.
func restore(ctx context.Context, data []byte) error {
	_, err := run(ctx, data, "iptables-restore", "-w", "5", "--noflush")
	return err
}

func run(ctx context.Context, stdin []byte, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %s", name, err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// splitRule splits a rule into arguments, keeping quoted comments whole.
func splitRule(rule string) []string {
	var args []string
	var cur strings.Builder
	quoted := false
	for _, r := range rule {
		switch {
		case r == '"':
			quoted = !quoted
		case r == ' ' && !quoted:
			if cur.Len() > 0 {
				args = append(args, cur.String())
				cur.Reset()
			}
		default:
			cur.WriteRune(r)
		}
	}
	if cur.Len() > 0 {
		args = append(args, cur.String())
	}
	return args
}

// EnableBridgeNetfilter makes bridged traffic pass iptables
// (net.bridge.bridge-nf-call-iptables=1, as kube-proxy requires) and
// reports whether it does: false when br_netfilter is not loaded, in which
// case Config.MasqueradeAll keeps pod-to-pod Service traffic working.
func EnableBridgeNetfilter() bool {
	const path = "/proc/sys/net/bridge/bridge-nf-call-iptables"
	data, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	if strings.TrimSpace(string(data)) == "1" {
		return true
	}
	return os.WriteFile(path, []byte("1"), 0o644) == nil
}
