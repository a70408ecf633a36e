package jobcontroller

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func indexed(completions, parallelism int32) func(*batchv1.Job) {
	return func(j *batchv1.Job) {
		j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
		j.Spec.Completions, j.Spec.Parallelism = ptr.To(completions), ptr.To(parallelism)
	}
}

// activeByIndex waits until the Job's active pods are exactly the given
// indexes and returns them by index.
func activeByIndex(t *testing.T, j *batchv1.Job, pods func() []*corev1.Pod, want ...int) map[int]*corev1.Pod {
	t.Helper()
	var got map[int]*corev1.Pod
	waitFor(t, fmt.Sprintf("active indexes %v", want), func() error {
		got = map[int]*corev1.Pod{}
		for _, p := range filterPods(pods(), isActivePod) {
			got[completionIndex(p)] = p
		}
		if len(got) != len(want) {
			return fmt.Errorf("active indexes %v", keysOfPods(got))
		}
		for _, ix := range want {
			if got[ix] == nil {
				return fmt.Errorf("active indexes %v", keysOfPods(got))
			}
		}
		return nil
	})
	return got
}

func keysOfPods(m map[int]*corev1.Pod) []int {
	var out []int
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestIndexedJobSucceeds(t *testing.T) {
	s := openStore(t)
	startController(t, Config{Store: s})
	job := createJob(t, s, newJob("job-x", indexed(3, 2)))
	pods := func() []*corev1.Pod { return podsOf(t, s, job.UID) }

	active := activeByIndex(t, job, pods, 0, 1)
	for ix, p := range active {
		prefix := fmt.Sprintf("job-x-%d-", ix)
		if p.GenerateName != prefix || !strings.HasPrefix(p.Name, prefix) || len(p.Name) != len(prefix)+5 {
			t.Errorf("pod %s: generateName %q, want %q", p.Name, p.GenerateName, prefix)
		}
		if p.Spec.Hostname != fmt.Sprintf("job-x-%d", ix) {
			t.Errorf("pod %s hostname %q", p.Name, p.Spec.Hostname)
		}
		want := fmt.Sprint(ix)
		if p.Labels[batchv1.JobCompletionIndexAnnotation] != want || p.Annotations[batchv1.JobCompletionIndexAnnotation] != want {
			t.Errorf("pod %s index label %q annotation %q, want %s", p.Name,
				p.Labels[batchv1.JobCompletionIndexAnnotation], p.Annotations[batchv1.JobCompletionIndexAnnotation], want)
		}
		wantEnv := []corev1.EnvVar{{Name: "JOB_COMPLETION_INDEX", ValueFrom: &corev1.EnvVarSource{
			FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.labels['batch.kubernetes.io/job-completion-index']"},
		}}}
		if diff := cmp.Diff(wantEnv, p.Spec.Containers[0].Env); diff != "" {
			t.Errorf("pod %s env (-want +got):\n%s", p.Name, diff)
		}
	}

	finishPod(t, s, active[1], 0, time.Now())
	waitJob(t, s, "job-x", func(st batchv1.JobStatus) error {
		if st.CompletedIndexes != "1" || st.Succeeded != 1 {
			return fmt.Errorf("completedIndexes %q succeeded %d", st.CompletedIndexes, st.Succeeded)
		}
		return nil
	})
	active = activeByIndex(t, job, pods, 0, 2)
	finishPod(t, s, active[0], 0, time.Now())
	finishPod(t, s, active[2], 0, time.Now())
	got := waitJob(t, s, "job-x", hasCondition(batchv1.JobComplete))
	if got.Status.CompletedIndexes != "0-2" || got.Status.Succeeded != 3 || got.Status.FailedIndexes != nil {
		t.Errorf("completedIndexes %q succeeded %d failedIndexes %v, want 0-2, 3, nil",
			got.Status.CompletedIndexes, got.Status.Succeeded, got.Status.FailedIndexes)
	}
}

func TestIndexedJobRetriesFailedIndex(t *testing.T) {
	s := openStore(t)
	startController(t, Config{Store: s})
	job := createJob(t, s, newJob("job-y", indexed(2, 2)))
	pods := func() []*corev1.Pod { return podsOf(t, s, job.UID) }
	active := activeByIndex(t, job, pods, 0, 1)
	finishPod(t, s, active[1], 1, time.Now())
	retry := activeByIndex(t, job, pods, 0, 1)[1]
	if retry.Name == active[1].Name {
		t.Fatalf("index 1 not retried")
	}
	finishPod(t, s, retry, 0, time.Now())
	finishPod(t, s, active[0], 0, time.Now())
	got := waitJob(t, s, "job-y", hasCondition(batchv1.JobComplete))
	if got.Status.Failed != 1 || got.Status.CompletedIndexes != "0,1" {
		t.Errorf("failed %d completedIndexes %q, want 1 and 0,1", got.Status.Failed, got.Status.CompletedIndexes)
	}
}

func withIndex(ix int) podOpt {
	return func(p *corev1.Pod) {
		p.Annotations = map[string]string{batchv1.JobCompletionIndexAnnotation: fmt.Sprint(ix)}
	}
}

func withFailureCount(n int) podOpt {
	return func(p *corev1.Pod) { p.Annotations[batchv1.JobIndexFailureCountAnnotation] = fmt.Sprint(n) }
}

func TestIndexesToCreate(t *testing.T) {
	cases := map[string]struct {
		job         *batchv1.Job
		pods        []*corev1.Pod
		n           int
		want        []int
		wantRequeue time.Duration
	}{
		"lowest free indexes": {
			job:  testJob(func(j *batchv1.Job) { indexed(6, 3)(j); j.Status.CompletedIndexes = "0,2" }),
			pods: []*corev1.Pod{testPod("a", corev1.PodRunning, withIndex(1))},
			n:    2, want: []int{3, 4},
		},
		"never beyond completions": {
			job: testJob(func(j *batchv1.Job) { indexed(2, 5)(j) }),
			n:   5, want: []int{0, 1},
		},
		"terminating index taken when only failed pods are replaced": {
			job: testJob(func(j *batchv1.Job) {
				indexed(3, 3)(j)
				j.Spec.PodReplacementPolicy = ptr.To(batchv1.Failed)
			}),
			pods: []*corev1.Pod{testPod("a", corev1.PodRunning, withIndex(0), beingDeleted)},
			n:    3, want: []int{1, 2},
		},
		"per-index backoff": {
			job: testJob(func(j *batchv1.Job) {
				indexed(3, 3)(j)
				j.Spec.BackoffLimitPerIndex = ptr.To[int32](3)
				j.Status.FailedIndexes = ptr.To("")
			}),
			// index 0 failed once at at(0): it waits 10s; index 1 failed twice long ago.
			pods: []*corev1.Pod{
				testPod("a", corev1.PodFailed, withIndex(0), withFailureCount(0)),
				testPod("b", corev1.PodFailed, withIndex(1), withFailureCount(1), func(p *corev1.Pod) {
					p.Status.ContainerStatuses[0].State.Terminated.FinishedAt.Time = at(-100)
				}),
			},
			n: 3, want: []int{1, 2}, wantRequeue: 9 * time.Second,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := indexedState(tc.job, classifyPods(tc.pods))
			got, requeue := s.indexesToCreate(tc.n, syncInput{now: at(1), backoffBase: 10 * time.Second, backoffMax: time.Minute})
			var indexes []int
			for _, c := range got {
				indexes = append(indexes, c.index)
			}
			if diff := cmp.Diff(tc.want, indexes); diff != "" {
				t.Errorf("indexes (-want +got):\n%s", diff)
			}
			if requeue != tc.wantRequeue {
				t.Errorf("requeue = %v, want %v", requeue, tc.wantRequeue)
			}
		})
	}
}

func TestIndexDuplicates(t *testing.T) {
	job := testJob(indexed(3, 3))
	pods := []*corev1.Pod{
		testPod("no-index", corev1.PodRunning),
		testPod("out-of-range", corev1.PodRunning, withIndex(3)),
		testPod("one-ready", corev1.PodRunning, withIndex(1), ready),
		testPod("one-pending", corev1.PodPending, withIndex(1)),
		testPod("two", corev1.PodRunning, withIndex(2)),
	}
	got := namesOf(indexedState(job, classifyPods(pods)).duplicates(pods))
	if diff := cmp.Diff([]string{"no-index", "out-of-range", "one-pending"}, got); diff != "" {
		t.Errorf("duplicates (-want +got):\n%s", diff)
	}
}

// TestIndexesToCreateSkipsCompletedRuns: finding the next free indexes costs
// the number of intervals, not the number of completed indexes, so a sync of
// a big Indexed Job stays as cheap as a small one's.
func TestIndexesToCreateSkipsCompletedRuns(t *testing.T) {
	job := testJob(func(j *batchv1.Job) {
		indexed(math.MaxInt32, 3)(j)
		j.Status.CompletedIndexes = "0-2147483000,2147483002"
	})
	done := make(chan []int, 1)
	go func() {
		got, _ := indexedState(job, classifyPods(nil)).indexesToCreate(3, syncInput{now: at(1)})
		var indexes []int
		for _, c := range got {
			indexes = append(indexes, c.index)
		}
		done <- indexes
	}()
	select {
	case got := <-done:
		if diff := cmp.Diff([]int{2147483001, 2147483003, 2147483004}, got); diff != "" {
			t.Errorf("indexes (-want +got):\n%s", diff)
		}
	case <-time.After(time.Second):
		t.Fatal("indexesToCreate still running after 1s: it walks the completed indexes one by one")
	}
}
