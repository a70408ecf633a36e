package db

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// jobPod is a Pod as the Job controller creates it, for realistic sizes.
func jobPod(i int) *corev1.Pod {
	uid := "0f6a3c2e-58c4-4a51-9b9e-2f1d3c4b5a69"
	p := newPod("default", "", map[string]string{
		"batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": "job-a",
		"controller-uid": uid, "job-name": "job-a",
	})
	p.Name = fmt.Sprintf("job-a-%05d", i)
	p.Finalizers = []string{"batch.kubernetes.io/job-tracking"}
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "job-a", UID: "u"}}
	p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "2"}}
	p.Spec.NodeName = "node"
	return p
}

func BenchmarkCreatePod(b *testing.B) {
	s, _ := openStore(b)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if err := s.Create(Pods, jobPod(i)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkUpdatePodStatus(b *testing.B) {
	s, _ := openStore(b)
	mustCreate(b, s, Pods, jobPod(0))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		_, err := s.Modify(Pods, "default", "job-a-00000", func(obj Object) error {
			p := obj.(*corev1.Pod)
			p.Status.Phase = corev1.PodRunning
			p.Status.Conditions = []corev1.PodCondition{{
				Type: corev1.PodReady, Status: corev1.ConditionTrue,
				LastTransitionTime: metav1.NewTime(time.Unix(int64(i), 0)),
			}}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkListJobPods lists one Job's pods by label among 5000 in the namespace.
func BenchmarkListJobPods(b *testing.B) {
	s, _ := openStore(b)
	if err := s.Write(func(tx *Tx) error {
		for i := range 5000 {
			p := jobPod(i)
			if i%2 == 1 { // half belong to another job
				p.Labels["batch.kubernetes.io/controller-uid"] = "other"
			}
			if err := tx.Create(Pods, p); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	sel := labels.SelectorFromSet(labels.Set{"batch.kubernetes.io/controller-uid": "0f6a3c2e-58c4-4a51-9b9e-2f1d3c4b5a69"})
	b.ReportAllocs()
	for b.Loop() {
		objs, _, err := s.List(Pods, "default", sel)
		if err != nil || len(objs) != 2500 {
			b.Fatalf("List: %d objects, %v", len(objs), err)
		}
	}
}

// fillPods writes n Job pods in one transaction.
func fillPods(b *testing.B, s *Store, n int) {
	b.Helper()
	if err := s.Write(func(tx *Tx) error {
		for i := range n {
			if err := tx.Create(Pods, jobPod(i)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkBackup copies a store of 5000 pods to a file (as `skiffd
// backup` does, with its fsync).
func BenchmarkBackup(b *testing.B) {
	s, _ := openStore(b)
	fillPods(b, s, 5000)
	path := filepath.Join(b.TempDir(), "backup.db")
	b.ReportAllocs()
	for b.Loop() {
		f, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Backup(context.Background(), f, func(size int64, _ uint64) { b.SetBytes(size) }); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
}

// BenchmarkCreatePodDuringBackups is BenchmarkCreatePod while backups of
// a 5000-pod store run one after the other: what a backup costs writers.
func BenchmarkCreatePodDuringBackups(b *testing.B) {
	s, _ := openStore(b)
	fillPods(b, s, 5000)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			_ = s.Backup(ctx, io.Discard, nil)
		}
	}()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if err := s.Create(Pods, jobPod(5000+i)); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	cancel()
	<-done
}

// BenchmarkListStored10000Pods copies 10000 Job pods out of a read
// transaction, as the API's JSON list of them does: into a buffer reused
// from one list to the next.
func BenchmarkListStored10000Pods(b *testing.B) {
	s, _ := openStore(b)
	fillPods(b, s, 10000)
	var buf []byte
	buffer := func(n int) []byte {
		if cap(buf) < n {
			buf = make([]byte, 0, n)
		}
		return buf
	}
	b.ReportAllocs()
	for b.Loop() {
		objs, _, err := s.ListStoredInto(buffer, Pods, "default", nil, 0)
		if err != nil || len(objs) != 10000 {
			b.Fatalf("ListStoredInto: %d objects, %v", len(objs), err)
		}
	}
}
