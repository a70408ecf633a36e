package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestParseRunFlags(t *testing.T) {
	tests := map[string]struct {
		args    []string
		want    runOptions
		wantErr string
	}{
		"manifest": {args: []string{"-f", "job.yaml", "--rm", "-n", "ns"},
			want: runOptions{file: "job.yaml", rm: true, namespace: "ns", spec: jobSpec{completions: 1, parallelism: 1, backoffLimit: -1}}},
		"image with a command after --": {args: []string{"--image", "busybox:1.35", "--completions", "3", "--parallelism", "2", "--", "sh", "-c", "echo hi"},
			want: runOptions{spec: jobSpec{image: "busybox:1.35", completions: 3, parallelism: 2, backoffLimit: -1, args: []string{"sh", "-c", "echo hi"}}}},
		"image with a command": {args: []string{"--image", "busybox:1.35", "--command", "--backoff-limit", "0", "--socket", "/s.sock", "echo", "hi"},
			want: runOptions{spec: jobSpec{image: "busybox:1.35", completions: 1, parallelism: 1, backoffLimit: 0, command: true, args: []string{"echo", "hi"}},
				conn: connectOptions{socket: "/s.sock"}}},
		"nothing to run":        {args: []string{"--rm"}, wantErr: "a Job to run is needed"},
		"both":                  {args: []string{"-f", "job.yaml", "--image", "busybox"}, wantErr: "exclusive"},
		"image flags with -f":   {args: []string{"-f", "job.yaml", "--completions", "3"}, wantErr: "--completions go with --image only"},
		"arguments with -f":     {args: []string{"-f", "job.yaml", "--", "echo"}, wantErr: "unexpected arguments"},
		"no completions":        {args: []string{"--image", "busybox", "--completions", "0"}, wantErr: "--completions must be at least 1"},
		"unknown flag":          {args: []string{"--frobnicate"}, wantErr: "flag provided but not defined"},
		"a number that is none": {args: []string{"--image", "b", "--parallelism", "two"}, wantErr: "invalid value"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := parseRunFlags(tt.args, io.Discard)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(runOptions{}, jobSpec{}, connectOptions{}), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
		})
	}
}

func TestUsageExitCodes(t *testing.T) {
	tests := map[string]struct {
		args []string
		want int
	}{
		"no command":          {nil, exitUsage},
		"unknown command":     {[]string{"frob"}, exitUsage},
		"help":                {[]string{"--help"}, 0},
		"version":             {[]string{"--version"}, 0},
		"run without a Job":   {[]string{"run"}, exitUsage},
		"run --help":          {[]string{"run", "--help"}, 0},
		"missing manifest":    {[]string{"run", "-f", "/nonexistent/job.yaml", "--server", "http://127.0.0.1:1"}, exitUsage},
		"exclusive endpoints": {[]string{"run", "--image", "b", "--server", "http://x", "--socket", "/s"}, exitUsage},
		"unreachable server":  {[]string{"run", "--image", "busybox", "--server", "http://127.0.0.1:1"}, exitUsage},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			var out, errb bytes.Buffer
			if got := skiffMain(tt.args, stdio{in: strings.NewReader(""), out: &out, err: &errb}); got != tt.want {
				t.Errorf("exit %d, want %d; stderr %s", got, tt.want, errb.String())
			}
		})
	}
}

func TestReadManifest(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	job := "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: hello\n  namespace: team\nspec:\n  completions: 1000000000\n  template:\n    spec:\n      restartPolicy: Never\n      containers:\n      - name: c\n        image: busybox\n"
	tests := map[string]struct {
		path, stdin string
		wantNS      string
		wantJSON    string // substring
		wantErr     string
	}{
		"yaml":                {path: write("job.yaml", job), wantNS: "team", wantJSON: `"completions":1000000000`},
		"json from stdin":     {path: "-", stdin: `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"x"}}`, wantJSON: `"name":"x"`},
		"leading separator":   {path: write("sep.yaml", "---\n"+job+"---\n"), wantNS: "team", wantJSON: `"name":"hello"`},
		"two objects":         {path: write("two.yaml", job+"---\n"+job), wantErr: "holds 2 objects"},
		"a pod":               {path: write("pod.yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n"), wantErr: "is a v1 Pod: skiff run takes a batch/v1 Job"},
		"not yaml":            {path: write("bad.yaml", "kind: [Job\n"), wantErr: "bad.yaml"},
		"empty":               {path: write("empty.yaml", ""), wantErr: "holds 0 objects"},
		"missing":             {path: filepath.Join(dir, "none.yaml"), wantErr: "reading the Job manifest"},
		"unknown fields kept": {path: write("typo.yaml", strings.Replace(job, "completions", "complettions", 1)), wantNS: "team", wantJSON: `"complettions"`},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			m, err := readManifest(tt.path, strings.NewReader(tt.stdin))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m.namespace != tt.wantNS || !strings.Contains(string(m.json), tt.wantJSON) {
				t.Errorf("namespace %q, json %s", m.namespace, m.json)
			}
		})
	}
}

func TestJobFromFlags(t *testing.T) {
	got := jobSpec{image: "registry.example.com:5000/team/My_Tool:v2", completions: 3, parallelism: 2, backoffLimit: 0, args: []string{"run", "--fast"}}.job()
	want := &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{GenerateName: "my-tool-"},
		Spec: batchv1.JobSpec{
			Completions: ptr(int32(3)), Parallelism: ptr(int32(2)), BackoffLimit: ptr(int32(0)),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "my-tool", Image: "registry.example.com:5000/team/My_Tool:v2",
					Args: []string{"run", "--fast"}}},
			}},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want,+got):\n%s", diff)
	}
	named := jobSpec{image: "busybox", name: "hello", completions: 1, parallelism: 1, backoffLimit: -1, command: true, args: []string{"echo"}}.job()
	if named.Name != "hello" || named.GenerateName != "" || named.Spec.BackoffLimit != nil || named.Spec.Template.Spec.Containers[0].Command[0] != "echo" {
		t.Errorf("named job %+v", named)
	}
}

func TestImageBase(t *testing.T) {
	for image, want := range map[string]string{
		"busybox":                                 "busybox",
		"busybox:1.35":                            "busybox",
		"docker.io/library/busybox:1.35":          "busybox",
		"localhost:5000/x/app@sha256:abcd":        "app",
		"UPPER_case.tool":                         "upper-case-tool",
		"___":                                     "job",
		strings.Repeat("a", 80) + ":latest":       strings.Repeat("a", 57),
		"registry:5000/" + strings.Repeat("b", 3): "bbb",
	} {
		if got := imageBase(image); got != want {
			t.Errorf("imageBase(%q) = %q, want %q", image, got, want)
		}
	}
}

// TestLogPositionResumes: a stream opened again from the second of the
// last line writes every line once.
func TestLogPositionResumes(t *testing.T) {
	var written []string
	write := func(text []byte) { written = append(written, string(text)) }
	var pos logPosition
	first := "2025-03-01T12:00:00.100000000Z a\n" +
		"2025-03-01T12:00:00.200000000Z b\n" +
		"2025-03-01T12:00:00.200000000Z c\n"
	if err := pos.copy(strings.NewReader(first), write); err != nil {
		t.Fatal(err)
	}
	// Opened again with sinceTime 12:00:00: the second's lines come again,
	// among them a third line at .2 that the first stream had not reached.
	second := "2025-03-01T12:00:00.100000000Z a\n" +
		"2025-03-01T12:00:00.200000000Z b\n" +
		"2025-03-01T12:00:00.200000000Z c\n" +
		"2025-03-01T12:00:00.200000000Z d\n" +
		"2025-03-01T12:00:01.000000000Z e\n" +
		"2025-03-01T12:00:02.000000000Z  f with spaces \n" +
		"2025-03-01T12:00:03.000000000Z no newline at the end"
	if err := pos.copy(strings.NewReader(second), write); err != nil {
		t.Fatal(err)
	}
	want := []string{"a", "b", "c", "d", "e", " f with spaces ", "no newline at the end"}
	if diff := cmp.Diff(want, written); diff != "" {
		t.Errorf("(-want,+got):\n%s", diff)
	}
	if !pos.last.Equal(time.Date(2025, 3, 1, 12, 0, 3, 0, time.UTC)) || pos.atLast != 1 {
		t.Errorf("position %+v", pos)
	}
}

func TestLogPositionLongLines(t *testing.T) {
	long := strings.Repeat("x", maxLogLine+10)
	var written []string
	var pos logPosition
	in := "2025-03-01T12:00:00Z " + long + "\n2025-03-01T12:00:01Z short\n"
	if err := pos.copy(strings.NewReader(in), func(text []byte) { written = append(written, string(text)) }); err != nil {
		t.Fatal(err)
	}
	if len(written) != 3 || written[0]+written[1] != long || written[2] != "short" {
		t.Errorf("wrote %d pieces: %d+%d bytes, then %q", len(written), len(written[0]), len(written[1]), written[len(written)-1])
	}
}

func TestLogPositionReadError(t *testing.T) {
	var pos logPosition
	r := io.MultiReader(strings.NewReader("2025-03-01T12:00:00Z a\n"), errReader{syscall.ECONNRESET})
	var written []string
	err := pos.copy(r, func(text []byte) { written = append(written, string(text)) })
	if !errors.Is(err, syscall.ECONNRESET) || len(written) != 1 {
		t.Errorf("err %v, wrote %q", err, written)
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

func TestProgressLine(t *testing.T) {
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "hello"},
		Spec:   batchv1.JobSpec{Completions: ptr(int32(10))},
		Status: batchv1.JobStatus{Succeeded: 3, Failed: 1}}
	pod := func(phase corev1.PodPhase, waiting string) *corev1.Pod {
		p := &corev1.Pod{Status: corev1.PodStatus{Phase: phase}}
		if waiting != "" {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: waiting}}}}
		}
		return p
	}
	tests := map[string]struct {
		job  *batchv1.Job
		pods []*corev1.Pod
		want string
	}{
		"running": {job, []*corev1.Pod{pod(corev1.PodRunning, ""), pod(corev1.PodRunning, ""), pod(corev1.PodSucceeded, "")},
			"hello: 3/10 succeeded, 1 failed, 2 running"},
		"pending while created": {job, []*corev1.Pod{pod(corev1.PodPending, "ContainerCreating")},
			"hello: 3/10 succeeded, 1 failed, 0 running, 1 pending"},
		"pending on an image": {job, []*corev1.Pod{pod(corev1.PodPending, "ContainerCreating"), pod(corev1.PodPending, "ErrImageNeverPull")},
			"hello: 3/10 succeeded, 1 failed, 0 running, 2 pending (ErrImageNeverPull)"},
		"no completions": {&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "q"}, Status: batchv1.JobStatus{Succeeded: 2}}, nil,
			"q: 2 succeeded, 0 failed, 0 running"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if got := progressLine(tt.job, tt.pods); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestConsoleGivesUpABrokenOutput: the first failed write closes broken
// and nothing more is written; messages still reach standard error.
func TestConsoleGivesUpABrokenOutput(t *testing.T) {
	out := &failingWriter{failAfter: 1}
	var errb bytes.Buffer
	c := newConsole(out, &errb)
	c.line("[p/c] ", []byte("one"))
	select {
	case <-c.broken:
		t.Fatal("broken after a good write")
	default:
	}
	c.line("[p/c] ", []byte("two"))
	<-c.broken
	c.line("[p/c] ", []byte("three"))
	c.message("job %s left running", "x")
	if out.buf.String() != "[p/c] one\n" || out.writes != 2 {
		t.Errorf("stdout %q after %d writes", out.buf.String(), out.writes)
	}
	if errb.String() != "job x left running\n" {
		t.Errorf("stderr %q", errb.String())
	}
}

func TestConsoleWithoutTerminalShowsNoProgress(t *testing.T) {
	var out, errb bytes.Buffer
	c := newConsole(&out, &errb)
	c.progress("hello: 0/1 succeeded")
	c.line("[p/c] ", []byte("x"))
	c.progress("")
	if out.String() != "[p/c] x\n" {
		t.Errorf("stdout %q", out.String())
	}
}

func TestConsoleKeepsProgressBelowLines(t *testing.T) {
	var out bytes.Buffer
	c := &console{out: &out, errw: io.Discard, tty: 0, broken: make(chan struct{})} // a terminal of unknown width
	c.progress("p1")
	c.line("[a/b] ", []byte("x"))
	c.progress("p2")
	c.progress("")
	want := "p1" + "\r\x1b[K[a/b] x\np1" + "\r\x1b[Kp2" + "\r\x1b[K"
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("(-want,+got):\n%s", diff)
	}
}

type failingWriter struct {
	buf       bytes.Buffer
	failAfter int
	writes    int
}

func (f *failingWriter) Write(p []byte) (int, error) {
	f.writes++
	if f.writes > f.failAfter {
		return 0, syscall.EPIPE
	}
	return f.buf.Write(p)
}
