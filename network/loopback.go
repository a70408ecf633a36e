package network

import (
	"fmt"

	cnins "github.com/containernetworking/plugins/pkg/ns"
	"golang.org/x/sys/unix"
)

// loopbackUp brings up lo in the pod's network namespace: all that the
// loopback CNI plugin does on ADD (its DEL only takes lo down again, which
// removing the namespace does as well).
//
// NOTE: done here rather than by the plugin to save two processes per pod
// (ADD and DEL), which count when CPUs are busy (see BENCHMARKS.md).
func loopbackUp(ns interface {
	Do(func(cnins.NetNS) error) error
}) error {
	err := ns.Do(func(cnins.NetNS) error {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		ifr, err := unix.NewIfreq("lo")
		if err != nil {
			return err
		}
		if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
			return err
		}
		ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
		return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
	})
	if err != nil {
		return fmt.Errorf("bringing up lo in the pod's network namespace: %w", err)
	}
	return nil
}
