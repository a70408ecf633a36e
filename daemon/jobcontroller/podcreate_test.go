package jobcontroller

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/kube"
)

// createNamespace stores a namespace, terminating when deleting is set.
func createNamespace(t *testing.T, s *db.Store, name string, deleting bool) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if deleting {
		now := metav1.Now()
		ns.DeletionTimestamp = &now
	}
	if err := s.Create(db.Namespaces, ns); err != nil {
		t.Fatal(err)
	}
}

// TestPodsGoThroughTheCreateStrategy: a Job's pod is defaulted, bound and
// given its first status by the pod create strategy, as a bare pod is.
func TestPodsGoThroughTheCreateStrategy(t *testing.T) {
	s := openStore(t)
	createNamespace(t, s, testNS, false)
	startController(t, Config{Store: s, Pods: kube.PodStrategy{NodeName: "node-a", NamespaceLifecycle: true}})
	job := createJob(t, s, newJob("job-s", func(j *batchv1.Job) {
		j.Spec.Template.Spec = corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "c", Image: "busybox",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceEphemeralStorage: resource.MustParse("1Gi")}}}}}
	}))
	pod := waitActivePods(t, s, job.UID, 1)[0]
	got := []any{pod.Spec.NodeName, ptr.Deref(pod.Spec.EnableServiceLinks, false), pod.Spec.DNSPolicy, pod.Spec.SchedulerName,
		pod.Spec.Containers[0].ImagePullPolicy, pod.Status.Phase, pod.Status.QOSClass}
	want := []any{"node-a", true, corev1.DNSClusterFirst, corev1.DefaultSchedulerName,
		corev1.PullAlways, corev1.PodPending, corev1.PodQOSBestEffort}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pod defaults (-want,+got):\n%s", diff)
	}
	if !strings.HasPrefix(pod.Name, "job-s-") || len(pod.Name) != len("job-s-")+5 || pod.GenerateName != "job-s-" {
		t.Errorf("pod name %q generateName %q", pod.Name, pod.GenerateName)
	}
}

// TestRefusedPodCreation: a pod the strategy refuses is not created, is
// not active, is reported as kube's FailedCreate event and retried; in a
// terminating namespace creations stop without a word, as Kubernetes'.
func TestRefusedPodCreation(t *testing.T) {
	t.Run("invalid", func(t *testing.T) {
		s := openStore(t)
		rec := &fakeRecorder{}
		startController(t, Config{Store: s, Recorder: rec})
		// NOTE: the API refuses this template; a Job written straight into
		// the store (or stored by an older release) may still carry it.
		job := createJob(t, s, newJob("job-bad", func(j *batchv1.Job) { j.Spec.Template.Spec.Containers[0].Image = "" }))
		waitFor(t, "refused creations retried", func() error {
			events := rec.recorded()
			if len(events) < 2 {
				return fmt.Errorf("events %q", events)
			}
			for _, ev := range events {
				if !strings.HasPrefix(ev, `Warning FailedCreate Error creating: Pod "job-bad-`) ||
					!strings.HasSuffix(ev, `" is invalid: spec.containers[0].image: Required value`) {
					return fmt.Errorf("event %q", ev)
				}
			}
			return nil
		})
		if pods := podsOf(t, s, job.UID); len(pods) != 0 {
			t.Errorf("%d pods created", len(pods))
		}
		waitJob(t, s, "job-bad", func(st batchv1.JobStatus) error {
			if st.StartTime == nil || st.Active != 0 {
				return fmt.Errorf("startTime %v active %d", st.StartTime, st.Active)
			}
			return nil
		})
	})
	t.Run("terminating namespace", func(t *testing.T) {
		s := openStore(t)
		rec := &fakeRecorder{}
		createNamespace(t, s, testNS, true)
		startController(t, Config{Store: s, Recorder: rec, Pods: kube.PodStrategy{NamespaceLifecycle: true}})
		job := createJob(t, s, newJob("job-t"))
		// NOTE: Kubernetes' manageJob leaves such a creation in active.
		waitJob(t, s, "job-t", func(st batchv1.JobStatus) error {
			if st.StartTime == nil || st.Active != 1 {
				return fmt.Errorf("startTime %v active %d", st.StartTime, st.Active)
			}
			return nil
		})
		if pods := podsOf(t, s, job.UID); len(pods) != 0 {
			t.Errorf("%d pods created", len(pods))
		}
		if events := rec.recorded(); len(events) != 0 {
			t.Errorf("events %q", events)
		}
	})
}
