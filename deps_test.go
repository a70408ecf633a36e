package skiff_test

import (
	"os/exec"
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
	}{
		"db is a leaf":              {"db", []string{module + "/"}},
		"logs is a leaf":            {"logs", []string{module + "/"}},
		"runtime is a leaf":         {"runtime", []string{module + "/"}},
		"network is a leaf":         {"network", []string{module + "/"}},
		"dnsserver is a leaf":       {"dnsserver", []string{module + "/"}},
		"serviceproxy is a leaf":    {"serviceproxy", []string{module + "/"}},
		"kube is a leaf":            {"kube", []string{module + "/"}},
		"supervisor is a leaf":      {"runtime/supervisor", []string{module + "/"}},
		"api never sees containerd": {"api", []string{"github.com/containerd/", module + "/runtime", module + "/daemon"}},
		"controller skeleton uses the store only": {"daemon/controller", []string{
			module + "/api", module + "/runtime", module + "/logs", module + "/network", "github.com/containerd/"}},
		"job controller uses the store only": {"daemon/jobcontroller", []string{
			module + "/api", module + "/runtime", module + "/logs", "github.com/containerd/"}},
		"garbage collector uses the store only": {"daemon/garbagecollector", []string{
			module + "/api", module + "/runtime", module + "/logs", "github.com/containerd/"}},
		"event recorder uses the store only": {"daemon/events", []string{
			module + "/api", module + "/runtime", module + "/logs", "github.com/containerd/"}},
		"namespace controller uses the store only": {"daemon/namespacecontroller", []string{
			module + "/api", module + "/runtime", module + "/logs", "github.com/containerd/"}},
		"pod worker never imports api": {"daemon/podworker", []string{module + "/api"}},
		"service proxy reads the store only": {"daemon/proxier", []string{
			module + "/api", module + "/runtime", module + "/logs", module + "/network", "github.com/containerd/"}},
		"cluster dns reads the store only": {"daemon/clusterdns", []string{
			module + "/api", module + "/runtime", module + "/logs", module + "/network", "github.com/containerd/"}},
		"endpoints controller uses the store only": {"daemon/endpointscontroller", []string{
			module + "/api", module + "/runtime", module + "/logs", module + "/network", "github.com/containerd/"}},
		// The skiff CLI is a client like kubectl: it runs on laptops and
		// talks to remote nodes, so it links no part of the daemon.
		"skiff CLI is a client only": {"cmd/skiff", []string{
			module + "/api", module + "/daemon", module + "/db", module + "/runtime", module + "/logs",
			module + "/network", module + "/dnsserver", module + "/serviceproxy", "github.com/containerd/", "go.etcd.io/bbolt"}},
		"build info is a leaf": {"internal/buildinfo", []string{module + "/"}},
		"sdnotify is a leaf":   {"internal/sdnotify", []string{module + "/"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			out, err := exec.Command("go", "list", "-deps", "./"+tc.pkg).Output()
			if err != nil {
				t.Fatalf("go list -deps ./%s: %v", tc.pkg, err)
			}
			for _, dep := range strings.Fields(string(out)) {
				if dep == module+"/"+tc.pkg {
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
