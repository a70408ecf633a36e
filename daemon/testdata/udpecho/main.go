// Command udpecho is a pod's UDP server for the Service tests: it answers
// every datagram on the port its one argument names with the pod's
// hostname.
package main

import (
	"fmt"
	"net"
	"os"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: udpecho PORT")
		os.Exit(2)
	}
	name, err := os.Hostname()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	pc, err := net.ListenPacket("udp4", ":"+os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	buf := make([]byte, 512)
	for {
		_, from, err := pc.ReadFrom(buf)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if _, err := pc.WriteTo([]byte(name), from); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}
}
