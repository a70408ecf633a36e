package jobcontroller

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

func TestStatusEvents(t *testing.T) {
	cond := func(t batchv1.JobConditionType, s corev1.ConditionStatus, reason, msg string) batchv1.JobCondition {
		return batchv1.JobCondition{Type: t, Status: s, Reason: reason, Message: msg}
	}
	complete := cond(batchv1.JobComplete, corev1.ConditionTrue, "CompletionsReached", "Reached expected number of succeeded pods")
	failed := cond(batchv1.JobFailed, corev1.ConditionTrue, "BackoffLimitExceeded", "Job has reached the specified backoff limit")
	suspended := cond(batchv1.JobSuspended, corev1.ConditionTrue, "JobSuspended", "Job suspended")
	resumed := cond(batchv1.JobSuspended, corev1.ConditionFalse, "JobResumed", "Job resumed")
	tests := map[string]struct {
		before    []batchv1.JobCondition
		now       batchv1.JobStatus
		want      []jobEvent
		overshoot bool
	}{
		"nothing changes": {before: []batchv1.JobCondition{suspended}, now: batchv1.JobStatus{Conditions: []batchv1.JobCondition{suspended}}},
		"completed": {now: batchv1.JobStatus{Succeeded: 1, Conditions: []batchv1.JobCondition{complete}},
			want: []jobEvent{{"Normal", "Completed", "Job completed"}}},
		"completed with too many successes": {now: batchv1.JobStatus{Succeeded: 2, Conditions: []batchv1.JobCondition{complete}},
			want: []jobEvent{
				{"Warning", "TooManySucceededPods", "Too many succeeded pods running after completion count reached"},
				{"Normal", "Completed", "Job completed"},
			}},
		"failed": {now: batchv1.JobStatus{Conditions: []batchv1.JobCondition{failed}},
			want: []jobEvent{{"Warning", "BackoffLimitExceeded", "Job has reached the specified backoff limit"}}},
		"suspended": {now: batchv1.JobStatus{Conditions: []batchv1.JobCondition{suspended}},
			want: []jobEvent{{"Normal", "Suspended", "Job suspended"}}},
		"resumed": {before: []batchv1.JobCondition{suspended}, now: batchv1.JobStatus{Conditions: []batchv1.JobCondition{resumed}},
			want: []jobEvent{{"Normal", "Resumed", "Job resumed"}}},
		"suspended again": {before: []batchv1.JobCondition{resumed}, now: batchv1.JobStatus{Conditions: []batchv1.JobCondition{suspended}},
			want: []jobEvent{{"Normal", "Suspended", "Job suspended"}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			job := newJob("j")
			got := statusEvents(job, tc.before, tc.now)
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(jobEvent{})); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
		})
	}
}

// fakeRecorder keeps the events recorded, as "type reason message".
type fakeRecorder struct {
	mu     sync.Mutex
	events []string
}

func (r *fakeRecorder) Event(obj runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, eventtype+" "+reason+" "+fmt.Sprintf(messageFmt, args...))
}

func (r *fakeRecorder) recorded() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

func TestControllerRecordsEvents(t *testing.T) {
	s := openStore(t)
	rec := &fakeRecorder{}
	startController(t, Config{Store: s, Recorder: rec})
	job := createJob(t, s, newJob("job-e", func(j *batchv1.Job) { j.Spec.Completions = ptr.To[int32](2) }))
	first := waitActivePods(t, s, job.UID, 1)[0]
	finishPod(t, s, first, 0, time.Now())
	second := filterPods(waitActivePods(t, s, job.UID, 1), func(p *corev1.Pod) bool { return p.Name != first.Name })
	if len(second) != 1 {
		t.Fatalf("no second pod")
	}
	finishPod(t, s, second[0], 0, time.Now())
	waitJob(t, s, "job-e", hasCondition(batchv1.JobComplete))
	want := []string{
		"Normal SuccessfulCreate Created pod: " + first.Name,
		"Normal SuccessfulCreate Created pod: " + second[0].Name,
		"Normal Completed Job completed",
	}
	waitFor(t, "events", func() error {
		if diff := cmp.Diff(want, rec.recorded()); diff != "" {
			return fmt.Errorf("(-want,+got):\n%s", diff)
		}
		return nil
	})
}
