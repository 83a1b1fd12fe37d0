package cluster

import (
	"net"
	"testing"
)

func TestAdvertiseAddr(t *testing.T) {
	tests := []struct {
		host  string
		bound net.Addr
		want  string
	}{
		{"", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 41234}, "127.0.0.1:41234"},
		{"", &net.TCPAddr{IP: net.IPv4zero, Port: 8300}, "127.0.0.1:8300"},
		{"", &net.TCPAddr{IP: net.IPv6unspecified, Port: 8300}, "127.0.0.1:8300"},
		{"", &net.TCPAddr{IP: net.ParseIP("10.1.2.3"), Port: 8300}, "10.1.2.3:8300"},
		{"arbor-0.arbor.default.svc", &net.TCPAddr{IP: net.IPv4zero, Port: 8300}, "arbor-0.arbor.default.svc:8300"},
		{"::1", &net.TCPAddr{IP: net.IPv6loopback, Port: 9}, "[::1]:9"},
	}
	for _, tt := range tests {
		if got := advertiseAddr(tt.host, tt.bound).String(); got != tt.want {
			t.Errorf("advertiseAddr(%q, %v) = %q, want %q", tt.host, tt.bound, got, tt.want)
		}
	}
}
