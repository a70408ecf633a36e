//go:build integration

package daemon_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestSkiffRun drives `skiff run` against a running skiffd as a developer
// would: through a kubeconfig, a URL and the unix socket, with its output
// piped, closed early, or on a terminal where Ctrl-C asks what to do.
func TestSkiffRun(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.start()
	ctx := context.Background()
	dir := t.TempDir()
	// A URL, with the kubeconfig for skiffd's CA and the admin's credentials.
	server := s.url("")

	t.Run("a Job that completes, through a kubeconfig", func(t *testing.T) {
		kubeconfig := s.kubeconfig // as skiffd wrote it
		manifest := filepath.Join(dir, "hello.yaml")
		writeFile(t, manifest, `apiVersion: batch/v1
kind: Job
metadata:
  name: hello
spec:
  completions: 3
  parallelism: 2
  template:
    spec:
      restartPolicy: Never
      terminationGracePeriodSeconds: 1
      containers:
      - name: main
        image: busybox:1.35
        command: ["sh", "-c", "echo hello from $(hostname); echo second line"]
`)
		res := runSkiff(t, nil, "run", "--kubeconfig", kubeconfig, "-f", manifest)
		if res.code != 0 {
			t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
		}
		job, err := s.client.BatchV1().Jobs("default").Get(ctx, "hello", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pods := jobPods(t, s.client, job)
		if len(pods) != 3 {
			t.Fatalf("%d pods", len(pods))
		}
		var want []string
		for _, p := range pods {
			want = append(want, "["+p.Name+"/main] hello from "+p.Name, "["+p.Name+"/main] second line")
		}
		got := strings.Split(strings.TrimSuffix(res.stdout, "\n"), "\n")
		sort.Strings(want)
		sort.Strings(got)
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("stdout:\n%s\nwant every pod's lines once:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if !strings.Contains(res.stderr, "job default/hello completed: 3 succeeded") {
			t.Errorf("stderr %q", res.stderr)
		}
	})

	t.Run("a Job that fails, over the socket, with --rm", func(t *testing.T) {
		res := runSkiff(t, nil, "run", "--socket", s.socket, "--image", "busybox:1.35", "--backoff-limit", "0", "--rm",
			"--", "sh", "-c", "echo about to fail; exit 3")
		if res.code != 1 {
			t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
		}
		if !strings.Contains(res.stderr, "failed: BackoffLimitExceeded: Job has reached the specified backoff limit") {
			t.Errorf("stderr %q lacks the Failed reason and message", res.stderr)
		}
		if !regexp.MustCompile(`(?m)^\[busybox-[a-z0-9]{5}-[a-z0-9]{5}/busybox\] about to fail$`).MatchString(res.stdout) {
			t.Errorf("stdout %q", res.stdout)
		}
		name := createdJob(t, res.stderr)
		if _, err := s.client.BatchV1().Jobs("default").Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("job %s after --rm: %v, want NotFound", name, err)
		}
	})

	t.Run("usage and API errors", func(t *testing.T) {
		invalid := filepath.Join(dir, "invalid.yaml")
		writeFile(t, invalid, "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: invalid\nspec:\n  template:\n    spec:\n      restartPolicy: Always\n      containers: [{name: c, image: busybox:1.35}]\n")
		typo := filepath.Join(dir, "typo.yaml")
		writeFile(t, typo, "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: typo\nspec:\n  complettions: 2\n  template:\n    spec:\n      restartPolicy: Never\n      containers: [{name: c, image: busybox:1.35}]\n")
		tests := map[string]struct {
			args    []string
			wantErr string
		}{
			"no Job":            {[]string{"run", "--kubeconfig", s.kubeconfig, "--server", server}, "a Job to run is needed"},
			"unknown flag":      {[]string{"run", "--kubeconfig", s.kubeconfig, "--server", server, "--frob"}, "flag provided but not defined"},
			"invalid Job":       {[]string{"run", "--kubeconfig", s.kubeconfig, "--server", server, "-f", invalid}, `spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"`},
			"unknown field":     {[]string{"run", "--kubeconfig", s.kubeconfig, "--server", server, "-f", typo}, `unknown field "spec.complettions"`},
			"namespace clash":   {[]string{"run", "--kubeconfig", s.kubeconfig, "--server", server, "-n", "other", "-f", "-"}, `does not match the namespace "other"`},
			"server not there":  {[]string{"run", "--server", "http://" + freeAddr(t), "--image", "busybox:1.35"}, "connection refused"},
			"already exists":    {[]string{"run", "--kubeconfig", s.kubeconfig, "--server", server, "--image", "busybox:1.35", "--name", "hello"}, `jobs.batch "hello" already exists`},
			"not a Job":         {[]string{"run", "--kubeconfig", s.kubeconfig, "--server", server, "-f", "-"}, "skiff run takes a batch/v1 Job"},
			"namespace missing": {[]string{"run", "--kubeconfig", s.kubeconfig, "--server", server, "-n", "nowhere", "--image", "busybox:1.35"}, `namespaces "nowhere" not found`},
		}
		stdin := map[string]string{
			"namespace clash": "apiVersion: batch/v1\nkind: Job\nmetadata: {name: x, namespace: team}\n",
			"not a Job":       "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n",
		}
		for name, tt := range tests {
			t.Run(name, func(t *testing.T) {
				res := runSkiff(t, strings.NewReader(stdin[name]), tt.args...)
				if res.code != 2 || !strings.Contains(res.stderr, tt.wantErr) {
					t.Errorf("exit %d, stderr %q; want 2 and %q", res.code, res.stderr, tt.wantErr)
				}
			})
		}
		for _, name := range []string{"invalid", "typo"} {
			if _, err := s.client.BatchV1().Jobs("default").Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("job %s: %v, want NotFound", name, err)
			}
		}
	})

	t.Run("a closed pipe ends it", func(t *testing.T) {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr bytes.Buffer
		cmd := exec.Command(skiffBin, "run", "--kubeconfig", s.kubeconfig, "--server", server, "--image", "busybox:1.35", "--name", "chatty",
			"--", "sh", "-c", "i=0; while true; do echo line $i; i=$((i+1)); sleep 0.05; done")
		cmd.Stdout, cmd.Stderr = w, &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		w.Close()
		first, err := bufio.NewReader(r).ReadString('\n')
		if err != nil {
			t.Fatalf("reading the first line: %v; stderr %s", err, stderr.String())
		}
		r.Close() // as `skiff run … | head -1` does
		code := waitExit(t, cmd, 2*time.Minute)
		if !strings.HasSuffix(first, "/busybox] line 0\n") {
			t.Errorf("first line %q", first)
		}
		if code != 128+int(syscall.SIGPIPE) || !strings.Contains(stderr.String(), "job default/chatty left running") ||
			strings.Contains(stderr.String(), "goroutine") || strings.Contains(stderr.String(), "panic") {
			t.Errorf("exit %d, stderr:\n%s\nwant 141 and the Job left running", code, stderr.String())
		}
		if _, err := s.client.BatchV1().Jobs("default").Get(ctx, "chatty", metav1.GetOptions{}); err != nil {
			t.Errorf("job chatty: %v", err)
		}
	})

	t.Run("skiffd restarting under it loses and repeats no line", func(t *testing.T) {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr bytes.Buffer
		cmd := exec.Command(skiffBin, "run", "--kubeconfig", s.kubeconfig, "--server", server, "--image", "busybox:1.35", "--name", "counter",
			"--", "sh", "-c", "for i in $(seq 1 100); do echo $i; sleep 0.05; done")
		cmd.Stdout, cmd.Stderr = w, &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		w.Close()
		lines := make(chan string, 200)
		go func() {
			defer close(lines)
			sc := bufio.NewScanner(r)
			for sc.Scan() {
				lines <- sc.Text()
			}
		}()
		var got []string
		for len(got) < 5 {
			l, ok := <-lines
			if !ok {
				t.Fatalf("output ended after %q; stderr %s", got, stderr.String())
			}
			got = append(got, l)
		}
		s.kill() // as an upgrade would stop it, or worse
		s.start()
		for l := range lines {
			got = append(got, l)
		}
		if code := waitExit(t, cmd, 3*time.Minute); code != 0 {
			t.Fatalf("exit %d; stderr %s", code, stderr.String())
		}
		var want []string
		for i := 1; i <= 100; i++ {
			want = append(want, fmt.Sprint(i))
		}
		for i, l := range got {
			_, text, _ := strings.Cut(l, "] ")
			got[i] = text
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("lines across the restart:\n%s\nwant 1 to 100 once each", strings.Join(got, " "))
		}
	})

	t.Run("Ctrl-C on a terminal asks whether to delete", func(t *testing.T) {
		tty := newPTY(t)
		cmd := exec.Command(skiffBin, "run", "--kubeconfig", s.kubeconfig, "--server", server, "--image", "busybox:1.35", "--name", "sleeper",
			"--completions", "2", "--parallelism", "2", "--", "sh", "-c", "echo started; sleep 300")
		cmd.Stdin, cmd.Stdout, cmd.Stderr = tty.slave, tty.slave, tty.slave
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		tty.slave.Close()
		tty.waitFor(t, "sleeper: 0/2 succeeded, 0 failed, 2 running")
		tty.waitFor(t, "/busybox] started")
		if err := cmd.Process.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
		tty.waitFor(t, "Delete job default/sleeper and its pods? [y/N] ")
		if _, err := tty.master.Write([]byte("y\n")); err != nil {
			t.Fatal(err)
		}
		if code := waitExit(t, cmd, time.Minute); code != 130 {
			t.Errorf("exit %d, want 130; terminal:\n%q", code, tty.text())
		}
		if !strings.Contains(tty.text(), "\r\x1b[K") {
			t.Errorf("no progress line redrawn on the terminal:\n%q", tty.text())
		}
		if _, err := s.client.BatchV1().Jobs("default").Get(ctx, "sleeper", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("job sleeper after yes: %v, want NotFound", err)
		}
	})
}

// skiffResult is how a skiff command ended.
type skiffResult struct {
	stdout, stderr string
	code           int
}

// runSkiff runs the skiff binary to its end, its output piped.
func runSkiff(t *testing.T, stdin io.Reader, args ...string) skiffResult {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := exec.Command(skiffBin, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	code := waitExit(t, cmd, 3*time.Minute)
	return skiffResult{stdout: out.String(), stderr: errOut.String(), code: code}
}

// waitExit waits for cmd and returns its exit code (128 + the signal's
// number when a signal ended it), failing after timeout.
func waitExit(t *testing.T, cmd *exec.Cmd, timeout time.Duration) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var exit *exec.ExitError
		switch {
		case err == nil:
			return 0
		case errors.As(err, &exit):
			if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				return 128 + int(ws.Signal())
			}
			return exit.ExitCode()
		default:
			t.Fatal(err)
		}
	case <-time.After(timeout):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("%s did not end within %s", cmd.Args, timeout)
	}
	return -1
}

// createdJob is the name in skiff run's "job <ns>/<name> created" line.
func createdJob(t *testing.T, stderr string) string {
	t.Helper()
	m := regexp.MustCompile(`job default/(\S+) created`).FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("no created job in %q", stderr)
	}
	return m[1]
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// ptyOutput is a pseudo-terminal whose output is collected.
type ptyOutput struct {
	master, slave *os.File
	mu            sync.Mutex
	out           bytes.Buffer
}

func newPTY(t *testing.T) *ptyOutput {
	t.Helper()
	master, slave, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	if err := pty.Setsize(master, &pty.Winsize{Rows: 40, Cols: 200}); err != nil {
		t.Fatal(err)
	}
	tty := &ptyOutput{master: master, slave: slave}
	t.Cleanup(func() { master.Close(); slave.Close() })
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			tty.mu.Lock()
			tty.out.Write(buf[:n])
			tty.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	return tty
}

func (tty *ptyOutput) text() string {
	tty.mu.Lock()
	defer tty.mu.Unlock()
	return tty.out.String()
}

func (tty *ptyOutput) waitFor(t *testing.T, s string) {
	t.Helper()
	waitFor(t, 2*time.Minute, fmt.Sprintf("%q on the terminal", s), func() (bool, error) {
		return strings.Contains(tty.text(), s), nil
	})
}
