package jobcontroller

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/kube"
)

// The controller tests run the controller against a real store and play
// the pod agent (and the API server) by writing objects into it.

const testNS = "default"

func openStore(t *testing.T) *db.Store {
	t.Helper()
	s, err := db.Open(filepath.Join(t.TempDir(), "skiff.db"))
	if err != nil {
		t.Fatalf("opening store: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// startController runs a controller until the returned stop is called (or
// the test ends).
func startController(t *testing.T, cfg Config) (stop func()) {
	t.Helper()
	if cfg.BackoffBase == 0 {
		cfg.BackoffBase = time.Millisecond
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- New(cfg).Run(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("controller Run: %v", err)
		}
	}
	t.Cleanup(stop)
	return stop
}

// newJob is a Job as the API server stores it after defaulting.
func newJob(name string, mutate ...func(*batchv1.Job)) *batchv1.Job {
	uid := uuid.NewUUID()
	labels := map[string]string{
		batchv1.ControllerUidLabel: string(uid),
		batchv1.JobNameLabel:       name,
		"controller-uid":           string(uid),
		"job-name":                 name,
	}
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS, UID: uid, Labels: labels},
		Spec: batchv1.JobSpec{
			Parallelism:          ptr.To[int32](1),
			Completions:          ptr.To[int32](1),
			BackoffLimit:         ptr.To[int32](6),
			CompletionMode:       ptr.To(batchv1.NonIndexedCompletion),
			Suspend:              ptr.To(false),
			ManualSelector:       ptr.To(false),
			PodReplacementPolicy: ptr.To(batchv1.TerminatingOrFailed),
			Selector:             &metav1.LabelSelector{MatchLabels: map[string]string{batchv1.ControllerUidLabel: string(uid)}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				// NOTE: defaulted as the API stores a template, and with
				// enableServiceLinks set, so that the pod create strategy
				// has nothing to add to a pod made from it.
				Spec: corev1.PodSpec{
					RestartPolicy:                 corev1.RestartPolicyNever,
					TerminationGracePeriodSeconds: ptr.To[int64](30),
					DNSPolicy:                     corev1.DNSClusterFirst,
					SecurityContext:               &corev1.PodSecurityContext{},
					SchedulerName:                 corev1.DefaultSchedulerName,
					EnableServiceLinks:            ptr.To(true),
					Containers: []corev1.Container{{Name: "c", Image: "busybox:1.35",
						ImagePullPolicy:          corev1.PullIfNotPresent,
						TerminationMessagePath:   corev1.TerminationMessagePathDefault,
						TerminationMessagePolicy: corev1.TerminationMessageReadFile}},
				},
			},
		},
	}
	for _, m := range mutate {
		m(job)
	}
	return job
}

func createJob(t *testing.T, s *db.Store, job *batchv1.Job) *batchv1.Job {
	t.Helper()
	if err := s.Create(db.Jobs, job); err != nil {
		t.Fatalf("creating job: %v", err)
	}
	return job
}

func getJobT(t *testing.T, s *db.Store, name string) *batchv1.Job {
	t.Helper()
	obj, err := s.Get(db.Jobs, testNS, name)
	if err != nil {
		t.Fatalf("getting job %s: %v", name, err)
	}
	return obj.(*batchv1.Job)
}

// modifyJob changes the Job's spec as a user would.
func modifyJob(t *testing.T, s *db.Store, name string, fn func(*batchv1.Job)) {
	t.Helper()
	if _, err := s.Modify(db.Jobs, testNS, name, func(o db.Object) error {
		fn(o.(*batchv1.Job))
		return nil
	}); err != nil {
		t.Fatalf("modifying job %s: %v", name, err)
	}
}

// podsOf lists the pods controlled by the Job uid.
func podsOf(t *testing.T, s *db.Store, uid types.UID) []*corev1.Pod {
	t.Helper()
	objs, _, err := s.List(db.Pods, testNS, nil)
	if err != nil {
		t.Fatalf("listing pods: %v", err)
	}
	var out []*corev1.Pod
	for _, o := range objs {
		p := o.(*corev1.Pod)
		if ref := metav1.GetControllerOf(p); ref != nil && ref.UID == uid {
			out = append(out, p)
		}
	}
	return out
}

func filterPods(pods []*corev1.Pod, keep func(*corev1.Pod) bool) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range pods {
		if keep(p) {
			out = append(out, p)
		}
	}
	return out
}

func isActivePod(p *corev1.Pod) bool { return !kube.IsPodTerminal(p) && p.DeletionTimestamp == nil }

// waitFor polls cond until it holds, failing the test after 10 seconds.
func waitFor(t *testing.T, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitActivePods waits until the Job has n active pods and returns them.
func waitActivePods(t *testing.T, s *db.Store, uid types.UID, n int) []*corev1.Pod {
	t.Helper()
	var active []*corev1.Pod
	waitFor(t, fmt.Sprintf("%d active pods", n), func() error {
		active = filterPods(podsOf(t, s, uid), isActivePod)
		if len(active) != n {
			return fmt.Errorf("%d active pods", len(active))
		}
		return nil
	})
	return active
}

// waitJob waits until the Job's status satisfies check.
func waitJob(t *testing.T, s *db.Store, name string, check func(batchv1.JobStatus) error) *batchv1.Job {
	t.Helper()
	var job *batchv1.Job
	waitFor(t, "job "+name+" status", func() error {
		job = getJobT(t, s, name)
		return check(job.Status)
	})
	return job
}

func hasCondition(t batchv1.JobConditionType) func(batchv1.JobStatus) error {
	return func(st batchv1.JobStatus) error {
		if !kube.IsJobConditionTrue(st.Conditions, t) {
			return fmt.Errorf("no %s condition in %+v", t, st)
		}
		return nil
	}
}

// modifyPod changes a pod as the pod agent would.
func modifyPod(t *testing.T, s *db.Store, p *corev1.Pod, fn func(*corev1.Pod)) {
	t.Helper()
	if _, err := s.Modify(db.Pods, p.Namespace, p.Name, func(o db.Object) error {
		fn(o.(*corev1.Pod))
		return nil
	}); err != nil {
		t.Fatalf("modifying pod %s: %v", p.Name, err)
	}
}

// runPod schedules the pod and reports it running (ready or not).
func runPod(t *testing.T, s *db.Store, p *corev1.Pod, ready bool, restarts int32) {
	t.Helper()
	modifyPod(t, s, p, func(p *corev1.Pod) {
		p.Spec.NodeName = "node"
		p.Status.Phase = corev1.PodRunning
		status := corev1.ConditionFalse
		if ready {
			status = corev1.ConditionTrue
		}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{
			Name: "c", RestartCount: restarts, Ready: ready,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
		}}
	})
}

// finishPod reports the pod's container ended at `at` with exitCode.
func finishPod(t *testing.T, s *db.Store, p *corev1.Pod, exitCode int32, at time.Time) {
	t.Helper()
	modifyPod(t, s, p, func(p *corev1.Pod) {
		p.Spec.NodeName = "node"
		p.Status.Phase = corev1.PodSucceeded
		reason := "Completed"
		if exitCode != 0 {
			p.Status.Phase = corev1.PodFailed
			reason = "Error"
		}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{
			Name: "c",
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: exitCode, Reason: reason, FinishedAt: metav1.NewTime(at),
			}},
		}}
	})
}

// stopDeletedPod plays the pod agent for a pod being deleted: its container
// ends and the pod is removed once the finalizers allow.
func stopDeletedPod(t *testing.T, s *db.Store, p *corev1.Pod) {
	t.Helper()
	finishPod(t, s, p, 137, time.Now())
	if _, _, err := s.DeleteGracefully(db.Pods, p.Namespace, p.Name, 0); err != nil && !errors.Is(err, db.ErrNotFound) {
		t.Fatalf("deleting pod %s: %v", p.Name, err)
	}
}

func metav1Now() metav1.Time { return metav1.NewTime(time.Now()) }
