package jobcontroller

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/db"
)

// manualSelectorJob selects pods labelled app=<app>, as a user's
// manualSelector Job does.
func manualSelectorJob(name, app string, mutate ...func(*batchv1.Job)) *batchv1.Job {
	return newJob(name, append([]func(*batchv1.Job){func(j *batchv1.Job) {
		labels := map[string]string{"app": app}
		j.Labels = labels
		j.Spec.ManualSelector = ptr.To(true)
		j.Spec.Selector = &metav1.LabelSelector{MatchLabels: labels}
		j.Spec.Template.Labels = labels
	}}, mutate...)...)
}

// orphanPod is a pod no controller owns.
func orphanPod(name string, labels map[string]string, mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS, Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox:1.35"}}},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func createPod(t *testing.T, s *db.Store, p *corev1.Pod) *corev1.Pod {
	t.Helper()
	if err := s.Create(db.Pods, p); err != nil {
		t.Fatalf("creating pod %s: %v", p.Name, err)
	}
	return p
}

func getPodT(t *testing.T, s *db.Store, name string) *corev1.Pod {
	t.Helper()
	obj, err := s.Get(db.Pods, testNS, name)
	if err != nil {
		t.Fatalf("getting pod %s: %v", name, err)
	}
	return obj.(*corev1.Pod)
}

func TestClaimPodsAdoptsOnlyAdoptableMatchingOrphans(t *testing.T) {
	other := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "rs-uid", Controller: ptr.To(true)}
	tests := []struct {
		name        string
		deletingJob bool
		pod         *corev1.Pod
		wantAdopted bool
	}{
		{name: "matching orphan", pod: orphanPod("p", map[string]string{"app": "x"}), wantAdopted: true},
		{name: "labels do not match", pod: orphanPod("p", map[string]string{"app": "y"})},
		{name: "controlled by another", pod: orphanPod("p", map[string]string{"app": "x"}, func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{other}
		})},
		{name: "pod being deleted", pod: orphanPod("p", map[string]string{"app": "x"}, func(p *corev1.Pod) {
			p.Finalizers = []string{"test/hold"}
		})},
		{name: "job being deleted", deletingJob: true, pod: orphanPod("p", map[string]string{"app": "x"})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openStore(t)
			job := createJob(t, s, manualSelectorJob("job", "x"))
			if tt.deletingJob {
				job.DeletionTimestamp = ptr.To(metav1Now())
			}
			createPod(t, s, tt.pod)
			if tt.name == "pod being deleted" {
				if _, _, err := s.DeleteGracefully(db.Pods, testNS, "p", 30); err != nil {
					t.Fatalf("deleting pod: %v", err)
				}
			}
			before := getPodT(t, s, "p")

			var adopted []*corev1.Pod
			err := s.Write(func(tx *db.Tx) error {
				var err error
				_, adopted, _, err = claimPods(tx, job, nil, map[string]uint64{"p": 1})
				return err
			})
			if err != nil {
				t.Fatalf("claimPods: %v", err)
			}
			got := getPodT(t, s, "p")
			if !tt.wantAdopted {
				if len(adopted) != 0 {
					t.Errorf("adopted %d pods, want none", len(adopted))
				}
				if diff := cmp.Diff(podMeta(before), podMeta(got)); diff != "" {
					t.Errorf("pod metadata changed (-before +after):\n%s", diff)
				}
				return
			}
			want := wantPodMeta(job)
			want.GenerateName, want.Labels = "", tt.pod.Labels
			if diff := cmp.Diff(want, podMeta(got)); diff != "" {
				t.Errorf("adopted pod metadata (-want +got):\n%s", diff)
			}
			if len(adopted) != 1 {
				t.Errorf("adopted %d pods, want 1", len(adopted))
			}
		})
	}
}

func TestJobAdoptsMatchingOrphanAndCountsIt(t *testing.T) {
	s := openStore(t)
	createPod(t, s, orphanPod("orphan", map[string]string{"app": "x"}, func(p *corev1.Pod) {
		p.Spec.NodeName = "node"
		p.Status.Phase = corev1.PodRunning
	}))
	createPod(t, s, orphanPod("stranger", map[string]string{"app": "y"}))
	startController(t, Config{Store: s})
	job := createJob(t, s, manualSelectorJob("job", "x"))

	waitJob(t, s, "job", func(st batchv1.JobStatus) error {
		if st.Active != 1 {
			return fmt.Errorf("active %d", st.Active)
		}
		return nil
	})
	owned := podsOf(t, s, job.UID)
	if diff := cmp.Diff([]string{"orphan"}, namesOf(owned)); diff != "" {
		t.Fatalf("pods of the job (-want +got):\n%s", diff)
	}
	if !hasTrackingFinalizer(owned[0]) {
		t.Errorf("adopted pod has no tracking finalizer: %v", owned[0].Finalizers)
	}

	finishPod(t, s, owned[0], 0, time.Now())
	got := waitJob(t, s, "job", hasCondition(batchv1.JobComplete))
	if got.Status.Succeeded != 1 || got.Status.Active != 0 {
		t.Errorf("succeeded %d active %d, want 1 and 0", got.Status.Succeeded, got.Status.Active)
	}
	if p := getPodT(t, s, "orphan"); hasTrackingFinalizer(p) {
		t.Errorf("counted pod keeps the tracking finalizer")
	}
	if p := getPodT(t, s, "stranger"); len(p.OwnerReferences) != 0 {
		t.Errorf("non-matching pod was adopted: %v", p.OwnerReferences)
	}
}

func TestJobReleasesPodThatStopsMatchingAndAdoptsItBack(t *testing.T) {
	s := openStore(t)
	startController(t, Config{Store: s})
	job := createJob(t, s, manualSelectorJob("job", "x"))
	first := waitActivePods(t, s, job.UID, 1)[0]
	runPod(t, s, first, true, 0)

	modifyPod(t, s, first, func(p *corev1.Pod) { p.Labels = map[string]string{"app": "y"} })
	waitFor(t, "release of "+first.Name, func() error {
		p := getPodT(t, s, first.Name)
		if len(p.OwnerReferences) != 0 || hasTrackingFinalizer(p) {
			return fmt.Errorf("ownerReferences %v finalizers %v", p.OwnerReferences, p.Finalizers)
		}
		return nil
	})
	// The released pod no longer counts: the Job replaces it.
	replacement := waitActivePods(t, s, job.UID, 1)[0]
	if replacement.Name == first.Name {
		t.Fatalf("the released pod is still the Job's")
	}

	// Matching again, the orphan is adopted again.
	modifyPod(t, s, first, func(p *corev1.Pod) { p.Labels = map[string]string{"app": "x"} })
	waitFor(t, "adoption of "+first.Name, func() error {
		p := getPodT(t, s, first.Name)
		if ref := metav1.GetControllerOf(p); ref == nil || ref.UID != job.UID {
			return fmt.Errorf("controller %v", ref)
		}
		return nil
	})
}

// A Job being deleted adopts nothing; another Job selecting the same pods,
// created after the orphan appeared, adopts it.
func TestDeletingJobAdoptsNothing(t *testing.T) {
	s := openStore(t)
	startController(t, Config{Store: s})
	deleting := createJob(t, s, manualSelectorJob("deleting", "x", func(j *batchv1.Job) {
		j.Finalizers = []string{"test/hold"}
		j.Spec.Suspend = ptr.To(true)
	}))
	if _, _, err := s.DeleteGracefully(db.Jobs, testNS, "deleting", 0); err != nil {
		t.Fatalf("deleting job: %v", err)
	}
	createPod(t, s, orphanPod("orphan", map[string]string{"app": "x"}))
	other := createJob(t, s, manualSelectorJob("other", "x"))

	waitFor(t, "adoption of the orphan", func() error {
		if ref := metav1.GetControllerOf(getPodT(t, s, "orphan")); ref == nil {
			return errors.New("no controller")
		}
		return nil
	})
	ref := metav1.GetControllerOf(getPodT(t, s, "orphan"))
	if ref.UID != other.UID {
		t.Errorf("orphan adopted by %s (%s), want %s (the Job being deleted is %s)", ref.Name, ref.UID, other.UID, deleting.UID)
	}
}

func TestAdoptIndexPendingCandidates(t *testing.T) {
	x := map[string]string{"app": "x"}
	owned := func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{Kind: "Job", Name: "j", UID: "u", Controller: ptr.To(true)}}
	}
	tests := []struct {
		name     string
		run      func(ax *adoptIndex)
		wantJobX []string // candidates of job x
	}{
		{name: "orphan before the job", run: func(ax *adoptIndex) {
			ax.observePod(orphanPod("a", x))
			ax.observeJob(manualSelectorJob("x", "x"))
		}, wantJobX: []string{"a"}},
		{name: "orphan after the job", run: func(ax *adoptIndex) {
			ax.observeJob(manualSelectorJob("x", "x"))
			ax.observePod(orphanPod("a", x))
			ax.observePod(orphanPod("b", map[string]string{"app": "y"}))
		}, wantJobX: []string{"a"}},
		{name: "owned pod is no candidate", run: func(ax *adoptIndex) {
			ax.observePod(orphanPod("a", x, owned))
			ax.observeJob(manualSelectorJob("x", "x"))
		}},
		{name: "pod in another namespace", run: func(ax *adoptIndex) {
			ax.observePod(orphanPod("a", x, func(p *corev1.Pod) { p.Namespace = "other" }))
			ax.observeJob(manualSelectorJob("x", "x"))
		}},
		{name: "deleted pod stays pending until checked", run: func(ax *adoptIndex) {
			ax.observeJob(manualSelectorJob("x", "x"))
			ax.observePod(orphanPod("a", x))
			ax.forgetPod(testNS, "a")
		}, wantJobX: []string{"a"}},
		{name: "checked candidates leave", run: func(ax *adoptIndex) {
			ax.observeJob(manualSelectorJob("x", "x"))
			ax.observePod(orphanPod("a", x))
			ax.checked(jobKey{testNS, "x"}, ax.candidates(jobKey{testNS, "x"}))
		}},
		{name: "candidate seen again after the check stays", run: func(ax *adoptIndex) {
			ax.observeJob(manualSelectorJob("x", "x"))
			ax.observePod(orphanPod("a", x))
			seen := ax.candidates(jobKey{testNS, "x"})
			ax.observePod(orphanPod("a", x))
			ax.checked(jobKey{testNS, "x"}, seen)
		}, wantJobX: []string{"a"}},
		{name: "unchanged selector rescans nothing", run: func(ax *adoptIndex) {
			ax.observeJob(manualSelectorJob("x", "x"))
			ax.observePod(orphanPod("a", x))
			ax.checked(jobKey{testNS, "x"}, ax.candidates(jobKey{testNS, "x"}))
			ax.observeJob(manualSelectorJob("x", "x"))
		}},
		{name: "deleted job forgets its candidates", run: func(ax *adoptIndex) {
			ax.observeJob(manualSelectorJob("x", "x"))
			ax.observePod(orphanPod("a", x))
			ax.forgetJob(jobKey{testNS, "x"})
			ax.observePod(orphanPod("b", x))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ax := newAdoptIndex()
			tt.run(ax)
			var got []string
			for name := range ax.candidates(jobKey{testNS, "x"}) {
				got = append(got, name)
			}
			if diff := cmp.Diff(tt.wantJobX, got); diff != "" {
				t.Errorf("candidates of job x (-want +got):\n%s", diff)
			}
		})
	}
}
