package jobcontroller

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

type podOpt func(*corev1.Pod)

// testPod is a scheduled pod carrying the tracking finalizer, with the
// given phase; finished pods ended at at(0).
func testPod(name string, phase corev1.PodPhase, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: testNS, UID: types.UID(name),
			Finalizers:        []string{batchv1.JobTrackingFinalizer},
			CreationTimestamp: metav1.NewTime(at(-100)),
		},
		Spec:   corev1.PodSpec{NodeName: "node", TerminationGracePeriodSeconds: ptr.To[int64](30)},
		Status: corev1.PodStatus{Phase: phase},
	}
	if phase == corev1.PodSucceeded || phase == corev1.PodFailed {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{State: corev1.ContainerState{
			Terminated: &corev1.ContainerStateTerminated{FinishedAt: metav1.NewTime(at(0))},
		}}}
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func counted(p *corev1.Pod)     { p.Finalizers = nil }
func unscheduled(p *corev1.Pod) { p.Spec.NodeName = "" }
func ready(p *corev1.Pod) {
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
}
func beingDeleted(p *corev1.Pod) {
	p.DeletionTimestamp = ptr.To(metav1.NewTime(at(0)))
	p.DeletionGracePeriodSeconds = ptr.To[int64](30)
}
func restarts(n int32) podOpt {
	return func(p *corev1.Pod) {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{RestartCount: n}}
	}
}
func createdAt(sec int) podOpt {
	return func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(at(sec)) }
}

// planView is a plan with pods by name, for comparison.
type planView struct {
	Status  batchv1.JobStatus
	Creates int
	Deletes []string
	Release []string
	Backoff backoffRecord
	Requeue time.Duration
}

func viewOf(p syncPlan) planView {
	return planView{
		Status: p.status, Creates: len(p.creates), Deletes: namesOf(p.deletes),
		Release: namesOf(p.release), Backoff: p.backoff, Requeue: p.requeue,
	}
}

// status is a status as every sync writes it, plus the given changes.
func status(fn func(*batchv1.JobStatus)) batchv1.JobStatus {
	st := batchv1.JobStatus{
		StartTime:               ptr.To(metav1.NewTime(at(-100))),
		Ready:                   ptr.To[int32](0),
		Terminating:             ptr.To[int32](0),
		UncountedTerminatedPods: &batchv1.UncountedTerminatedPods{},
	}
	if fn != nil {
		fn(&st)
	}
	return st
}

func testJob(fn func(*batchv1.Job)) *batchv1.Job {
	j := newJob("job")
	j.Status.StartTime = ptr.To(metav1.NewTime(at(-100)))
	if fn != nil {
		fn(j)
	}
	return j
}

func cond(t batchv1.JobConditionType, reason, msg string, sec int) batchv1.JobCondition {
	return newCondition(t, corev1.ConditionTrue, reason, msg, at(sec))
}

func TestDecide(t *testing.T) {
	now := at(1)
	cases := map[string]struct {
		job     *batchv1.Job
		pods    []*corev1.Pod
		backoff backoffRecord
		want    planView
	}{
		"first sync sets startTime and creates parallelism pods": {
			job: testJob(func(j *batchv1.Job) {
				j.Status = batchv1.JobStatus{}
				j.Spec.Parallelism, j.Spec.Completions = ptr.To[int32](2), ptr.To[int32](5)
			}),
			want: planView{
				Status:  status(func(st *batchv1.JobStatus) { st.StartTime = ptr.To(metav1.NewTime(now)); st.Active = 2 }),
				Creates: 2,
			},
		},
		"no more pods than completions missing": {
			job: testJob(func(j *batchv1.Job) {
				j.Spec.Parallelism, j.Spec.Completions = ptr.To[int32](3), ptr.To[int32](3)
				j.Status.Succeeded = 1
			}),
			pods: []*corev1.Pod{testPod("a", corev1.PodSucceeded), testPod("b", corev1.PodRunning, ready)},
			want: planView{
				Status:  status(func(st *batchv1.JobStatus) { st.Succeeded = 2; st.Active = 1; st.Ready = ptr.To[int32](1) }),
				Release: []string{"a"},
			},
		},
		"last success completes": {
			job: testJob(func(j *batchv1.Job) {
				j.Spec.Parallelism, j.Spec.Completions = ptr.To[int32](2), ptr.To[int32](2)
				j.Status.Succeeded = 1
			}),
			pods: []*corev1.Pod{testPod("a", corev1.PodSucceeded)},
			want: planView{
				Status: status(func(st *batchv1.JobStatus) {
					st.Succeeded = 2
					st.Conditions = []batchv1.JobCondition{
						cond(batchv1.JobSuccessCriteriaMet, batchv1.JobReasonCompletionsReached, msgCompletionsReached, 1),
						cond(batchv1.JobComplete, batchv1.JobReasonCompletionsReached, msgCompletionsReached, 1),
					}
					st.CompletionTime = ptr.To(metav1.NewTime(now))
				}),
				Release: []string{"a"},
			},
		},
		"without completions, a success stops replacements": {
			job: testJob(func(j *batchv1.Job) {
				j.Spec.Parallelism, j.Spec.Completions = ptr.To[int32](3), nil
			}),
			pods: []*corev1.Pod{testPod("a", corev1.PodSucceeded), testPod("b", corev1.PodFailed), testPod("c", corev1.PodRunning)},
			want: planView{
				Status:  status(func(st *batchv1.JobStatus) { st.Succeeded = 1; st.Failed = 1; st.Active = 1 }),
				Release: []string{"a", "b"},
			},
		},
		"failure waits for the backoff": {
			job:  testJob(nil),
			pods: []*corev1.Pod{testPod("a", corev1.PodFailed)},
			want: planView{
				Status:  status(func(st *batchv1.JobStatus) { st.Failed = 1 }),
				Release: []string{"a"},
				Backoff: backoffRecord{1, at(0)},
				Requeue: 9 * time.Second,
			},
		},
		"replacement once the backoff passed": {
			job:     testJob(func(j *batchv1.Job) { j.Status.Failed = 1 }),
			backoff: backoffRecord{1, at(-10)},
			want: planView{
				Status:  status(func(st *batchv1.JobStatus) { st.Failed = 1; st.Active = 1 }),
				Creates: 1,
				Backoff: backoffRecord{1, at(-10)},
			},
		},
		"backoff limit exceeded: active pods deleted and counted, Failed waits for them": {
			job: testJob(func(j *batchv1.Job) {
				j.Spec.Parallelism, j.Spec.Completions, j.Spec.BackoffLimit = ptr.To[int32](2), ptr.To[int32](4), ptr.To[int32](0)
			}),
			pods: []*corev1.Pod{testPod("a", corev1.PodFailed), testPod("b", corev1.PodRunning, ready)},
			want: planView{
				Status: status(func(st *batchv1.JobStatus) {
					st.Failed = 2
					st.Terminating = ptr.To[int32](1)
					st.Conditions = []batchv1.JobCondition{cond(batchv1.JobFailureTarget, batchv1.JobReasonBackoffLimitExceeded, msgBackoffLimitExceeded, 1)}
				}),
				Deletes: []string{"b"},
				Release: []string{"a", "b"},
				Backoff: backoffRecord{1, at(0)},
			},
		},
		"FailureTarget becomes Failed once nothing terminates": {
			job: testJob(func(j *batchv1.Job) {
				j.Status.Failed = 2
				j.Status.Conditions = []batchv1.JobCondition{cond(batchv1.JobFailureTarget, batchv1.JobReasonBackoffLimitExceeded, msgBackoffLimitExceeded, 0)}
			}),
			pods: []*corev1.Pod{testPod("b", corev1.PodFailed, counted)},
			want: planView{
				Status: status(func(st *batchv1.JobStatus) {
					st.Failed = 2
					st.Conditions = []batchv1.JobCondition{
						cond(batchv1.JobFailureTarget, batchv1.JobReasonBackoffLimitExceeded, msgBackoffLimitExceeded, 0),
						cond(batchv1.JobFailed, batchv1.JobReasonBackoffLimitExceeded, msgBackoffLimitExceeded, 1),
					}
				}),
			},
		},
		"FailureTarget kept while a pod terminates": {
			job: testJob(func(j *batchv1.Job) {
				j.Status.Failed = 2
				j.Status.Conditions = []batchv1.JobCondition{cond(batchv1.JobFailureTarget, batchv1.JobReasonBackoffLimitExceeded, msgBackoffLimitExceeded, 0)}
			}),
			pods: []*corev1.Pod{testPod("b", corev1.PodRunning, counted, beingDeleted)},
			want: planView{
				Status: status(func(st *batchv1.JobStatus) {
					st.Failed = 2
					st.Terminating = ptr.To[int32](1)
					st.Conditions = []batchv1.JobCondition{cond(batchv1.JobFailureTarget, batchv1.JobReasonBackoffLimitExceeded, msgBackoffLimitExceeded, 0)}
				}),
			},
		},
		"OnFailure restarts reach the limit": {
			job: testJob(func(j *batchv1.Job) {
				j.Spec.BackoffLimit = ptr.To[int32](3)
				j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
			}),
			pods: []*corev1.Pod{testPod("a", corev1.PodRunning, restarts(3))},
			want: planView{
				Status: status(func(st *batchv1.JobStatus) {
					st.Failed = 1
					st.Terminating = ptr.To[int32](1)
					st.Conditions = []batchv1.JobCondition{cond(batchv1.JobFailureTarget, batchv1.JobReasonBackoffLimitExceeded, msgBackoffLimitExceeded, 1)}
				}),
				Deletes: []string{"a"},
				Release: []string{"a"},
			},
		},
		"OnFailure restarts below the limit": {
			job: testJob(func(j *batchv1.Job) {
				j.Spec.BackoffLimit = ptr.To[int32](3)
				j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
			}),
			pods: []*corev1.Pod{testPod("a", corev1.PodRunning, restarts(2))},
			want: planView{Status: status(func(st *batchv1.JobStatus) { st.Active = 1 })},
		},
		"lowered parallelism deletes the least advanced pods, uncounted": {
			job: testJob(func(j *batchv1.Job) {
				j.Spec.Parallelism, j.Spec.Completions = ptr.To[int32](1), ptr.To[int32](9)
			}),
			pods: []*corev1.Pod{
				testPod("running-ready", corev1.PodRunning, ready),
				testPod("pending", corev1.PodPending),
				testPod("running", corev1.PodRunning),
			},
			want: planView{
				Status: status(func(st *batchv1.JobStatus) {
					st.Active = 1
					st.Ready = ptr.To[int32](1)
					st.Terminating = ptr.To[int32](2)
				}),
				Deletes: []string{"pending", "running"},
				Release: []string{"pending", "running"},
			},
		},
		"a pod deleted while running counts as failed and is replaced at once": {
			job:  testJob(nil),
			pods: []*corev1.Pod{testPod("a", corev1.PodRunning, beingDeleted)},
			want: planView{
				Status:  status(func(st *batchv1.JobStatus) { st.Failed = 1; st.Active = 1; st.Terminating = ptr.To[int32](1) }),
				Creates: 1,
				Release: []string{"a"},
				Backoff: backoffRecord{1, at(-30)},
			},
		},
		"podReplacementPolicy Failed waits for terminating pods": {
			job: testJob(func(j *batchv1.Job) {
				j.Spec.PodReplacementPolicy = ptr.To(batchv1.Failed)
			}),
			pods: []*corev1.Pod{testPod("a", corev1.PodRunning, beingDeleted)},
			want: planView{Status: status(func(st *batchv1.JobStatus) { st.Terminating = ptr.To[int32](1) })},
		},
		"a Job being deleted creates nothing and releases its pods": {
			job: testJob(func(j *batchv1.Job) {
				j.DeletionTimestamp = ptr.To(metav1.NewTime(at(0)))
				j.Spec.Parallelism = ptr.To[int32](2)
			}),
			pods: []*corev1.Pod{testPod("a", corev1.PodRunning)},
			want: planView{
				Status:  status(func(st *batchv1.JobStatus) { st.Active = 1 }),
				Release: []string{"a"},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			plan := decide(syncInput{
				job: tc.job, pods: tc.pods, backoff: tc.backoff, now: now,
				backoffBase: 10 * time.Second, backoffMax: time.Minute,
			})
			got := viewOf(plan)
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(backoffRecord{}), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPodsForRemoval(t *testing.T) {
	readyAt := func(sec int) podOpt {
		return func(p *corev1.Pod) {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(at(sec))}}
		}
	}
	cases := map[string]struct {
		pods []*corev1.Pod
		n    int
		want []string
	}{
		"unscheduled first": {
			pods: []*corev1.Pod{testPod("sched", corev1.PodPending), testPod("unsched", corev1.PodPending, unscheduled)},
			n:    1, want: []string{"unsched"},
		},
		"pending before running": {
			pods: []*corev1.Pod{testPod("run", corev1.PodRunning), testPod("pend", corev1.PodPending)},
			n:    1, want: []string{"pend"},
		},
		"not ready before ready": {
			pods: []*corev1.Pod{testPod("ready", corev1.PodRunning, ready), testPod("notready", corev1.PodRunning)},
			n:    1, want: []string{"notready"},
		},
		"recently ready before long ready": {
			pods: []*corev1.Pod{testPod("old", corev1.PodRunning, readyAt(1)), testPod("new", corev1.PodRunning, readyAt(5))},
			n:    1, want: []string{"new"},
		},
		"more restarts first": {
			pods: []*corev1.Pod{testPod("few", corev1.PodRunning, restarts(1)), testPod("many", corev1.PodRunning, restarts(4))},
			n:    1, want: []string{"many"},
		},
		"newer first": {
			pods: []*corev1.Pod{testPod("older", corev1.PodRunning, createdAt(1)), testPod("newer", corev1.PodRunning, createdAt(2))},
			n:    1, want: []string{"newer"},
		},
		"n beyond the pods": {
			pods: []*corev1.Pod{testPod("a", corev1.PodRunning)},
			n:    3, want: []string{"a"},
		},
		"none": {pods: []*corev1.Pod{testPod("a", corev1.PodRunning)}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := namesOf(podsForRemoval(tc.pods, tc.n))
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("removal (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDeletionGrace(t *testing.T) {
	cases := map[string]struct {
		pod  *corev1.Pod
		want int64
	}{
		"scheduled running":   {testPod("a", corev1.PodRunning), 30},
		"default grace":       {testPod("a", corev1.PodRunning, func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = nil }), 30},
		"custom grace":        {testPod("a", corev1.PodRunning, func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](5) }), 5},
		"unscheduled":         {testPod("a", corev1.PodPending, unscheduled), 0},
		"already terminal":    {testPod("a", corev1.PodFailed), 0},
		"succeeded, terminal": {testPod("a", corev1.PodSucceeded), 0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := deletionGrace(tc.pod); got != tc.want {
				t.Errorf("grace = %d, want %d", got, tc.want)
			}
		})
	}
}
