package kubelet

import (
	"bufio"
	"fmt"
	"os"
	goruntime "runtime"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// Node describes this machine, the one node of skiff.
type Node struct {
	Name   string
	HostIP string // the InternalIP
	CPU    resource.Quantity
	Memory resource.Quantity
}

// DescribeNode reads this machine's name (name, or the hostname when
// empty), address, CPUs and memory.
func DescribeNode(name string) (Node, error) {
	if name == "" {
		host, err := os.Hostname()
		if err != nil {
			return Node{}, fmt.Errorf("reading hostname: %w", err)
		}
		name = strings.ToLower(host)
	}
	mem, err := memTotal()
	if err != nil {
		return Node{}, err
	}
	return Node{
		Name:   name,
		HostIP: hostIP(),
		CPU:    *resource.NewQuantity(int64(goruntime.NumCPU()), resource.DecimalSI),
		Memory: *resource.NewQuantity(mem, resource.BinarySI),
	}, nil
}

// hostIP is the node's InternalIP: the address of the interface that
// carries the default route, as the kubelet picks it when it has no
// --node-ip (ChooseHostInterface), so that the pod network's bridges never
// stand in for the node; loopback when there is none.
func hostIP() string {
	if ip, err := utilnet.ChooseHostInterface(); err == nil {
		return ip.String()
	}
	return "127.0.0.1"
}

func memTotal() (int64, error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, fmt.Errorf("reading memory size: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("parsing MemTotal: %w", err)
			}
			return kb * 1024, nil
		}
	}
	return 0, fmt.Errorf("no MemTotal in /proc/meminfo")
}
