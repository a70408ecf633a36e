// Command skiff is the client of a skiff node for a developer's box.
// `skiff run` submits a Job (a manifest, or one built from an image and a
// command), streams every pod's logs as they appear, shows how far the Job
// is on a terminal, and exits with its outcome. It talks to the API as any
// client does — the unix socket, a URL or a kubeconfig — so it works
// against a remote node, or any Kubernetes cluster, too. It links none of
// skiffd's packages.
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/skiff-sh/skiff/internal/buildinfo"
)

// Exit codes.
const (
	exitComplete = 0 // the Job completed
	exitFailed   = 1 // the Job failed (or was deleted before it finished)
	exitUsage    = 2 // bad usage, or the API refused or could not be reached
	// An interruption exits with 128 + the signal's number, as a shell
	// reports a command a signal ended: 130 for Ctrl-C, 141 when standard
	// output is a pipe whose reader went away (SIGPIPE's number).
)

const usage = `skiff runs Kubernetes Jobs on a skiff node (or any Kubernetes API) and follows them.

Usage:
  skiff run [options] -f JOB.yaml           submit a Job manifest ("-" reads standard input)
  skiff run [options] --image IMAGE [--] [COMMAND [ARGS...]]
                                            submit a Job running IMAGE
  skiff version                             print skiff's version

skiff run streams every pod's logs prefixed with [pod/container], shows
"3/10 succeeded, 1 failed, 2 running" on a terminal, and exits 0 when the
Job completes, 1 when it fails (with its reason and message), 2 on bad
usage or an API error. Ctrl-C asks whether to delete the Job; --rm deletes
it at the end. Run "skiff run --help" for the options.
`

func main() {
	os.Exit(skiffMain(os.Args[1:], stdio{in: os.Stdin, out: os.Stdout, err: os.Stderr}))
}

// stdio is the command's standard streams.
type stdio struct {
	in       io.Reader
	out, err io.Writer
}

func skiffMain(args []string, io stdio) int {
	if len(args) == 0 {
		fmt.Fprint(io.err, usage)
		return exitUsage
	}
	switch args[0] {
	case "run":
		return runCommand(args[1:], io)
	case "version", "--version", "-version":
		fmt.Fprint(io.out, buildinfo.String("skiff"))
		return 0
	case "help", "--help", "-help", "-h":
		fmt.Fprint(io.out, usage)
		return 0
	}
	fmt.Fprintf(io.err, "skiff: unknown command %q\n\n%s", args[0], usage)
	return exitUsage
}
