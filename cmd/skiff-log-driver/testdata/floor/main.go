// Command floor is the least a log driver written in Go can be, for
// BenchmarkDriverProcess to measure beside skiff-log-driver: it locks the
// file named by its second argument, signals readiness and copies fd 3 into
// the file as it comes, with no framing, rotation or accounting.
package main

import (
	"io"
	"os"
	"syscall"
)

func main() {
	f, err := os.OpenFile(os.Args[2], os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		os.Exit(1)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		os.Exit(1)
	}
	os.NewFile(5, "ready").Close()
	if _, err := io.Copy(f, os.NewFile(3, "stdout")); err != nil {
		os.Exit(1)
	}
}
