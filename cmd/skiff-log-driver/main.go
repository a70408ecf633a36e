// Command skiff-log-driver writes one container's stdout and stderr to its
// CRI-format log file. skiffd does not run it: containerd's shim does, once
// per container, as the binary logger of the task's log URI —
// `skiff-log-driver log-driver <arg>` with the container's output on fds 3
// and 4 and a ready pipe on fd 5 (logs.RunDriver has the details).
//
// It lives as long as its container, so every byte it maps is paid for once
// per running container: it links the logs package's driver and the standard
// library only (deps_test.go keeps it so). It is installed beside skiffd,
// which looks for it there.
package main

import (
	"fmt"
	"os"

	"github.com/skiff-sh/skiff/logs"
)

func main() {
	if len(os.Args) != 3 || os.Args[1] != logs.DriverArg {
		fmt.Fprintf(os.Stderr, "usage: %s %s PATH|URL\n"+
			"containerd's shim runs it for each container skiffd starts; it is not run by hand\n",
			os.Args[0], logs.DriverArg)
		os.Exit(2)
	}
	if err := logs.RunDriver(os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "skiff-log-driver:", err)
		os.Exit(1)
	}
}
