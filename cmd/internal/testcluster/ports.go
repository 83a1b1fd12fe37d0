package testcluster

import (
	"fmt"
	"net"
	"strconv"
)

// FreePorts returns n distinct ports free for both TCP and UDP on
// 127.0.0.1 (gossip uses both on its port). They are released before
// use, so another process could take one meanwhile; on loopback that is
// rare, and shows as a node failing to start.
func FreePorts(n int) ([]int, error) {
	var ports []int
	var held []interface{ Close() error }
	defer func() {
		for _, h := range held {
			h.Close()
		}
	}()
	for attempt := 0; len(ports) < n && attempt < 100; attempt++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("testcluster: free port: %w", err)
		}
		held = append(held, ln)
		port := ln.Addr().(*net.TCPAddr).Port
		pc, err := net.ListenPacket("udp", Loopback(port))
		if err != nil {
			continue
		}
		held = append(held, pc)
		ports = append(ports, port)
	}
	if len(ports) < n {
		return nil, fmt.Errorf("testcluster: found %d free TCP+UDP ports of %d", len(ports), n)
	}
	return ports, nil
}

// FreeAddrs returns a free address on 127.0.0.1 for each of nodes, by
// node ("127.0.0.1:<port>"), as FreePorts does.
func FreeAddrs(nodes []string) (map[string]string, error) {
	ports, err := FreePorts(len(nodes))
	if err != nil {
		return nil, err
	}
	addrs := map[string]string{}
	for i, n := range nodes {
		addrs[n] = Loopback(ports[i])
	}
	return addrs, nil
}

// Loopback is the address of port on 127.0.0.1, "127.0.0.1:<port>".
func Loopback(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }
