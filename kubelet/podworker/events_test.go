package podworker

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"

	"github.com/skiff-sh/skiff/runtime"
)

// fakeRecorder keeps the events recorded, as "fieldPath type reason message".
type fakeRecorder struct {
	mu     sync.Mutex
	events []string
}

func (r *fakeRecorder) Event(obj apiruntime.Object, eventtype, reason, messageFmt string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ref := obj.(*corev1.ObjectReference)
	r.events = append(r.events, fmt.Sprintf("%s %s %s %s", ref.FieldPath, eventtype, reason, fmt.Sprintf(messageFmt, args...)))
}

// fakeImages is a Runtime that only knows images.
type fakeImages struct {
	Runtime
	present map[string]bool
	pullErr error
}

func (f *fakeImages) ImageInfo(_ context.Context, ref string) (runtime.ImageInfo, error) {
	if !f.present[ref] {
		return runtime.ImageInfo{}, runtime.ErrImageNotPresent
	}
	return runtime.ImageInfo{Ref: ref, Size: 1234}, nil
}

func (f *fakeImages) EnsureImage(_ context.Context, ref string, policy runtime.PullPolicy) error {
	switch {
	case f.present[ref] && policy != runtime.PullAlways:
		return nil
	case policy == runtime.PullNever:
		return fmt.Errorf("%w: %s", runtime.ErrImageNotPresent, ref)
	case f.pullErr != nil:
		return fmt.Errorf("%w %q: %w", runtime.ErrImagePull, ref, f.pullErr)
	}
	f.present[ref] = true
	return nil
}

// duration matches the pull times in Pulled messages.
var duration = regexp.MustCompile(`in [0-9.]+[µmn]?s \([0-9.]+[µmn]?s `)

func TestImageEvents(t *testing.T) {
	tests := map[string]struct {
		policy  corev1.PullPolicy
		present bool
		pullErr error
		wantErr bool
		want    []string
	}{
		"present": {policy: corev1.PullIfNotPresent, present: true,
			want: []string{`spec.containers{c} Normal Pulled Container image "busybox:1.35" already present on machine`}},
		"pulled": {policy: corev1.PullIfNotPresent,
			want: []string{
				`spec.containers{c} Normal Pulling Pulling image "busybox:1.35"`,
				`spec.containers{c} Normal Pulled Successfully pulled image "busybox:1.35" in T (T including waiting). Image size: 1234 bytes.`,
			}},
		"always pulled": {policy: corev1.PullAlways, present: true,
			want: []string{
				`spec.containers{c} Normal Pulling Pulling image "busybox:1.35"`,
				`spec.containers{c} Normal Pulled Successfully pulled image "busybox:1.35" in T (T including waiting). Image size: 1234 bytes.`,
			}},
		"never pulled": {policy: corev1.PullNever, wantErr: true,
			want: []string{
				`spec.containers{c} Warning ErrImageNeverPull Container image "busybox:1.35" is not present with pull policy of Never`,
				`spec.containers{c} Warning Failed Error: ErrImageNeverPull`,
			}},
		"pull failure": {policy: corev1.PullIfNotPresent, pullErr: errors.New("no route to host"), wantErr: true,
			want: []string{
				`spec.containers{c} Normal Pulling Pulling image "busybox:1.35"`,
				`spec.containers{c} Warning Failed Failed to pull image "busybox:1.35": pulling image "busybox:1.35": no route to host`,
				`spec.containers{c} Warning Failed Error: ErrImagePull`,
			}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			rec := &fakeRecorder{}
			rt := &fakeImages{present: map[string]bool{"busybox:1.35": tc.present}, pullErr: tc.pullErr}
			checkEnsureImage(t, Config{Runtime: rt, Recorder: rec}, rec, tc.policy, tc.wantErr, tc.want)
		})
	}
}

func TestContainerEventReferences(t *testing.T) {
	rec := &fakeRecorder{}
	w := &worker{m: &Manager{cfg: Config{Recorder: rec}}, ns: "ns", name: "p", uid: "uid"}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid"}}
	for _, r := range []*containerRun{
		{w: w, pod: pod, spec: &corev1.Container{Name: "main"}, kind: kindRegular},
		{w: w, pod: pod, spec: &corev1.Container{Name: "setup"}, kind: kindInit},
		{w: w, pod: pod, spec: &corev1.Container{Name: "proxy"}, kind: kindSidecar},
		{w: w, pod: pod, spec: &corev1.Container{Name: "debugger"}, kind: kindEphemeral},
	} {
		r.event(corev1.EventTypeNormal, "Started", "Started container %v", r.spec.Name)
	}
	w.event(corev1.EventTypeWarning, "OutOfcpu", "%s", "Node didn't have enough resource: cpu")
	want := []string{
		"spec.containers{main} Normal Started Started container main",
		"spec.initContainers{setup} Normal Started Started container setup",
		"spec.initContainers{proxy} Normal Started Started container proxy",
		"spec.ephemeralContainers{debugger} Normal Started Started container debugger",
		" Warning OutOfcpu Node didn't have enough resource: cpu",
	}
	if diff := cmp.Diff(want, rec.events); diff != "" {
		t.Errorf("(-want,+got):\n%s", diff)
	}
	if diff := cmp.Diff("p_ns(uid)", podDescription(pod)); diff != "" {
		t.Errorf("(-want,+got):\n%s", diff)
	}
}

// checkEnsureImage runs ensureImage for a busybox container with policy on
// a worker configured by cfg, and checks its error and the events rec got
// (pull durations masked).
func checkEnsureImage(t *testing.T, cfg Config, rec *fakeRecorder, policy corev1.PullPolicy, wantErr bool, want []string) {
	t.Helper()
	w := &worker{m: &Manager{cfg: cfg}, ns: "default", name: "p", uid: "uid"}
	spec := &corev1.Container{Name: "c", Image: "busybox:1.35", ImagePullPolicy: policy}
	r := &containerRun{w: w, pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"}}, spec: spec}
	_, err := r.ensureImage(context.Background())
	if (err != nil) != wantErr {
		t.Fatalf("ensureImage: %v", err)
	}
	var got []string
	for _, ev := range rec.events {
		got = append(got, duration.ReplaceAllString(ev, "in T (T "))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want,+got):\n%s", diff)
	}
}
