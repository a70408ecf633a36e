//go:build integration

package daemon_test

import (
	"context"
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
// Exit codes, annotations and labels are compared only when stated.
type podGroup struct {
	Index       *int                `json:"index,omitempty"`
	Phases      []corev1.PodPhase   `json:"phases"`
	ExitCodes   []int32             `json:"exitCodes,omitempty"`
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
