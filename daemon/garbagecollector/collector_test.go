package garbagecollector

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
)

const ns = "default"

func openStore(t *testing.T) *db.Store {
	t.Helper()
	s, err := db.Open(filepath.Join(t.TempDir(), "skiff.db"))
	if err != nil {
		t.Fatalf("opening store: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func startCollector(t *testing.T, cfg Config) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- New(cfg).Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("collector Run: %v", err)
		}
	})
}

func createJob(t *testing.T, s *db.Store, name string, finalizers ...string) *batchv1.Job {
	t.Helper()
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: uuid.NewUUID(), Finalizers: finalizers}}
	if err := s.Create(db.Jobs, job); err != nil {
		t.Fatalf("creating job: %v", err)
	}
	return job
}

// createPod stores a pod owned by the given owners; scheduled pods get a
// 30s grace period when deleted, unscheduled ones none.
func createPod(t *testing.T, s *db.Store, name string, scheduled bool, owners ...metav1.OwnerReference) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, OwnerReferences: owners},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](30),
			Containers:                    []corev1.Container{{Name: "c", Image: "busybox"}},
		},
	}
	if scheduled {
		p.Spec.NodeName = "node"
		p.Status.Phase = corev1.PodRunning
	}
	if err := s.Create(db.Pods, p); err != nil {
		t.Fatalf("creating pod: %v", err)
	}
	return p
}

func jobRef(name string, uid types.UID) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: "batch/v1", Kind: "Job", Name: name, UID: uid,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}
}

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

func gone(s *db.Store, r db.Resource, name string) func() error {
	return func() error {
		_, err := s.Get(r, ns, name)
		if errors.Is(err, db.ErrNotFound) {
			return nil
		}
		return fmt.Errorf("%s %s still stored (err %v)", r.Name, name, err)
	}
}

func deleting(s *db.Store, name string, grace int64) func() error {
	return func() error {
		obj, err := s.Get(db.Pods, ns, name)
		if err != nil {
			return err
		}
		p := obj.(*corev1.Pod)
		if p.DeletionTimestamp == nil || ptr.Deref(p.DeletionGracePeriodSeconds, -1) != grace {
			return fmt.Errorf("pod %s deletion %v grace %v", name, p.DeletionTimestamp, p.DeletionGracePeriodSeconds)
		}
		return nil
	}
}

func TestBackgroundDeletesPodsOfDeletedJob(t *testing.T) {
	s := openStore(t)
	startCollector(t, Config{Store: s})
	job := createJob(t, s, "job-a")
	other := createJob(t, s, "job-b")
	createPod(t, s, "a-pending", false, jobRef(job.Name, job.UID))
	createPod(t, s, "a-running", true, jobRef(job.Name, job.UID))
	createPod(t, s, "b-running", true, jobRef(other.Name, other.UID))

	if _, err := s.Delete(db.Jobs, ns, job.Name); err != nil {
		t.Fatalf("deleting job: %v", err)
	}
	waitFor(t, "unscheduled pod deleted", gone(s, db.Pods, "a-pending"))
	waitFor(t, "running pod deleted gracefully", deleting(s, "a-running", 30))

	obj, err := s.Get(db.Pods, ns, "b-running")
	if err != nil || obj.GetDeletionTimestamp() != nil {
		t.Errorf("pod of a live job: %v, err %v; want untouched", obj, err)
	}
}

func TestPodsWhoseOwnerIsMissingAtStart(t *testing.T) {
	s := openStore(t)
	live := createJob(t, s, "job-live")
	createPod(t, s, "owned", true, jobRef(live.Name, live.UID))
	createPod(t, s, "not-a-job-owner", false, metav1.OwnerReference{APIVersion: "v1", Kind: "ReplicationController", Name: "rc", UID: "x"})
	createPod(t, s, "dangling", false, jobRef("job-gone", "gone-uid"))
	// A Job of the same name but another uid is not the owner.
	createJob(t, s, "job-new")
	createPod(t, s, "replaced-owner", true, jobRef("job-new", "old-uid"))

	startCollector(t, Config{Store: s})
	waitFor(t, "dangling pod deleted", gone(s, db.Pods, "dangling"))
	waitFor(t, "pod of replaced job deleted", deleting(s, "replaced-owner", 30))
	for _, name := range []string{"owned", "not-a-job-owner"} {
		obj, err := s.Get(db.Pods, ns, name)
		if err != nil || obj.GetDeletionTimestamp() != nil {
			t.Errorf("pod %s: deletion %v err %v; want untouched", name, obj.GetDeletionTimestamp(), err)
		}
	}
}

func TestForegroundDeletionWaitsForDependents(t *testing.T) {
	s := openStore(t)
	startCollector(t, Config{Store: s})
	job := createJob(t, s, "job-fg", metav1.FinalizerDeleteDependents)
	createPod(t, s, "fg-pending", false, jobRef(job.Name, job.UID))
	createPod(t, s, "fg-running", true, jobRef(job.Name, job.UID))

	// The API server's DELETE with propagationPolicy Foreground.
	if _, _, err := s.DeleteGracefully(db.Jobs, ns, job.Name, 0); err != nil {
		t.Fatalf("deleting job: %v", err)
	}
	waitFor(t, "unscheduled pod deleted", gone(s, db.Pods, "fg-pending"))
	waitFor(t, "running pod deleted gracefully", deleting(s, "fg-running", 30))
	if _, err := s.Get(db.Jobs, ns, job.Name); err != nil {
		t.Fatalf("job went before its dependents: %v", err)
	}

	// The pod agent stops the running pod and removes it.
	if _, _, err := s.DeleteGracefully(db.Pods, ns, "fg-running", 0); err != nil {
		t.Fatalf("removing pod: %v", err)
	}
	waitFor(t, "job deleted", gone(s, db.Jobs, job.Name))
}
