package kube

import "testing"

func TestContainerID(t *testing.T) {
	if got := ContainerID("0123abcd"); got != "containerd://0123abcd" {
		t.Errorf("ContainerID = %q", got)
	}
	tests := map[string]struct {
		in     string
		wantID string
		wantOK bool
	}{
		"containerd":      {"containerd://0123abcd", "0123abcd", true},
		"round trip":      {ContainerID("x-1"), "x-1", true},
		"empty":           {"", "", false},
		"scheme only":     {"containerd://", "", false},
		"another runtime": {"docker://0123abcd", "", false},
		"bare id":         {"0123abcd", "", false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			id, ok := ParseContainerID(tc.in)
			if ok != tc.wantOK || (ok && id != tc.wantID) {
				t.Errorf("ParseContainerID(%q) = %q, %t; want %q, %t", tc.in, id, ok, tc.wantID, tc.wantOK)
			}
		})
	}
}
