//go:build integration

package daemon_test

import (
	"os"
	"path/filepath"
	"testing"
)

// kubectlVersions are the kubectl binaries of this machine, by the minor
// version they are (the gcloud SDK's per-version binaries and Debian's).
var kubectlVersions = map[string]struct {
	path  string
	minor int
}{
	"1.27":         {"/usr/lib/google-cloud-sdk/bin/kubectl.1.27", 27},
	"1.28":         {"/usr/lib/google-cloud-sdk/bin/kubectl.1.28", 28},
	"1.29":         {"/usr/lib/google-cloud-sdk/bin/kubectl.1.29", 29},
	"1.30":         {"/usr/lib/google-cloud-sdk/bin/kubectl.1.30", 30},
	"1.31":         {"/usr/lib/google-cloud-sdk/bin/kubectl.1.31", 31},
	"1.32":         {"/usr/lib/google-cloud-sdk/bin/kubectl.1.32", 32},
	"1.33":         {"/usr/lib/google-cloud-sdk/bin/kubectl.1.33", 33},
	"usr-bin-1.32": {"/usr/bin/kubectl", 32},
}

// TestKubectlVersions runs testdata/kubectl/session.txt with every kubectl
// version, each against its own skiffd: create, apply (client- and
// server-side, twice), get (-o wide, -o yaml, -w), describe, logs (-f),
// wait, patch (strategic, merge, json), run, set image, explain and delete,
// with the output a cluster gives.
func TestKubectlVersions(t *testing.T) {
	t.Parallel()
	dir, err := filepath.Abs("testdata/kubectl")
	if err != nil {
		t.Fatal(err)
	}
	steps, err := parseScript(filepath.Join(dir, "session.txt"), dir)
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range kubectlVersions {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if _, err := os.Stat(v.path); err != nil {
				t.Fatalf("kubectl %s is needed for this test: %v", name, err)
			}
			s := newSkiffd(t)
			s.start()
			r := &sessionRunner{t: t, kubectl: v.path, minor: v.minor, kubeconfig: s.kubeconfig, home: t.TempDir(), bg: map[string]*bgKubectl{}}
			r.run(steps)
		})
	}
}
