package podworker

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
)

func TestSpecUpdates(t *testing.T) {
	pod := func(main, side, init string) *corev1.Pod {
		return &corev1.Pod{Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "init", Image: init}, {Name: "side", Image: side, RestartPolicy: ptr(corev1.ContainerRestartPolicyAlways)}},
			Containers:     []corev1.Container{{Name: "main", Image: main}},
		}}
	}
	tests := map[string]struct {
		before  *corev1.Pod // seen before the runs exist
		changes []*corev1.Pod
		want    map[string]string // image handed to each run (none: "")
	}{
		"no change": {
			changes: []*corev1.Pod{pod("a:1", "s:1", "i:1")},
			want:    map[string]string{"main": "", "side": "", "init": ""},
		},
		"main and sidecar images": {
			changes: []*corev1.Pod{pod("a:2", "s:2", "i:2")},
			want:    map[string]string{"main": "a:2", "side": "s:2", "init": ""},
		},
		"only the latest counts": {
			changes: []*corev1.Pod{pod("a:2", "s:1", "i:1"), pod("a:3", "s:1", "i:1")},
			want:    map[string]string{"main": "a:3", "side": "", "init": ""},
		},
		"a change before the run started": {
			before: pod("a:2", "s:1", "i:1"),
			want:   map[string]string{"main": "a:2", "side": "", "init": ""},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			w := &worker{log: logrus.NewEntry(logrus.New())}
			if tc.before != nil {
				w.containersChanged(tc.before)
			}
			orig := pod("a:1", "s:1", "i:1")
			runs := map[string]*containerRun{
				"main": newTrackedRun(w, &orig.Spec.Containers[0], kindRegular),
				"side": newTrackedRun(w, &orig.Spec.InitContainers[1], kindSidecar),
				"init": newTrackedRun(w, &orig.Spec.InitContainers[0], kindInit),
			}
			for _, p := range tc.changes {
				w.containersChanged(p)
			}
			got := map[string]string{}
			for n, r := range runs {
				select {
				case c := <-r.newSpec:
					got[n] = c.Image
				default:
					got[n] = ""
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("handed images (-want,+got):\n%s", diff)
			}
		})
	}
}

// newTrackedRun is the part of newContainerRun that definition changes use.
func newTrackedRun(w *worker, c *corev1.Container, kind containerKind) *containerRun {
	r := &containerRun{w: w, spec: c, kind: kind, log: w.log, newSpec: make(chan *corev1.Container, 1)}
	w.track(r)
	return r
}

func TestTakeSpecChange(t *testing.T) {
	tests := map[string]struct {
		runningChange bool   // a change stopped the running instance
		pending       string // a change that came after the instance ended
		wantRestart   bool
		wantImage     string
	}{
		"nothing":                        {wantImage: "a:1"},
		"changed while running":          {runningChange: true, wantRestart: true, wantImage: "a:2"},
		"changed after the instance end": {pending: "a:3", wantImage: "a:3"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			w := &worker{log: logrus.NewEntry(logrus.New())}
			r := newTrackedRun(w, &corev1.Container{Name: "main", Image: "a:1"}, kindRegular)
			r.pod = &corev1.Pod{}
			if tc.runningChange {
				if g := r.restartForSpec(&corev1.Container{Name: "main", Image: "a:2"}); g != 30e9 {
					t.Errorf("grace = %s, want the default 30s", g)
				}
			}
			if tc.pending != "" {
				r.handSpec(&corev1.Container{Name: "main", Image: tc.pending})
			}
			if got := r.takeSpecChange(); got != tc.wantRestart {
				t.Errorf("restart = %t, want %t", got, tc.wantRestart)
			}
			if r.spec.Image != tc.wantImage {
				t.Errorf("image = %q, want %q", r.spec.Image, tc.wantImage)
			}
			if r.takeSpecChange() {
				t.Errorf("a second take reports a change again")
			}
		})
	}
}
