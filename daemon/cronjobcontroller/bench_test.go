package cronjobcontroller

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/kube"
)

// BenchmarkSync is the cost of one sync of a CronJob with nothing due (one
// write transaction, rolled back as it changes nothing), beside a given
// number of other Jobs in the namespace: the sync reads only the Jobs the
// index says the CronJob controls, so they cost nothing.
func BenchmarkSync(b *testing.B) {
	for _, others := range []int{0, 100, 1000} {
		b.Run(fmt.Sprintf("jobs=%d", others), func(b *testing.B) {
			s, err := db.Open(filepath.Join(b.TempDir(), "skiff.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			if err := s.Create(db.Namespaces, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}}); err != nil {
				b.Fatal(err)
			}
			cj := scheduledCronJob("*/5 * * * *", at("10:01:00"), nil)
			kube.PrepareCronJobForCreate(cj)
			if err := s.Create(db.CronJobs, cj); err != nil {
				b.Fatal(err)
			}
			err = s.Write(func(tx *db.Tx) error {
				for i := range others {
					job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("other-%d", i), Namespace: "ns"},
						Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
							Containers: []corev1.Container{{Name: "c", Image: "busybox:1.35"}}}}}}
					if err := tx.Create(db.Jobs, job); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
			c := New(Config{Store: s, Clock: clocktesting.NewFakeClock(at("10:02:00"))})
			ctx := context.Background()
			b.ResetTimer()
			for range b.N {
				if _, err := c.sync(ctx, key{"ns", "cj"}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
