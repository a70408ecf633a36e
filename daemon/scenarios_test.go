//go:build integration

package daemon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"
)

// scenarioTimeout bounds one scenario, from creation to its last expectation.
const scenarioTimeout = 2 * time.Minute

// scenario is one file of testdata/jobs: a Job manifest and the outcome
// Kubernetes gives it (see testdata/jobs/README.md).
type scenario struct {
	Job    batchv1.Job `json:"job"`
	Expect expectation `json:"expect"`
}

type expectation struct {
	Status    statusSummary `json:"status"`
	Pods      []podGroup    `json:"pods,omitempty"`
	Deleted   bool          `json:"deleted,omitempty"`   // deleted after it finished (TTL)
	Untouched bool          `json:"untouched,omitempty"` // never reconciled (managedBy)
}

// statusSummary is the part of a JobStatus a scenario states: everything but
// the times, whose presence only is compared.
type statusSummary struct {
	Conditions       []conditionSummary `json:"conditions,omitempty"`
	StartTime        bool               `json:"startTime"`
	CompletionTime   bool               `json:"completionTime"`
	Active           int32              `json:"active"`
	Succeeded        int32              `json:"succeeded"`
	Failed           int32              `json:"failed"`
	Terminating      int32              `json:"terminating"`
	Ready            int32              `json:"ready"`
	CompletedIndexes string             `json:"completedIndexes"`
	FailedIndexes    *string            `json:"failedIndexes,omitempty"`
}

type conditionSummary struct {
	Type    batchv1.JobConditionType `json:"type"`
	Status  corev1.ConditionStatus   `json:"status"`
	Reason  string                   `json:"reason"`
	Message string                   `json:"message"`
}

// podGroup states the pods of one completion index (or all of them).
// Exit codes, hostnames, annotations and labels are compared only when
// stated.
type podGroup struct {
	Index       *int                `json:"index,omitempty"`
	Phases      []corev1.PodPhase   `json:"phases"`
	ExitCodes   []int32             `json:"exitCodes,omitempty"`
	Hostnames   []string            `json:"hostnames,omitempty"`
	Annotations map[string][]string `json:"annotations,omitempty"`
	Labels      map[string][]string `json:"labels,omitempty"`
}

// TestJobScenarios runs every scenario of testdata/jobs, in parallel, on one
// skiffd.
func TestJobScenarios(t *testing.T) {
	files, err := filepath.Glob("testdata/jobs/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no scenario in testdata/jobs")
	}
	s := newSkiffd(t)
	s.start()
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".yaml")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			sc := loadScenario(t, file, name)
			runScenario(t, s.client, sc)
		})
	}
}

func loadScenario(t *testing.T, file, name string) scenario {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var sc scenario
	if err := yaml.UnmarshalStrict(b, &sc); err != nil {
		t.Fatalf("reading %s: %v", file, err)
	}
	if sc.Job.Name != name {
		t.Fatalf("%s: the Job is named %q, want the file's name %q", file, sc.Job.Name, name)
	}
	if len(sc.Expect.Status.Conditions) == 0 && !sc.Expect.Untouched {
		t.Fatalf("%s: expect.status.conditions is empty: the test would not know when to look", file)
	}
	return sc
}

func runScenario(t *testing.T, c *kubernetes.Clientset, sc scenario) {
	ctx := context.Background()
	job, err := c.BatchV1().Jobs("default").Create(ctx, &sc.Job, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating job: %v", err)
	}
	if sc.Expect.Untouched {
		waitOtherJobFinished(t, c, job.Name+"-sentinel")
		job, err = c.BatchV1().Jobs("default").Get(ctx, job.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(batchv1.JobStatus{}, job.Status); diff != "" {
			t.Errorf("status of a Job managed by another controller (-want,+got):\n%s", diff)
		}
	} else {
		job = waitConditions(t, c, job, sc.Expect.Status.Conditions)
		checkStatusInvariants(t, job.Status)
		got := summarizeStatus(job.Status, podNames(jobPods(t, c, job)))
		if diff := cmp.Diff(sc.Expect.Status, got); diff != "" {
			t.Errorf("job status (-want,+got):\n%s\nfull status: %s", diff, toYAML(job.Status))
		}
	}
	for _, g := range sc.Expect.Pods {
		checkPodGroup(t, c, job, g)
	}
	if sc.Expect.Deleted {
		waitJobGone(t, c, job)
	}
}

// waitConditions waits until the Job has every wanted condition type with
// its status, and returns it.
func waitConditions(t *testing.T, c *kubernetes.Clientset, job *batchv1.Job, want []conditionSummary) *batchv1.Job {
	t.Helper()
	name := job.Name
	if !eventually(scenarioTimeout, func() bool {
		j, err := c.BatchV1().Jobs("default").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("getting job %s: %v", name, err)
		}
		job = j
		for _, w := range want {
			if !slices.ContainsFunc(j.Status.Conditions, func(c batchv1.JobCondition) bool {
				return c.Type == w.Type && c.Status == w.Status
			}) {
				return false
			}
		}
		return true
	}) {
		t.Fatalf("job %s did not reach its conditions in %s; status:\n%s", name, scenarioTimeout, toYAML(job.Status))
	}
	return job
}

// checkStatusInvariants checks what Kubernetes keeps true of every status the
// Job controller has written: terminating, ready and uncountedTerminatedPods
// present (the last one empty), lastProbeTime equal to lastTransitionTime,
// never both Complete and Failed.
func checkStatusInvariants(t *testing.T, st batchv1.JobStatus) {
	t.Helper()
	if st.Terminating == nil || st.Ready == nil {
		t.Errorf("terminating %v, ready %v: want both present", st.Terminating, st.Ready)
	}
	if u := st.UncountedTerminatedPods; u == nil || len(u.Succeeded)+len(u.Failed) != 0 {
		t.Errorf("uncountedTerminatedPods %+v, want present and empty", u)
	}
	terminal := 0
	for _, c := range st.Conditions {
		if !c.LastProbeTime.Equal(&c.LastTransitionTime) {
			t.Errorf("condition %s: lastProbeTime %v, lastTransitionTime %v: want equal", c.Type, c.LastProbeTime, c.LastTransitionTime)
		}
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			terminal++
		}
	}
	if terminal > 1 {
		t.Errorf("conditions %+v: both Complete and Failed", st.Conditions)
	}
}

// summarizeStatus is the statusSummary of st, with the pod names in
// condition messages replaced by {pod}.
func summarizeStatus(st batchv1.JobStatus, pods []string) statusSummary {
	out := statusSummary{
		StartTime:        st.StartTime != nil,
		CompletionTime:   st.CompletionTime != nil,
		Active:           st.Active,
		Succeeded:        st.Succeeded,
		Failed:           st.Failed,
		Terminating:      deref(st.Terminating),
		Ready:            deref(st.Ready),
		CompletedIndexes: st.CompletedIndexes,
		FailedIndexes:    st.FailedIndexes,
	}
	for _, c := range st.Conditions {
		msg := c.Message
		for _, p := range pods {
			msg = strings.ReplaceAll(msg, p, "{pod}")
		}
		out.Conditions = append(out.Conditions, conditionSummary{Type: c.Type, Status: c.Status, Reason: c.Reason, Message: msg})
	}
	return out
}

// checkPodGroup waits until the Job's pods of the group look as stated:
// pods the controller deletes take a moment to go.
func checkPodGroup(t *testing.T, c *kubernetes.Clientset, job *batchv1.Job, want podGroup) {
	t.Helper()
	var got podGroup
	if !eventually(scenarioTimeout, func() bool {
		got = summarizePods(jobPods(t, c, job), want)
		return cmp.Equal(want, got)
	}) {
		t.Errorf("pods after %s (-want,+got):\n%s", scenarioTimeout, cmp.Diff(want, got))
	}
}

// eventually polls cond until it holds (true) or timeout passes (false).
func eventually(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// summarizePods is the podGroup of the pods selected by want, with the
// fields want states.
func summarizePods(pods []corev1.Pod, want podGroup) podGroup {
	got := podGroup{Index: want.Index, Phases: []corev1.PodPhase{}}
	var selected []corev1.Pod
	for _, p := range pods {
		if want.Index == nil || p.Annotations[batchv1.JobCompletionIndexAnnotation] == strconv.Itoa(*want.Index) {
			selected = append(selected, p)
		}
	}
	for _, p := range selected {
		got.Phases = append(got.Phases, p.Status.Phase)
	}
	slices.Sort(got.Phases)
	if want.ExitCodes != nil {
		got.ExitCodes = []int32{}
		for _, p := range selected {
			if cs := p.Status.ContainerStatuses; len(cs) > 0 && cs[0].State.Terminated != nil {
				got.ExitCodes = append(got.ExitCodes, cs[0].State.Terminated.ExitCode)
			}
		}
		slices.Sort(got.ExitCodes)
	}
	if want.Hostnames != nil {
		got.Hostnames = []string{}
		for _, p := range selected {
			got.Hostnames = append(got.Hostnames, p.Spec.Hostname)
		}
		slices.Sort(got.Hostnames)
	}
	got.Annotations = valuesOf(selected, want.Annotations, func(p corev1.Pod) map[string]string { return p.Annotations })
	got.Labels = valuesOf(selected, want.Labels, func(p corev1.Pod) map[string]string { return p.Labels })
	return got
}

// valuesOf collects, for each key of want, the sorted values the pods have
// for it ("" when absent).
func valuesOf(pods []corev1.Pod, want map[string][]string, get func(corev1.Pod) map[string]string) map[string][]string {
	if want == nil {
		return nil
	}
	out := map[string][]string{}
	for key := range want {
		vals := []string{}
		for _, p := range pods {
			vals = append(vals, get(p)[key])
		}
		slices.Sort(vals)
		out[key] = vals
	}
	return out
}

// waitOtherJobFinished runs a one-pod Job to completion: once it is
// complete, the controller has handled the Jobs created before it.
func waitOtherJobFinished(t *testing.T, c *kubernetes.Clientset, name string) {
	t.Helper()
	job := shJob(name, "exit 0", 1, 1, 0, corev1.RestartPolicyNever)
	if _, err := c.BatchV1().Jobs("default").Create(context.Background(), job, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating job %s: %v", name, err)
	}
	waitJob(t, c, "default", name, batchv1.JobComplete, scenarioTimeout)
}

// waitJobGone waits until the Job and its pods are deleted.
func waitJobGone(t *testing.T, c *kubernetes.Clientset, job *batchv1.Job) {
	t.Helper()
	waitFor(t, scenarioTimeout, "job "+job.Name+" and its pods deleted", func() (bool, error) {
		_, err := c.BatchV1().Jobs("default").Get(context.Background(), job.Name, metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return false, err
		}
		return apierrors.IsNotFound(err) && len(jobPods(t, c, job)) == 0, nil
	})
}

func podNames(pods []corev1.Pod) []string {
	out := make([]string, 0, len(pods))
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

func deref(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}

func toYAML(v any) string {
	b, err := yaml.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// Gates let a test decide when a gated Job's containers end: a container
// polls its own Job through the API (the pod uses the host network) until
// the Job carries the annotation test.skiff.sh/<gate>.
const (
	gateRelease = "release" // the container exits 0
	gateStop    = "stop"    // with onTerm set, a stopped container exits 1
)

// gateScript runs until the release gate opens, then exits 0. On SIGTERM it
// exits 143 at once, or, if ON_TERM names a gate, when that gate opens with 1.
const gateScript = `
open() { wget -qO- "$JOB_URL" | grep -q "\"test.skiff.sh/$1\""; }
trap 'if [ -n "$ON_TERM" ]; then until open "$ON_TERM"; do sleep 0.1; done; exit 1; fi; exit 143' TERM
echo trapped
until open ` + gateRelease + `; do sleep 0.1; done
`

// gatedJob is a Job of gated containers.
func gatedJob(s *skiffd, name string, completions, parallelism int32, onTerm string) *batchv1.Job {
	job := shJob(name, gateScript, completions, parallelism, 6, corev1.RestartPolicyNever)
	spec := &job.Spec.Template.Spec
	spec.HostNetwork = true
	spec.TerminationGracePeriodSeconds = ptr(int64(30))
	spec.Containers[0].Env = []corev1.EnvVar{
		{Name: "JOB_URL", Value: s.plainProxy() + "/apis/batch/v1/namespaces/default/jobs/" + name},
		{Name: "ON_TERM", Value: onTerm},
	}
	return job
}

// openGates adds the gates' annotations to the Job.
func openGates(t *testing.T, c *kubernetes.Clientset, name string, gates ...string) {
	t.Helper()
	annotations := map[string]string{}
	for _, g := range gates {
		annotations["test.skiff.sh/"+g] = "true"
	}
	patchJob(t, c, name, types.MergePatchType, map[string]any{"metadata": map[string]any{"annotations": annotations}})
}

func patchJob(t *testing.T, c *kubernetes.Clientset, name string, pt types.PatchType, patch any) {
	t.Helper()
	b, err := json.Marshal(patch)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.BatchV1().Jobs("default").Patch(context.Background(), name, pt, b, metav1.PatchOptions{}); err != nil {
		t.Fatalf("patching job %s with %s: %v", name, b, err)
	}
}

// waitStatus waits until the Job's status satisfies cond and returns the Job.
func waitStatus(t *testing.T, c *kubernetes.Clientset, name, what string, cond func(batchv1.JobStatus) bool) *batchv1.Job {
	t.Helper()
	var job *batchv1.Job
	if !eventually(scenarioTimeout, func() bool {
		j, err := c.BatchV1().Jobs("default").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("getting job %s: %v", name, err)
		}
		job = j
		return cond(j.Status)
	}) {
		t.Fatalf("job %s: no %s after %s; status:\n%s", name, what, scenarioTimeout, toYAML(job.Status))
	}
	return job
}

// countPods counts the Job's pods that are running and not being deleted,
// and all of them.
func countPods(t *testing.T, c *kubernetes.Clientset, job *batchv1.Job) (running, all int) {
	t.Helper()
	pods := jobPods(t, c, job)
	for _, p := range pods {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			running++
		}
	}
	return running, len(pods)
}

func waitRunningPods(t *testing.T, c *kubernetes.Clientset, job *batchv1.Job, running, all int) {
	t.Helper()
	var r, a int
	if !eventually(scenarioTimeout, func() bool {
		r, a = countPods(t, c, job)
		return r == running && a == all
	}) {
		t.Fatalf("job %s: %d running of %d pods after %s, want %d of %d", job.Name, r, a, scenarioTimeout, running, all)
	}
}

// conditionsOf summarizes the Job's conditions.
func conditionsOf(st batchv1.JobStatus) []conditionSummary {
	return summarizeStatus(st, nil).Conditions
}

// TestJobSuspendResumeWhileRunning: suspending a running Job deletes its
// pods without counting them and keeps startTime; resuming starts new pods,
// flips Suspended to False (JobResumed) and resets startTime.
func TestJobSuspendResumeWhileRunning(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.start()
	c := s.client
	job, err := c.BatchV1().Jobs("default").Create(context.Background(), gatedJob(s, "suspend-resume", 2, 2, ""), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitRunningPods(t, c, job, 2, 2)
	started := waitStatus(t, c, job.Name, "startTime", func(st batchv1.JobStatus) bool { return st.StartTime != nil }).Status.StartTime

	patchJob(t, c, job.Name, types.StrategicMergePatchType, map[string]any{"spec": map[string]any{"suspend": true}})
	suspended := waitStatus(t, c, job.Name, "Suspended condition and no active pod", func(st batchv1.JobStatus) bool {
		return hasCondition(st, batchv1.JobSuspended, corev1.ConditionTrue) && st.Active == 0 && deref(st.Terminating) == 0
	})
	waitRunningPods(t, c, job, 0, 0)
	if diff := cmp.Diff([]conditionSummary{{Type: batchv1.JobSuspended, Status: corev1.ConditionTrue, Reason: "JobSuspended", Message: "Job suspended"}}, conditionsOf(suspended.Status)); diff != "" {
		t.Errorf("conditions once suspended (-want,+got):\n%s", diff)
	}
	if st := suspended.Status; st.Failed != 0 || st.Succeeded != 0 || st.StartTime == nil || !st.StartTime.Equal(started) {
		t.Errorf("suspended: failed %d succeeded %d startTime %v, want 0, 0 and %v kept", st.Failed, st.Succeeded, st.StartTime, started)
	}

	// startTime has a one-second resolution: let the clock pass it, so that
	// the reset on resume shows.
	waitFor(t, 2*time.Second, "the next second", func() (bool, error) { return time.Now().After(started.Add(time.Second)), nil })
	patchJob(t, c, job.Name, types.MergePatchType, map[string]any{"spec": map[string]any{"suspend": false}})
	resumed := waitStatus(t, c, job.Name, "Suspended=False", func(st batchv1.JobStatus) bool {
		return hasCondition(st, batchv1.JobSuspended, corev1.ConditionFalse)
	})
	if st := resumed.Status.StartTime; st == nil || !st.After(started.Time) {
		t.Errorf("startTime after resume %v, want later than %v", st, started)
	}
	waitRunningPods(t, c, job, 2, 2)
	openGates(t, c, job.Name, gateRelease)
	done := waitJob(t, c, "default", job.Name, batchv1.JobComplete, scenarioTimeout)
	want := []conditionSummary{
		{Type: batchv1.JobSuspended, Status: corev1.ConditionFalse, Reason: "JobResumed", Message: "Job resumed"},
		{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, Reason: "CompletionsReached", Message: "Reached expected number of succeeded pods"},
		{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, Reason: "CompletionsReached", Message: "Reached expected number of succeeded pods"},
	}
	if diff := cmp.Diff(want, conditionsOf(done.Status)); diff != "" {
		t.Errorf("final conditions (-want,+got):\n%s", diff)
	}
	if st := done.Status; st.Succeeded != 2 || st.Failed != 0 {
		t.Errorf("final succeeded %d failed %d, want 2 and 0", st.Succeeded, st.Failed)
	}
}

// TestJobParallelismPatch: parallelism PATCHed up, down to 0 and up again
// while the Job runs takes effect at once; pods removed by a scale-down are
// not failures.
func TestJobParallelismPatch(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.start()
	c := s.client
	job, err := c.BatchV1().Jobs("default").Create(context.Background(), gatedJob(s, "elastic", 6, 2, ""), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitRunningPods(t, c, job, 2, 2)
	steps := []struct {
		pt          types.PatchType
		parallelism int32
	}{
		{types.StrategicMergePatchType, 4},
		{types.MergePatchType, 0},
		{types.StrategicMergePatchType, 3},
	}
	for _, step := range steps {
		patchJob(t, c, job.Name, step.pt, map[string]any{"spec": map[string]any{"parallelism": step.parallelism}})
		waitStatus(t, c, job.Name, fmt.Sprintf("%d active pods", step.parallelism), func(st batchv1.JobStatus) bool {
			return st.Active == step.parallelism && deref(st.Terminating) == 0
		})
		p := int(step.parallelism)
		waitRunningPods(t, c, job, p, p)
	}
	openGates(t, c, job.Name, gateRelease)
	done := waitJob(t, c, "default", job.Name, batchv1.JobComplete, scenarioTimeout)
	if st := done.Status; st.Succeeded != 6 || st.Failed != 0 {
		t.Errorf("final succeeded %d failed %d, want 6 and 0", st.Succeeded, st.Failed)
	}
}

// TestIndexedJobElastic: an Indexed Job's completions change with its
// parallelism while it runs (elastic Indexed Job): scaling down removes the
// pods of the indexes beyond completions, scaling up adds the new indexes.
func TestIndexedJobElastic(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.start()
	c := s.client
	job := gatedJob(s, "elastic-indexed", 4, 4, "")
	job.Spec.CompletionMode = ptr(batchv1.IndexedCompletion)
	job, err := c.BatchV1().Jobs("default").Create(context.Background(), job, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitRunningPods(t, c, job, 4, 4)
	for _, n := range []int32{2, 3} {
		patchJob(t, c, job.Name, types.StrategicMergePatchType, map[string]any{"spec": map[string]any{"completions": n, "parallelism": n}})
		waitStatus(t, c, job.Name, fmt.Sprintf("%d active pods", n), func(st batchv1.JobStatus) bool {
			return st.Active == n && deref(st.Terminating) == 0
		})
		waitRunningPods(t, c, job, int(n), int(n))
	}
	var indexes []string
	for _, p := range jobPods(t, c, job) {
		indexes = append(indexes, p.Annotations[batchv1.JobCompletionIndexAnnotation])
	}
	slices.Sort(indexes)
	if diff := cmp.Diff([]string{"0", "1", "2"}, indexes); diff != "" {
		t.Errorf("indexes of the pods (-want,+got):\n%s", diff)
	}
	openGates(t, c, job.Name, gateRelease)
	done := waitJob(t, c, "default", job.Name, batchv1.JobComplete, scenarioTimeout)
	if st := done.Status; st.Succeeded != 3 || st.Failed != 0 || st.CompletedIndexes != "0-2" {
		t.Errorf("final succeeded %d failed %d completedIndexes %q, want 3, 0 and 0-2", st.Succeeded, st.Failed, st.CompletedIndexes)
	}
}

// TestJobPodReplacementPolicy: a running pod is deleted and takes its time
// to stop (it waits for the stop gate, then fails). TerminatingOrFailed
// counts it as failed and replaces it at once; Failed waits until it has
// failed, showing it in status.terminating meanwhile.
func TestJobPodReplacementPolicy(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.start()
	c := s.client
	tests := map[string]struct {
		policy batchv1.PodReplacementPolicy
		// the status while the deleted pod is terminating
		active, failed int32
		pods           int
	}{
		"terminating-or-failed": {policy: batchv1.TerminatingOrFailed, active: 1, failed: 1, pods: 2},
		"failed":                {policy: batchv1.Failed, active: 0, failed: 0, pods: 1},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			job := gatedJob(s, name, 1, 1, gateStop)
			job.Spec.PodReplacementPolicy = &tc.policy
			job, err := c.BatchV1().Jobs("default").Create(context.Background(), job, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			waitRunningPods(t, c, job, 1, 1)
			first := jobPods(t, c, job)[0]
			// NOTE: a shell as PID 1 ignores SIGTERM until its trap is
			// set; deleted before that (on a slow machine), the pod
			// exits 0 once released. The script says when it is set.
			waitFor(t, scenarioTimeout, "the pod's SIGTERM trap", func() (bool, error) {
				log, err := c.CoreV1().Pods("default").GetLogs(first.Name, &corev1.PodLogOptions{}).DoRaw(context.Background())
				return err == nil && strings.Contains(string(log), "trapped"), nil
			})
			if err := c.CoreV1().Pods("default").Delete(context.Background(), first.Name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			terminating := waitStatus(t, c, job.Name, "a terminating pod", func(st batchv1.JobStatus) bool {
				return deref(st.Terminating) == 1 && st.Active == tc.active
			})
			if got := terminating.Status.Failed; got != tc.failed {
				t.Errorf("failed while the deleted pod terminates: %d, want %d", got, tc.failed)
			}
			if _, all := countPods(t, c, job); all != tc.pods {
				t.Errorf("%d pods while the deleted pod terminates, want %d", all, tc.pods)
			}
			// NOTE: release opens once the deleted pod has failed: a shell
			// whose SIGTERM is still pending when its loop sees release
			// ends the script (exit 0) without running the trap.
			openGates(t, c, job.Name, gateStop)
			waitStatus(t, c, job.Name, "the deleted pod failed", func(st batchv1.JobStatus) bool {
				return st.Failed == 1 && deref(st.Terminating) == 0
			})
			openGates(t, c, job.Name, gateRelease)
			done := waitJob(t, c, "default", job.Name, batchv1.JobComplete, scenarioTimeout)
			if st := done.Status; st.Succeeded != 1 || st.Failed != 1 || deref(st.Terminating) != 0 {
				t.Errorf("final succeeded %d failed %d terminating %d, want 1, 1 and 0", st.Succeeded, st.Failed, deref(st.Terminating))
			}
		})
	}
}

func hasCondition(st batchv1.JobStatus, t batchv1.JobConditionType, status corev1.ConditionStatus) bool {
	return slices.ContainsFunc(st.Conditions, func(c batchv1.JobCondition) bool { return c.Type == t && c.Status == status })
}

// TestJobTTLAcrossRestart: a finished Job's ttlSecondsAfterFinished runs
// out while skiffd restarts (killed, started again): the Job and its pod are
// still deleted.
func TestJobTTLAcrossRestart(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.start()
	c := s.client
	job := shJob("ttl-restart", "exit 0", 1, 1, 0, corev1.RestartPolicyNever)
	job.Spec.TTLSecondsAfterFinished = ptr(int32(3))
	job, err := c.BatchV1().Jobs("default").Create(context.Background(), job, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitJob(t, c, "default", job.Name, batchv1.JobComplete, scenarioTimeout)
	s.kill()
	s.start()
	waitJobGone(t, c, job)
}
