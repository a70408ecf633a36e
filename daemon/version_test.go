//go:build integration

package daemon_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"
)

// TestVersion builds skiffd and skiff with the Makefile, as `make install`
// does, and checks what they say they are: /version carries the commit and
// build date the Makefile's -ldflags wrote in, and --version answers
// without root and without containerd.
func TestVersion(t *testing.T) {
	t.Parallel()
	start := time.Now()
	bin, err := os.MkdirTemp("/tmp", "skv") // nobody runs them below: not under t.TempDir's 0700
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(bin) })
	if err := os.Chmod(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("make", "-C", "..", "-s", "build", "BIN="+bin).CombinedOutput(); err != nil {
		t.Fatalf("make build: %v\n%s", err, out)
	}
	out, err := exec.Command("git", "-C", "..", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	commit := strings.TrimSpace(string(out))

	s := newSkiffd(t)
	s.bin = filepath.Join(bin, "skiffd")
	s.start()
	resp, err := s.get("/version")
	if err != nil {
		t.Fatal(err)
	}
	var info version.Info
	err = json.NewDecoder(resp.Body).Decode(&info)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	built, err := time.Parse(time.RFC3339, info.BuildDate)
	if err != nil || built.Before(start.Truncate(time.Second)) || built.After(time.Now()) {
		t.Errorf("buildDate %q (%v): want the build's time", info.BuildDate, err)
	}
	if info.GitCommit != commit || (info.GitTreeState != "clean" && info.GitTreeState != "dirty") ||
		!strings.HasPrefix(info.GitVersion, "v1.34.0+skiff.") || info.Major != "1" || info.Minor != "34" ||
		info.GoVersion != goruntime.Version() || info.Platform != goruntime.GOOS+"/"+goruntime.GOARCH {
		t.Errorf("/version %+v; want commit %s", info, commit)
	}
	node, err := s.client.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{})
	if err != nil || len(node.Items) != 1 || node.Items[0].Status.NodeInfo.KubeletVersion != info.GitVersion {
		t.Errorf("node's kubeletVersion: %v %v, want %s", node, err, info.GitVersion)
	}

	// As nobody, with no containerd to ask: the version, and why not
	// containerd's.
	nobody := &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	for _, args := range [][]string{{"skiffd", "--version"}, {"skiffd", "version"}, {"skiff", "--version"}, {"skiff", "version"}} {
		cmd := exec.Command(filepath.Join(bin, args[0]), args[1:]...)
		cmd.SysProcAttr, cmd.Dir, cmd.Env = nobody, "/", []string{"PATH=/usr/bin:/bin"}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("%s as nobody: %v\n%s", args, err, out)
			continue
		}
		for _, want := range []string{args[0] + " ", "kubernetes:  " + info.GitVersion, "git commit:  " + commit, "built:       " + info.BuildDate} {
			if !strings.Contains(string(out), want) {
				t.Errorf("%s says %q, without %q", args, out, want)
			}
		}
		if args[0] == "skiffd" && !strings.Contains(string(out), "containerd:  ") {
			t.Errorf("%s says nothing of containerd: %q", args, out)
		}
	}
	// As root, of the containerd it is given.
	out, err = exec.Command(filepath.Join(bin, "skiffd"), "version", "--containerd-address", containerd.Address).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "(at "+containerd.Address+")") {
		t.Errorf("skiffd version with a containerd: %v %q", err, out)
	}
}
