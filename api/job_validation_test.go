package api

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// errorStrings validates a defaulted job and returns "field: detail" lines.
func jobErrors(job *batchv1.Job) []string {
	defaultJob(job)
	var out []string
	for _, e := range append(validateObjectMeta(jobResource, job), validateJob(job)...) {
		out = append(out, e.Error())
	}
	return out
}

func TestValidateJob(t *testing.T) {
	tests := map[string]struct {
		in   func(*batchv1.Job)
		want []string
	}{
		"valid": {},
		"restartPolicy Always": {
			in:   func(j *batchv1.Job) { j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways },
			want: []string{`spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"`},
		},
		"restartPolicy empty defaults to Always": {
			in:   func(j *batchv1.Job) { j.Spec.Template.Spec.RestartPolicy = "" },
			want: []string{`spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"`},
		},
		"uppercase name": {
			in: func(j *batchv1.Job) { j.Name = "Job-Upper" },
			want: []string{
				`metadata.name: Invalid value: "Job-Upper": a lowercase RFC 1123 subdomain must consist of`,
			},
		},
		"name longer than a label value": {
			in: func(j *batchv1.Job) { j.Name = strings.Repeat("a", 64) },
			want: []string{
				// job-name and batch.kubernetes.io/job-name, on the Job and its template
				`metadata.labels: Invalid value: "` + strings.Repeat("a", 64) + `": must be no more than 63 characters`,
				`metadata.labels: Invalid value: "` + strings.Repeat("a", 64) + `": must be no more than 63 characters`,
				`spec.template.metadata.labels: Invalid value: "` + strings.Repeat("a", 64) + `": must be no more than 63 characters`,
				`spec.template.metadata.labels: Invalid value: "` + strings.Repeat("a", 64) + `": must be no more than 63 characters`,
			},
		},
		"no containers": {
			in:   func(j *batchv1.Job) { j.Spec.Template.Spec.Containers = nil },
			want: []string{`spec.template.spec.containers: Required value`},
		},
		"bad and duplicate container names, missing image": {
			in: func(j *batchv1.Job) {
				j.Spec.Template.Spec.Containers = []corev1.Container{{Name: "C_1", Image: "x"}, {Name: "d"}, {Name: "d", Image: "x"}}
			},
			want: []string{
				`spec.template.spec.containers[0].name: Invalid value: "C_1": a lowercase RFC 1123 label must consist of`,
				`spec.template.spec.containers[1].image: Required value`,
				`spec.template.spec.containers[2].name: Duplicate value: "d"`,
			},
		},
		"negative counts": {
			in: func(j *batchv1.Job) {
				j.Spec.Parallelism, j.Spec.Completions, j.Spec.BackoffLimit = ptrTo(int32(-1)), ptrTo(int32(-1)), ptrTo(int32(-1))
			},
			want: []string{
				`spec.parallelism: Invalid value: -1: must be greater than or equal to 0`,
				`spec.completions: Invalid value: -1: must be greater than or equal to 0`,
				`spec.backoffLimit: Invalid value: -1: must be greater than or equal to 0`,
			},
		},
		"unknown completion mode": {
			in:   func(j *batchv1.Job) { j.Spec.CompletionMode = ptrTo(batchv1.CompletionMode("Sometimes")) },
			want: []string{`spec.completionMode: Unsupported value: "Sometimes": supported values: "NonIndexed", "Indexed"`},
		},
		"indexed with parallelism but no completions": {
			in: func(j *batchv1.Job) {
				j.Spec.CompletionMode = ptrTo(batchv1.IndexedCompletion)
				j.Spec.Parallelism = ptrTo(int32(2))
			},
			want: []string{`spec.completions: Required value: when completion mode is Indexed`},
		},
		"backoffLimitPerIndex needs indexed": {
			in:   func(j *batchv1.Job) { j.Spec.BackoffLimitPerIndex = ptrTo(int32(1)) },
			want: []string{`spec.backoffLimitPerIndex: Invalid value: 1: requires indexed completion mode`},
		},
		"manual selector not matching the template": {
			in: func(j *batchv1.Job) {
				j.Spec.ManualSelector = ptrTo(true)
				j.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}
				j.Spec.Template.Labels = map[string]string{"app": "y"}
			},
			want: []string{"spec.template.metadata.labels: Invalid value: {\"app\":\"y\"}: `selector` does not match template `labels`"},
		},
		"manual selector missing": {
			in:   func(j *batchv1.Job) { j.Spec.ManualSelector = ptrTo(true) },
			want: []string{`spec.selector: Required value`},
		},
		"generated selector with a foreign uid": {
			in: func(j *batchv1.Job) {
				j.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"batch.kubernetes.io/controller-uid": "other"}}
			},
			want: []string{
				"spec.selector: Invalid value: {\"matchLabels\":{\"batch.kubernetes.io/controller-uid\":\"other\"}}: `selector` not auto-generated",
				"spec.template.metadata.labels: Invalid value: {\"batch.kubernetes.io/controller-uid\":\"uid\",\"batch.kubernetes.io/job-name\":\"j\",\"controller-uid\":\"uid\",\"job-name\":\"j\"}: `selector` does not match template `labels`",
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := jobErrors(templateJob(tc.in))
			if len(got) != len(tc.want) {
				t.Fatalf("errors (-want,+got):\n%s", cmp.Diff(tc.want, got))
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tc.want[i]) {
					t.Errorf("error %d = %q, want prefix %q", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestValidateJobUpdate(t *testing.T) {
	tests := map[string]struct {
		change func(*batchv1.Job)
		want   []string
	}{
		"parallelism is mutable":    {change: func(j *batchv1.Job) { j.Spec.Parallelism = ptrTo(int32(5)) }},
		"suspend is mutable":        {change: func(j *batchv1.Job) { j.Spec.Suspend = ptrTo(true) }},
		"backoffLimit is mutable":   {change: func(j *batchv1.Job) { j.Spec.BackoffLimit = ptrTo(int32(1)) }},
		"activeDeadline is mutable": {change: func(j *batchv1.Job) { j.Spec.ActiveDeadlineSeconds = ptrTo(int64(9)) }},
		"completions are not": {
			change: func(j *batchv1.Job) { j.Spec.Completions = ptrTo(int32(5)) },
			want:   []string{"spec.completions: Invalid value: 5: field is immutable"},
		},
		"template is not": {
			change: func(j *batchv1.Job) { j.Spec.Template.Spec.Containers[0].Image = "other" },
			want:   []string{"spec.template: Invalid value:"},
		},
		"completionMode is not": {
			change: func(j *batchv1.Job) {
				j.Spec.CompletionMode = ptrTo(batchv1.IndexedCompletion)
			},
			want: []string{`spec.completionMode: Invalid value: "Indexed": field is immutable`},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			old := templateJob(nil)
			defaultJob(old)
			n := old.DeepCopy()
			tc.change(n)
			var got []string
			for _, e := range validateJobUpdate(n, old) {
				got = append(got, e.Error())
			}
			if len(got) != len(tc.want) {
				t.Fatalf("errors (-want,+got):\n%s", cmp.Diff(tc.want, got))
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tc.want[i]) {
					t.Errorf("error %d = %q, want prefix %q", i, got[i], tc.want[i])
				}
			}
		})
	}
}
