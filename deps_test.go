package skiff_test

import (
	"os"
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
		"dnsserver is a leaf":       {pkg: "dnsserver", forbidden: []string{module + "/"}},
		"serviceproxy is a leaf":    {pkg: "serviceproxy", forbidden: []string{module + "/"}},
		"kube is a leaf":            {pkg: "kube", forbidden: []string{module + "/"}},
		"authn is a leaf":           {pkg: "authn", forbidden: []string{module + "/"}},
		"rbac is a leaf":            {pkg: "rbac", forbidden: []string{module + "/"}},
		"supervisor is a leaf":      {pkg: "runtime/supervisor", forbidden: []string{module + "/"}},
		"api never sees containerd": {pkg: "api", forbidden: []string{"github.com/containerd/", module + "/runtime", module + "/daemon"}},
		"controller skeleton uses the store only": {pkg: "daemon/controller", forbidden: []string{
			module + "/api", module + "/runtime", module + "/logs", module + "/network", "github.com/containerd/"}},
		"job controller uses the store only": {pkg: "daemon/jobcontroller", forbidden: []string{
			module + "/api", module + "/runtime", module + "/logs", "github.com/containerd/"}},
		"cronjob controller uses the store only": {pkg: "daemon/cronjobcontroller", forbidden: []string{
			module + "/api", module + "/runtime", module + "/logs", "github.com/containerd/"}},
		"garbage collector uses the store only": {pkg: "daemon/garbagecollector", forbidden: []string{
			module + "/api", module + "/runtime", module + "/logs", "github.com/containerd/"}},
		"event recorder uses the store only": {pkg: "daemon/events", forbidden: []string{
			module + "/api", module + "/runtime", module + "/logs", "github.com/containerd/"}},
		"rbac controller uses the store only": {pkg: "daemon/rbaccontroller", forbidden: []string{
			module + "/api", module + "/runtime", module + "/logs", module + "/network", "github.com/containerd/"}},
		"namespace controller uses the store only": {pkg: "daemon/namespacecontroller", forbidden: []string{
			module + "/api", module + "/runtime", module + "/logs", "github.com/containerd/"}},
		"service account tokens read the store only": {pkg: "serviceaccount", forbidden: []string{
			module + "/api", module + "/daemon", module + "/runtime", module + "/logs", "github.com/containerd/"}},
		"serviceaccount controller uses the store only": {pkg: "daemon/serviceaccountcontroller", forbidden: []string{
			module + "/api", module + "/runtime", module + "/logs", module + "/network", "github.com/containerd/"}},
		"pod worker never imports api": {pkg: "kubelet/podworker", forbidden: []string{module + "/api"}},
		"service proxy reads the store only": {pkg: "daemon/proxier", forbidden: []string{
			module + "/api", module + "/runtime", module + "/logs", module + "/network", "github.com/containerd/"}},
		"cluster dns reads the store only": {pkg: "daemon/clusterdns", forbidden: []string{
			module + "/api", module + "/runtime", module + "/logs", module + "/network", "github.com/containerd/"}},
		"endpoints controller uses the store only": {pkg: "daemon/endpointscontroller", forbidden: []string{
			module + "/api", module + "/runtime", module + "/logs", module + "/network", "github.com/containerd/"}},
		// The skiff CLI is a client like kubectl: it runs on laptops and
		// talks to remote nodes, so it links no part of the daemon.
		"skiff CLI is a client only": {pkg: "cmd/skiff", forbidden: []string{
			module + "/api", module + "/daemon", module + "/db", module + "/runtime", module + "/logs",
			module + "/network", module + "/dnsserver", module + "/serviceproxy", "github.com/containerd/", "go.etcd.io/bbolt"}},
		"pki is a leaf":                {pkg: "pki", forbidden: []string{module + "/"}},
		"build info is a leaf":         {pkg: "internal/buildinfo", forbidden: []string{module + "/"}},
		"sdnotify is a leaf":           {pkg: "internal/sdnotify", forbidden: []string{module + "/"}},
		"skiffd links no test helpers": {pkg: "cmd/skiffd", forbidden: []string{module + "/network/nettest", module + "/runtime/runtimetest"}},

		// The kubelet's tree: api reaches it through its Streams interface
		// only, whose words (kubelet/streaming) are a leaf; nothing in it
		// imports api; its pure parts are Kubernetes' rules alone, with no
		// runtime, store or network.
		"api reaches the kubelet through Streams only": {pkg: "api", forbidden: []string{module + "/kubelet"},
			allowed: []string{module + "/kubelet/streaming"}},
		"the kubelet never imports api": {pkg: "kubelet", forbidden: []string{module + "/api"}},
		"the sampler never imports api": {pkg: "kubelet/stats", forbidden: []string{module + "/api"}},
		"kubelet/streaming is a leaf":   {pkg: "kubelet/streaming", forbidden: []string{module + "/"}, allowed: []string{module + "/logs"}},
		"kubelet/admission is pure":     {pkg: "kubelet/admission", forbidden: []string{module + "/"}, allowed: []string{module + "/kube"}},
		"kubelet/prober is pure":        {pkg: "kubelet/prober", forbidden: []string{module + "/"}},
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

// TestLogDriverDependencies keeps the log driver small: one runs beside
// every container, so all it links is paid for per container. It may use
// the standard library and the logs package only, and not the heavy parts
// of the standard library either (the network stack, HTTP, JSON, slog,
// crypto).
func TestLogDriverDependencies(t *testing.T) {
	const pkg = "./cmd/skiff-log-driver"
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}} {{.Standard}}", pkg).Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	allowed := []string{module + "/logs", module + "/cmd/skiff-log-driver"}
	// A trailing / forbids the packages under a path too.
	heavy := []string{"net", "net/http", "net/http/", "encoding/json", "log/slog", "crypto", "crypto/", "os/exec", "text/template"}
	for line := range strings.Lines(string(out)) {
		dep, standard, _ := strings.Cut(strings.TrimSpace(line), " ")
		if standard != "true" && !slices.Contains(allowed, dep) {
			t.Errorf("the log driver imports %s", dep)
		}
		for _, h := range heavy {
			if dep == h || strings.HasSuffix(h, "/") && strings.HasPrefix(dep, h) {
				t.Errorf("the log driver imports %s", dep)
			}
		}
	}
}

// TestSkiffdLinksNoPlugin: skiffd as the Makefile builds it (SKIFFD_TAGS)
// does not link Go's plugin package, which would export every symbol and
// link libc dynamically: 17 MB more binary, resident at every start.
func TestSkiffdLinksNoPlugin(t *testing.T) {
	makefile, err := os.ReadFile("Makefile")
	if err != nil {
		t.Fatal(err)
	}
	var tags string
	for line := range strings.Lines(string(makefile)) {
		if v, ok := strings.CutPrefix(line, "SKIFFD_TAGS :="); ok {
			tags = strings.TrimSpace(v)
		}
	}
	if tags == "" {
		t.Fatal("the Makefile sets no SKIFFD_TAGS")
	}
	out, err := exec.Command("go", "list", "-deps", "-tags", tags, "./cmd/skiffd").Output()
	if err != nil {
		t.Fatalf("go list -deps ./cmd/skiffd: %v", err)
	}
	if slices.Contains(strings.Fields(string(out)), "plugin") {
		t.Errorf("skiffd built with tags %q links the plugin package", tags)
	}
}
