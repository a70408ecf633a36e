package runtime

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/containerd"
	"github.com/containerd/containerd/namespaces"
	"github.com/google/go-cmp/cmp"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

func namespacedContext() context.Context {
	return namespaces.WithNamespace(context.Background(), "test")
}

func TestNormalizeRef(t *testing.T) {
	tests := map[string]struct {
		ref, want string
		wantErr   bool
	}{
		"docker hub short":  {ref: "busybox:1.35", want: "docker.io/library/busybox:1.35"},
		"no tag is latest":  {ref: "busybox", want: "docker.io/library/busybox:latest"},
		"hub user repo":     {ref: "someone/tool:v1", want: "docker.io/someone/tool:v1"},
		"already full":      {ref: "docker.io/library/busybox:1.35", want: "docker.io/library/busybox:1.35"},
		"other registry":    {ref: "registry.local:5000/team/app:2", want: "registry.local:5000/team/app:2"},
		"digest kept":       {ref: "busybox@sha256:" + sixtyFourA, want: "docker.io/library/busybox@sha256:" + sixtyFourA},
		"uppercase invalid": {ref: "BusyBox:1", wantErr: true},
		"empty invalid":     {ref: "", wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := NormalizeRef(tc.ref)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error = %v, wantErr %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("NormalizeRef(%q) = %q, want %q", tc.ref, got, tc.want)
			}
		})
	}
}

const sixtyFourA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

func TestNotPresentError(t *testing.T) {
	err := error(&notPresentError{ref: "busybox:1.35"})
	if !errors.Is(err, ErrImageNotPresent) {
		t.Error("not ErrImageNotPresent")
	}
	want := `Container image "busybox:1.35" is not present with pull policy of Never`
	if err.Error() != want {
		t.Errorf("message = %q, want %q", err.Error(), want)
	}
}

func TestExitSignal(t *testing.T) {
	tests := map[string]struct {
		code uint32
		want syscall.Signal
	}{
		"success":      {code: 0},
		"plain error":  {code: 3},
		"128 itself":   {code: 128},
		"SIGKILL":      {code: 137, want: syscall.SIGKILL},
		"SIGTERM":      {code: 143, want: syscall.SIGTERM},
		"unknown exit": {code: UnknownExitCode},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := exitSignal(tc.code); got != tc.want {
				t.Errorf("exitSignal(%d) = %v, want %v", tc.code, got, tc.want)
			}
		})
	}
}

func TestOOMKillCount(t *testing.T) {
	tests := map[string]struct {
		data string
		want int
	}{
		"v1 no kill": {data: "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n", want: 0},
		"v1 killed":  {data: "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n", want: 2},
		"v2 killed":  {data: "low 0\nhigh 0\nmax 4\noom 1\noom_kill 1\noom_group_kill 0\n", want: 1},
		"old kernel": {data: "oom_kill_disable 0\nunder_oom 0\n", want: 0},
		"empty":      {},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := oomKillCount([]byte(tc.data)); got != tc.want {
				t.Errorf("oomKillCount = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestContainerLabels(t *testing.T) {
	tests := map[string]struct {
		cfg  ContainerConfig
		img  ocispec.ImageConfig
		want map[string]string
	}{
		"minimal": {want: map[string]string{LabelManaged: "true"}},
		"pod labels, log path, configured stop signal": {
			cfg: ContainerConfig{
				Labels:     map[string]string{LabelPodUID: "u1", LabelManaged: "false"},
				LogPath:    "/var/log/x/0.log",
				StopSignal: syscall.SIGINT,
			},
			img: ocispec.ImageConfig{StopSignal: "SIGQUIT"},
			want: map[string]string{
				LabelPodUID: "u1", LabelManaged: "true", LabelLogPath: "/var/log/x/0.log",
				containerd.StopSignalLabel: "SIGINT",
			},
		},
		"stdin and tty": {
			cfg:  ContainerConfig{Stdin: true, TTY: true},
			want: map[string]string{LabelManaged: "true", labelStdin: "true", labelTTY: "true"},
		},
		"image stop signal": {
			img:  ocispec.ImageConfig{StopSignal: "SIGQUIT"},
			want: map[string]string{LabelManaged: "true", containerd.StopSignalLabel: "SIGQUIT"},
		},
		"unnamed signal as number": {
			cfg:  ContainerConfig{StopSignal: syscall.Signal(40)},
			want: map[string]string{LabelManaged: "true", containerd.StopSignalLabel: "40"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := containerLabels(tc.cfg, tc.img)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("labels (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestNextBackoff(t *testing.T) {
	var got []string
	d := time.Duration(0)
	for range 8 {
		d = nextBackoff(d)
		got = append(got, d.String())
	}
	want := []string{"100ms", "200ms", "400ms", "800ms", "1.6s", "3.2s", "5s", "5s"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("backoffs (-want,+got):\n%s", diff)
	}
}
