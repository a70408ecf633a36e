package kube

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// templateJob is a Job named "j" with UID "uid" and one container.
func templateJob(mutate func(*batchv1.Job)) *batchv1.Job {
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "default", UID: "uid"},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "c", Image: "busybox:1.35"}},
		}}},
	}
	if mutate != nil {
		mutate(job)
	}
	return job
}

func TestDefaultJobSpec(t *testing.T) {
	type counts struct {
		Completions, Parallelism, BackoffLimit *int32
		Replacement                            batchv1.PodReplacementPolicy
	}
	tests := map[string]struct {
		in   func(*batchv1.Job)
		want counts
	}{
		"nothing set": {want: counts{ptr.To(int32(1)), ptr.To(int32(1)), ptr.To(int32(6)), batchv1.TerminatingOrFailed}},
		"work queue keeps completions unset": {
			in:   func(j *batchv1.Job) { j.Spec.Parallelism = ptr.To(int32(3)) },
			want: counts{nil, ptr.To(int32(3)), ptr.To(int32(6)), batchv1.TerminatingOrFailed},
		},
		"completions only": {
			in:   func(j *batchv1.Job) { j.Spec.Completions = ptr.To(int32(5)) },
			want: counts{ptr.To(int32(5)), ptr.To(int32(1)), ptr.To(int32(6)), batchv1.TerminatingOrFailed},
		},
		"backoffLimitPerIndex lifts backoffLimit": {
			in:   func(j *batchv1.Job) { j.Spec.BackoffLimitPerIndex = ptr.To(int32(1)) },
			want: counts{ptr.To(int32(1)), ptr.To(int32(1)), ptr.To(int32(math.MaxInt32)), batchv1.TerminatingOrFailed},
		},
		"podFailurePolicy replaces only failed pods": {
			in:   func(j *batchv1.Job) { j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{} },
			want: counts{ptr.To(int32(1)), ptr.To(int32(1)), ptr.To(int32(6)), batchv1.Failed},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			job := templateJob(tc.in)
			defaultJobSpec(&job.Spec)
			got := counts{job.Spec.Completions, job.Spec.Parallelism, job.Spec.BackoffLimit, *job.Spec.PodReplacementPolicy}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
			if *job.Spec.CompletionMode != batchv1.NonIndexedCompletion || *job.Spec.Suspend || *job.Spec.ManualSelector {
				t.Errorf("completionMode/suspend/manualSelector not defaulted: %+v", job.Spec)
			}
		})
	}
}

func TestDefaultPodFailurePolicyStatus(t *testing.T) {
	job := templateJob(func(j *batchv1.Job) {
		j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
			Action: batchv1.PodFailurePolicyActionIgnore,
			OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{
				{Type: corev1.DisruptionTarget}, {Type: "X", Status: corev1.ConditionFalse},
			},
		}}}
	})
	defaultJobSpec(&job.Spec)
	got := []corev1.ConditionStatus{}
	for _, p := range job.Spec.PodFailurePolicy.Rules[0].OnPodConditions {
		got = append(got, p.Status)
	}
	if diff := cmp.Diff([]corev1.ConditionStatus{corev1.ConditionTrue, corev1.ConditionFalse}, got); diff != "" {
		t.Errorf("(-want,+got):\n%s", diff)
	}
}

func TestDefaultJobLabelsAndSelector(t *testing.T) {
	generated := map[string]string{
		"batch.kubernetes.io/controller-uid": "uid", "batch.kubernetes.io/job-name": "j",
		"controller-uid": "uid", "job-name": "j",
	}
	withApp := map[string]string{"app": "x"}
	for k, v := range generated {
		withApp[k] = v
	}
	tests := map[string]struct {
		in           func(*batchv1.Job)
		wantJob      map[string]string
		wantTemplate map[string]string
		wantSelector *metav1.LabelSelector
	}{
		"generated": {
			wantJob: generated, wantTemplate: generated,
			wantSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"batch.kubernetes.io/controller-uid": "uid"}},
		},
		"template labels kept and copied to the job": {
			in:      func(j *batchv1.Job) { j.Spec.Template.Labels = map[string]string{"app": "x"} },
			wantJob: withApp, wantTemplate: withApp,
			wantSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"batch.kubernetes.io/controller-uid": "uid"}},
		},
		"job labels kept": {
			in:      func(j *batchv1.Job) { j.Labels = map[string]string{"team": "a"} },
			wantJob: map[string]string{"team": "a"}, wantTemplate: generated,
			wantSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"batch.kubernetes.io/controller-uid": "uid"}},
		},
		"manual selector untouched": {
			in: func(j *batchv1.Job) {
				j.Spec.ManualSelector = ptr.To(true)
				j.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}
				j.Spec.Template.Labels = map[string]string{"app": "x"}
			},
			wantJob: map[string]string{"app": "x"}, wantTemplate: map[string]string{"app": "x"},
			wantSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			job := templateJob(tc.in)
			defaultJob(job)
			if diff := cmp.Diff(tc.wantJob, job.Labels); diff != "" {
				t.Errorf("job labels (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantTemplate, job.Spec.Template.Labels); diff != "" {
				t.Errorf("template labels (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantSelector, job.Spec.Selector); diff != "" {
				t.Errorf("selector (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestDefaultPodSpec(t *testing.T) {
	spec := corev1.PodSpec{Containers: []corev1.Container{
		{Name: "a", Image: "busybox"}, {Name: "b", Image: "busybox:latest"}, {Name: "c", Image: "busybox:1.35"},
		{Name: "d", Image: "localhost:5000/x"}, {Name: "e", Image: "x@sha256:abc"}, {Name: "f", Image: "x", ImagePullPolicy: corev1.PullNever},
	}}
	defaultPodSpec(&spec)
	var pulls []corev1.PullPolicy
	for _, c := range spec.Containers {
		pulls = append(pulls, c.ImagePullPolicy)
		if c.TerminationMessagePath != "/dev/termination-log" || c.TerminationMessagePolicy != corev1.TerminationMessageReadFile {
			t.Errorf("container %s: termination message defaults missing", c.Name)
		}
	}
	want := []corev1.PullPolicy{corev1.PullAlways, corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever}
	if diff := cmp.Diff(want, pulls); diff != "" {
		t.Errorf("imagePullPolicy (-want,+got):\n%s", diff)
	}
	got := []any{spec.RestartPolicy, spec.DNSPolicy, *spec.TerminationGracePeriodSeconds, spec.SecurityContext != nil, spec.SchedulerName}
	wantPod := []any{corev1.RestartPolicyAlways, corev1.DNSClusterFirst, int64(30), true, "default-scheduler"}
	if diff := cmp.Diff(wantPod, got); diff != "" {
		t.Errorf("pod defaults (-want,+got):\n%s", diff)
	}
}

func TestPrepareJobUpdateDefaults(t *testing.T) {
	tests := map[string]struct {
		change     func(*batchv1.Job)
		wantLabels map[string]string
		wantPolicy batchv1.PodReplacementPolicy
	}{
		"labels kept": {
			change:     func(j *batchv1.Job) { j.Labels = map[string]string{"team": "a"} },
			wantLabels: map[string]string{"team": "a"}, wantPolicy: batchv1.TerminatingOrFailed,
		},
		"labels dropped come back from the template": {
			change: func(j *batchv1.Job) { j.Labels = nil },
			wantLabels: map[string]string{
				"batch.kubernetes.io/controller-uid": "uid", "batch.kubernetes.io/job-name": "j",
				"controller-uid": "uid", "job-name": "j",
			},
			wantPolicy: batchv1.TerminatingOrFailed,
		},
		"unset fields are defaulted again": {
			change: func(j *batchv1.Job) {
				j.Labels = map[string]string{"team": "a"}
				j.Spec.PodReplacementPolicy, j.Spec.BackoffLimit = nil, nil
			},
			wantLabels: map[string]string{"team": "a"}, wantPolicy: batchv1.TerminatingOrFailed,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			old := templateJob(nil)
			defaultJob(old)
			n := old.DeepCopy()
			tc.change(n)
			PrepareJobForUpdate(n, old)
			if diff := cmp.Diff(tc.wantLabels, n.Labels); diff != "" {
				t.Errorf("labels (-want,+got):\n%s", diff)
			}
			if *n.Spec.PodReplacementPolicy != tc.wantPolicy || *n.Spec.BackoffLimit != 6 {
				t.Errorf("podReplacementPolicy %s backoffLimit %d, want %s 6", *n.Spec.PodReplacementPolicy, *n.Spec.BackoffLimit, tc.wantPolicy)
			}
		})
	}
}
