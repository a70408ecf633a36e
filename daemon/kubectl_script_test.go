//go:build integration

package daemon_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// A kubectl session script (see testdata/kubectl/session.txt for the
// syntax) is a list of steps, each with the output it expects.

// scriptStep is one line of a session script and the output lines it wants.
type scriptStep struct {
	line    int      // in the script, for messages
	kind    string   // "$", "!", "&" or "kill"
	id      string   // of a background command
	args    []string // kubectl arguments
	minor   int      // the oldest kubectl minor version that runs it (0: all)
	stdout  []*regexp.Regexp
	stderr  []*regexp.Regexp
	comment string
}

var minorPrefix = regexp.MustCompile(`^\[1\.(\d+)\+\]\s*`)

// parseScript reads a session script; {{dir}} becomes dir.
func parseScript(path, dir string) ([]*scriptStep, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var steps []*scriptStep
	var last *scriptStep
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(strings.ReplaceAll(line, "{{dir}}", dir))
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasPrefix(line, ">") || strings.HasPrefix(line, "2>") {
			if last == nil {
				return nil, fmt.Errorf("line %d: output before any command", i+1)
			}
			stream, pattern, _ := strings.Cut(line, " ")
			re, err := regexp.Compile(pattern)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", i+1, err)
			}
			if stream == ">" {
				last.stdout = append(last.stdout, re)
			} else {
				last.stderr = append(last.stderr, re)
			}
			continue
		}
		st := &scriptStep{line: i + 1, comment: line}
		if m := minorPrefix.FindStringSubmatch(line); m != nil {
			st.minor, _ = strconv.Atoi(m[1])
			line = line[len(m[0]):]
		}
		fields := strings.Fields(line)
		switch st.kind = fields[0]; st.kind {
		case "$", "!":
			st.args = fields[1:]
		case "&":
			st.id, st.args = fields[1], fields[2:]
		case "kill":
			st.id = fields[1]
		default:
			return nil, fmt.Errorf("line %d: unknown step %q", i+1, fields[0])
		}
		steps = append(steps, st)
		last = st
	}
	return steps, nil
}

// firstUnmatched is the index of the first pattern that no line matches
// in order (each after the line the previous one matched), len(res) if all
// match.
func firstUnmatched(lines []string, res []*regexp.Regexp) int {
	i := 0
	for _, l := range lines {
		if i < len(res) && res[i].MatchString(l) {
			i++
		}
	}
	return i
}

func splitLines(b []byte) []string {
	s := strings.TrimRight(string(b), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// sessionRunner runs the steps of a script with one kubectl binary.
type sessionRunner struct {
	t          *testing.T
	kubectl    string
	minor      int
	kubeconfig string
	home       string
	bg         map[string]*bgKubectl
}

func (r *sessionRunner) command(ctx context.Context, args []string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, r.kubectl, append([]string{"--kubeconfig", r.kubeconfig}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+r.home, "KUBECONFIG="+filepath.Join(r.home, "none"))
	return cmd
}

// run runs every step, stopping at the first that fails.
func (r *sessionRunner) run(steps []*scriptStep) {
	for _, st := range steps {
		if st.minor > r.minor {
			continue
		}
		if msg := r.step(st); msg != "" {
			r.t.Fatalf("line %d: %s\n%s", st.line, st.comment, msg)
		}
	}
}

// step runs one step; "" when it did what the script says.
func (r *sessionRunner) step(st *scriptStep) string {
	switch st.kind {
	case "&":
		return r.start(st)
	case "kill":
		return r.kill(st)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := r.command(ctx, st.args)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	report := fmt.Sprintf("exit: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	switch {
	case st.kind == "$" && err != nil:
		return "kubectl failed\n" + report
	case st.kind == "!" && err == nil:
		return "kubectl succeeded, want a failure\n" + report
	}
	if i := firstUnmatched(splitLines(stdout.Bytes()), st.stdout); i < len(st.stdout) {
		return fmt.Sprintf("no stdout line matches %q\n%s", st.stdout[i], report)
	}
	if i := firstUnmatched(splitLines(stderr.Bytes()), st.stderr); i < len(st.stderr) {
		return fmt.Sprintf("no stderr line matches %q\n%s", st.stderr[i], report)
	}
	return ""
}

// bgKubectl is a kubectl running in the background, its stdout collected.
type bgKubectl struct {
	step   *scriptStep
	cmd    *exec.Cmd
	cancel context.CancelFunc
	stderr bytes.Buffer
	mu     sync.Mutex
	lines  []string
	more   chan struct{} // signalled on each new line and at the end
	ended  bool
}

func (r *sessionRunner) start(st *scriptStep) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	b := &bgKubectl{step: st, cancel: cancel, more: make(chan struct{}, 1)}
	b.cmd = r.command(ctx, st.args)
	b.cmd.Stderr = &b.stderr
	out, err := b.cmd.StdoutPipe()
	if err == nil {
		err = b.cmd.Start()
	}
	if err != nil {
		cancel()
		return err.Error()
	}
	go b.collect(out)
	r.bg[st.id] = b
	r.t.Cleanup(func() { b.stop() })
	return ""
}

func (b *bgKubectl) collect(out io.Reader) {
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		b.mu.Lock()
		b.lines = append(b.lines, sc.Text())
		b.mu.Unlock()
		b.signal()
	}
	b.mu.Lock()
	b.ended = true
	b.mu.Unlock()
	b.signal()
}

func (b *bgKubectl) signal() {
	select {
	case b.more <- struct{}{}:
	default:
	}
}

func (b *bgKubectl) stop() {
	b.cancel()
	_ = b.cmd.Wait()
}

// kill waits until the background command's output has every line its
// step wants (or it ended, or a minute passed), then stops it.
func (r *sessionRunner) kill(st *scriptStep) string {
	b, ok := r.bg[st.id]
	if !ok {
		return "no background command " + st.id
	}
	defer b.stop()
	timeout := time.After(time.Minute)
	for {
		b.mu.Lock()
		lines, ended := append([]string(nil), b.lines...), b.ended
		b.mu.Unlock()
		i := firstUnmatched(lines, b.step.stdout)
		if i == len(b.step.stdout) {
			return ""
		}
		if ended {
			return fmt.Sprintf("%s ended; no stdout line matches %q\nstdout:\n%s\nstderr:\n%s", st.id, b.step.stdout[i], strings.Join(lines, "\n"), b.stderr.String())
		}
		select {
		case <-b.more:
		case <-timeout:
			return fmt.Sprintf("after a minute, no stdout line of %s matches %q\nstdout:\n%s", st.id, b.step.stdout[i], strings.Join(lines, "\n"))
		}
	}
}
