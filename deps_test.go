package skiff_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/skiff-sh/skiff"

// TestDependencyDirection keeps the package layout of DESIGN.md true: the
// leaves import no skiff package, api never sees containerd, and the
// controllers talk to the store only.
func TestDependencyDirection(t *testing.T) {
	tests := map[string]struct {
		pkg       string
		forbidden []string
		allowed   []string // exceptions to forbidden
	}{
		"db is a leaf":        {pkg: "db", forbidden: []string{module + "/"}},
		"logs is a leaf":      {pkg: "logs", forbidden: []string{module + "/"}},
		"failpoint is a leaf": {pkg: "failpoint", forbidden: []string{module + "/"}},
		// NOTE: failpoint (empty outside test builds) is the one skiff
		// package runtime may import: its lifecycle windows are in runtime.
		"runtime is a leaf":         {pkg: "runtime", forbidden: []string{module + "/"}, allowed: []string{module + "/failpoint"}},
		"network is a leaf":         {pkg: "network", forbidden: []string{module + "/"}},
		"supervisor is a leaf":      {pkg: "runtime/supervisor", forbidden: []string{module + "/"}},
		"api never sees containerd": {pkg: "api", forbidden: []string{"github.com/containerd/", module + "/runtime", module + "/daemon"}},
		"job controller uses the store only": {pkg: "daemon/jobcontroller", forbidden: []string{
			module + "/api", module + "/runtime", module + "/logs", "github.com/containerd/"}},
		"garbage collector uses the store only": {pkg: "daemon/garbagecollector", forbidden: []string{
			module + "/api", module + "/runtime", module + "/logs", "github.com/containerd/"}},
		"event recorder uses the store only": {pkg: "daemon/events", forbidden: []string{
			module + "/api", module + "/runtime", module + "/logs", "github.com/containerd/"}},
		"namespace controller uses the store only": {pkg: "daemon/namespacecontroller", forbidden: []string{
			module + "/api", module + "/runtime", module + "/logs", "github.com/containerd/"}},
		"pod worker never imports api": {pkg: "daemon/podworker", forbidden: []string{module + "/api"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			out, err := exec.Command("go", "list", "-deps", "./"+tc.pkg).Output()
			if err != nil {
				t.Fatalf("go list -deps ./%s: %v", tc.pkg, err)
			}
			for _, dep := range strings.Fields(string(out)) {
				if dep == module+"/"+tc.pkg || slices.Contains(tc.allowed, dep) {
					continue
				}
				for _, f := range tc.forbidden {
					if dep == strings.TrimSuffix(f, "/") || strings.HasPrefix(dep, f) {
						t.Errorf("%s imports %s", tc.pkg, dep)
					}
				}
			}
		})
	}
}
