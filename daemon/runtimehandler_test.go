package daemon

import "testing"

func TestParseRuntimeHandler(t *testing.T) {
	tests := map[string]struct {
		in, wantName, wantType string
		wantErr                bool
	}{
		"handler":           {in: "test-handler=io.containerd.runc.v2", wantName: "test-handler", wantType: "io.containerd.runc.v2"},
		"other shim":        {in: "kata=io.containerd.kata.v2", wantName: "kata", wantType: "io.containerd.kata.v2"},
		"no runtime":        {in: "kata=", wantErr: true},
		"no equals":         {in: "kata", wantErr: true},
		"not a DNS label":   {in: "Kata_1=io.containerd.kata.v2", wantErr: true},
		"dots in the label": {in: "a.b=io.containerd.runc.v2", wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			name, runtimeType, err := ParseRuntimeHandler(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want error %v", err, tc.wantErr)
			}
			if name != tc.wantName || runtimeType != tc.wantType {
				t.Errorf("got %q=%q, want %q=%q", name, runtimeType, tc.wantName, tc.wantType)
			}
		})
	}
}
