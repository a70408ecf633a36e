// Command conformance-cleanup removes what the conformance run's skiffd
// leaves on the host once it has stopped, with skiffd's own packages: the
// networks of pods still recorded in its data dir, its bridge, and the
// iptables chains of its pod network and Service portals (skiffd keeps
// them across restarts on purpose; a finished test run must not).
//
//	conformance-cleanup --data-dir DIR --subnet CIDR --bridge NAME
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/skiff-sh/skiff/network"
	"github.com/skiff-sh/skiff/serviceproxy"
)

func main() {
	dataDir := flag.String("data-dir", "", "the stopped skiffd's data dir")
	subnet := flag.String("subnet", "", "its --pod-subnet")
	bridge := flag.String("bridge", "", "its --pod-bridge")
	flag.Parse()
	if *dataDir == "" || *subnet == "" || *bridge == "" {
		flag.Usage()
		os.Exit(2)
	}
	if err := cleanup(context.Background(), *dataDir, *subnet, *bridge); err != nil {
		fmt.Fprintln(os.Stderr, "conformance-cleanup:", err)
		os.Exit(1)
	}
}

// cleanup tears down, in order, the pod networks left, the bridge and the
// host rules; it goes on past an error and reports them all.
func cleanup(ctx context.Context, dataDir, subnet, bridge string) error {
	var errs []error
	n, err := network.New(network.Config{DataDir: filepath.Join(dataDir, "network"), Subnet: subnet, Bridge: bridge})
	if err != nil {
		errs = append(errs, fmt.Errorf("opening the pod network: %w", err))
	} else {
		uids, err := n.List()
		errs = append(errs, err)
		for _, uid := range uids {
			if err := n.Teardown(ctx, uid); err != nil {
				errs = append(errs, fmt.Errorf("removing the network of pod %s: %w", uid, err))
			}
		}
		errs = append(errs, removePooled(ctx, n))
	}
	if _, err := os.Stat(filepath.Join("/sys/class/net", bridge)); err == nil {
		if out, err := exec.CommandContext(ctx, "ip", "link", "del", bridge).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("deleting bridge %s: %v: %s", bridge, err, out))
		}
	}
	errs = append(errs, serviceproxy.Remove(ctx, bridge), network.RemoveHostRules(bridge))
	return errors.Join(errs...)
}

// removePooled removes the sandboxes skiffd made ahead that no pod took
// (its --pod-network-pool): SweepPool marks them, and RunPool, on a
// network configured without a pool, removes them and returns.
func removePooled(ctx context.Context, n *network.Network) error {
	if err := n.SweepPool(); err != nil {
		return fmt.Errorf("listing the sandboxes made ahead: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := n.RunPool(ctx); err != nil || ctx.Err() != nil {
		return fmt.Errorf("removing the sandboxes made ahead: %w", errors.Join(err, ctx.Err()))
	}
	return nil
}
