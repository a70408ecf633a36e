//go:build integration

package skiff_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMakeInstall lays skiff out with `make install DESTDIR=… PREFIX=…` as a
// package build would, checks the unit names the installed binary and
// README and passes systemd's own check, and removes it all with `make
// uninstall`.
func TestMakeInstall(t *testing.T) {
	bin := t.TempDir()
	tests := map[string]struct {
		prefix string // "" = the Makefile's default
		root   string // what the prefix is
	}{
		"default prefix": {root: "/usr/local"},
		"PREFIX=/usr":    {prefix: "/usr", root: "/usr"},
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			dest := t.TempDir()
			vars := []string{"DESTDIR=" + dest, "BIN=" + bin}
			if tt.prefix != "" {
				vars = append(vars, "PREFIX="+tt.prefix)
			}
			make := func(target string) {
				t.Helper()
				if out, err := exec.Command("make", append([]string{"-s", target}, vars...)...).CombinedOutput(); err != nil {
					t.Fatalf("make %s: %v\n%s", target, err, out)
				}
			}
			make("install")
			files := map[string]os.FileMode{
				tt.root + "/bin/skiffd":                        0o755,
				tt.root + "/bin/skiff-log-driver":              0o755,
				tt.root + "/bin/skiff":                         0o755,
				tt.root + "/lib/systemd/system/skiffd.service": 0o644,
				tt.root + "/share/doc/skiff/README.md":         0o644,
			}
			for f, mode := range files {
				st, err := os.Stat(filepath.Join(dest, f))
				if err != nil {
					t.Errorf("%s not installed: %v", f, err)
				} else if st.Mode().Perm() != mode {
					t.Errorf("%s has mode %v, want %v", f, st.Mode().Perm(), mode)
				}
			}
			if doc, _ := os.ReadFile(filepath.Join(dest, tt.root, "share/doc/skiff/README.md")); string(doc) != string(readme) {
				t.Errorf("the installed README is not README.md")
			}
			unitPath := filepath.Join(dest, tt.root, "lib/systemd/system/skiffd.service")
			unit, err := os.ReadFile(unitPath)
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{
				"\nExecStart=" + tt.root + "/bin/skiffd ",
				"\nDocumentation=file://" + tt.root + "/share/doc/skiff/README.md\n",
				"\nType=notify\n", "\nWatchdogSec=", "\nKillMode=process\n", "\nDelegate=yes\n",
			} {
				if !strings.Contains(string(unit), want) {
					t.Errorf("unit lacks %q:\n%s", want, unit)
				}
			}
			if tt.root != "/usr/local" && strings.Contains(string(unit), "/usr/local") {
				t.Errorf("unit still names /usr/local:\n%s", unit)
			}
			out, err := exec.Command(filepath.Join(dest, tt.root, "bin/skiffd"), "--version").CombinedOutput()
			if err != nil || !strings.HasPrefix(string(out), "skiffd ") {
				t.Errorf("installed skiffd --version: %v %q", err, out)
			}
			// The log driver answers a stray invocation with its usage.
			out, err = exec.Command(filepath.Join(dest, tt.root, "bin/skiff-log-driver")).CombinedOutput()
			if !strings.HasPrefix(string(out), "usage: ") {
				t.Errorf("installed skiff-log-driver: %v %q, want its usage", err, out)
			}
			// systemd checks the unit as it would load it (the binary must
			// exist at ExecStart's path: point it at the staged one).
			staged := filepath.Join(t.TempDir(), "skiffd.service")
			if err := os.WriteFile(staged, []byte(strings.ReplaceAll(string(unit), "ExecStart="+tt.root, "ExecStart="+filepath.Join(dest, tt.root))), 0o644); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command("systemd-analyze", "verify", staged).CombinedOutput(); err != nil || len(out) > 0 {
				t.Errorf("systemd-analyze verify: %v\n%s", err, out)
			}

			make("uninstall")
			for f := range files {
				if _, err := os.Stat(filepath.Join(dest, f)); !os.IsNotExist(err) {
					t.Errorf("%s left after uninstall: %v", f, err)
				}
			}
			if _, err := os.Stat(filepath.Join(dest, tt.root, "share/doc/skiff")); !os.IsNotExist(err) {
				t.Errorf("doc dir left after uninstall: %v", err)
			}
		})
	}
}
