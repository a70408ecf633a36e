package network

import (
	"os"
	"path/filepath"
	"testing"
)

// TestTCPSockets: a namespace's TCP sockets are its sockstat counters:
// in use and in TIME_WAIT over IPv4, in use over IPv6; the global ones
// (orphan, alloc, mem) do not count.
func TestTCPSockets(t *testing.T) {
	const empty4 = "sockets: used 12\nTCP: inuse 0 orphan 3 tw 0 alloc 40 mem 9\nUDP: inuse 2 mem 1\n"
	const empty6 = "TCP6: inuse 0\nUDP6: inuse 1\n"
	tests := []struct {
		name                string
		sockstat, sockstat6 string // "" = absent
		want                int
		wantErr             bool
	}{
		{name: "none (the global counters and UDP do not count)", sockstat: empty4, sockstat6: empty6, want: 0},
		{name: "listening or connected over IPv4", sockstat: "TCP: inuse 2 orphan 0 tw 0 alloc 2 mem 0\n", sockstat6: empty6, want: 2},
		{name: "TIME_WAIT", sockstat: "TCP: inuse 0 orphan 0 tw 1 alloc 1 mem 0\n", sockstat6: empty6, want: 1},
		{name: "over IPv6", sockstat: empty4, sockstat6: "TCP6: inuse 3\n", want: 3},
		{name: "a kernel without IPv6", sockstat: empty4, want: 0},
		{name: "no sockstat", sockstat6: empty6, wantErr: true},
		{name: "no TCP line", sockstat: "sockets: used 1\n", sockstat6: empty6, wantErr: true},
		{name: "a count that is no number", sockstat: "TCP: inuse x orphan 0 tw 0 alloc 0 mem 0\n", sockstat6: empty6, wantErr: true},
		{name: "a count without its value", sockstat: "TCP: inuse 0 orphan\n", sockstat6: empty6, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range map[string]string{"sockstat": tc.sockstat, "sockstat6": tc.sockstat6} {
				if content == "" {
					continue
				}
				if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := tcpSockets(dir)
			if (err != nil) != tc.wantErr {
				t.Fatalf("tcpSockets: %d, %v; want an error: %v", got, err, tc.wantErr)
			}
			if !tc.wantErr && got != tc.want {
				t.Errorf("tcpSockets = %d, want %d", got, tc.want)
			}
		})
	}
}
