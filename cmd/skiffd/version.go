package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strings"
	"time"

	"github.com/skiff-sh/skiff/internal/buildinfo"
	"github.com/skiff-sh/skiff/runtime"
)

// versionCommand is the first argument of `skiffd version`.
const versionCommand = "version"

// containerdVersionTimeout bounds the question to containerd: the version
// must print at once when containerd is absent or hung.
const containerdVersionTimeout = 2 * time.Second

// runVersion runs `skiffd version [--containerd-address SOCK]`.
func runVersion(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("skiffd version", flag.ContinueOnError)
	address := fs.String("containerd-address", "/run/containerd/containerd.sock", "containerd socket whose version to report")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	return printVersion(ctx, stdout, *address)
}

// printVersion writes skiffd's build and the containerd it would use: the
// one answering at address, else the binary it would start. Neither root
// nor containerd is needed: what cannot be asked is said so.
func printVersion(ctx context.Context, w io.Writer, address string) error {
	_, err := fmt.Fprintf(w, "%s  containerd:  %s\n", buildinfo.String("skiffd"), containerdVersion(ctx, address))
	return err
}

func containerdVersion(ctx context.Context, address string) string {
	// NOTE: a plain dial first: its error (no such file, permission denied)
	// says why in a few words, where gRPC's retries end in a timeout.
	conn, err := net.DialTimeout("unix", address, containerdVersionTimeout)
	var v string
	if err == nil {
		conn.Close()
		v, err = runtime.ServerVersion(ctx, address, containerdVersionTimeout)
	}
	if err == nil {
		return v + " (at " + address + ")"
	}
	reason := err.Error()
	if out, berr := exec.CommandContext(ctx, "containerd", "--version").Output(); berr == nil {
		// NOTE: "containerd github.com/containerd/containerd 1.6.20~ds1 …":
		// the version is the third word.
		if f := strings.Fields(string(out)); len(f) >= 3 {
			return fmt.Sprintf("%s on PATH, which skiffd would start (none answers: %s)", f[2], reason)
		}
	}
	return "unknown (" + reason + ")"
}
