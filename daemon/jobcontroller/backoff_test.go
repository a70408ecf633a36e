package jobcontroller

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func at(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }

func TestBackoffRecordWithFinished(t *testing.T) {
	cases := map[string]struct {
		start     backoffRecord
		succeeded []time.Time
		failed    []time.Time
		want      backoffRecord
	}{
		"nothing new": {
			start: backoffRecord{2, at(5)},
			want:  backoffRecord{2, at(5)},
		},
		"failures add up": {
			start:  backoffRecord{1, at(5)},
			failed: []time.Time{at(9), at(7)},
			want:   backoffRecord{3, at(9)},
		},
		"a success resets": {
			start:     backoffRecord{4, at(5)},
			succeeded: []time.Time{at(6)},
			want:      backoffRecord{},
		},
		"only failures after the last success count": {
			start:     backoffRecord{4, at(5)},
			succeeded: []time.Time{at(8), at(6)},
			failed:    []time.Time{at(7), at(10), at(9)},
			want:      backoffRecord{2, at(10)},
		},
		"failure at the success time does not count": {
			succeeded: []time.Time{at(8)},
			failed:    []time.Time{at(8)},
			want:      backoffRecord{},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := tc.start.withFinished(tc.succeeded, tc.failed)
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(backoffRecord{})); diff != "" {
				t.Errorf("record (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBackoffRemaining(t *testing.T) {
	base, max := 10*time.Second, 10*time.Minute
	cases := map[string]struct {
		record backoffRecord
		now    time.Time
		want   time.Duration
	}{
		"no failure":                {backoffRecord{}, at(0), 0},
		"first failure just now":    {backoffRecord{1, at(0)}, at(0), 10 * time.Second},
		"first failure 4s ago":      {backoffRecord{1, at(0)}, at(4), 6 * time.Second},
		"first failure long ago":    {backoffRecord{1, at(0)}, at(11), 0},
		"third failure doubles":     {backoffRecord{3, at(0)}, at(0), 40 * time.Second},
		"capped at the max":         {backoffRecord{7, at(0)}, at(0), 10 * time.Minute},
		"many failures stay capped": {backoffRecord{60, at(0)}, at(60), 9 * time.Minute},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := tc.record.remaining(tc.now, base, max); got != tc.want {
				t.Errorf("remaining = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestFinishedTime(t *testing.T) {
	terminated := func(sec int) corev1.ContainerStatus {
		return corev1.ContainerStatus{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{FinishedAt: metav1.NewTime(at(sec))}}}
	}
	running := corev1.ContainerStatus{State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
	cases := map[string]struct {
		pod  corev1.Pod
		want time.Time
	}{
		"latest container finish": {
			pod:  corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{terminated(3), terminated(7)}}},
			want: at(7),
		},
		"ready false when a container has not terminated": {
			pod: corev1.Pod{Status: corev1.PodStatus{
				ContainerStatuses: []corev1.ContainerStatus{terminated(3), running},
				Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(at(5))}},
			}},
			want: at(5),
		},
		"deletion minus grace": {
			pod: corev1.Pod{ObjectMeta: metav1.ObjectMeta{
				DeletionTimestamp:          ptr.To(metav1.NewTime(at(40))),
				DeletionGracePeriodSeconds: ptr.To[int64](30),
			}},
			want: at(10),
		},
		"creation as the last resort": {
			pod:  corev1.Pod{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(at(2))}},
			want: at(2),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := finishedTime(&tc.pod); !got.Equal(tc.want) {
				t.Errorf("finishedTime = %v, want %v", got, tc.want)
			}
		})
	}
}
