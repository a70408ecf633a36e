package cronjobcontroller

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

func TestJobIndex(t *testing.T) {
	x := newJobIndex()
	a := scheduledCronJob("* * * * *", at("10:00:00"), nil)
	a.Name, a.UID = "a", "uid-a"
	b := a.DeepCopy()
	b.Name, b.UID = "b", "uid-b"
	job := ownedJob(a, "j", "10:00:00", "")
	bare := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "bare", Namespace: "ns"}}

	steps := []struct {
		name    string
		typ     watch.EventType
		job     *batchv1.Job
		touched []key
		ofA     []string
		ofB     []string
	}{
		{"added", watch.Added, job, []key{{"ns", "a"}}, []string{"j"}, nil},
		{"modified", watch.Modified, job, []key{{"ns", "a"}}, []string{"j"}, nil},
		{"a Job of no CronJob", watch.Added, bare, nil, []string{"j"}, nil},
		{"its controller changed", watch.Modified, ownedJob(b, "j", "10:00:00", ""), []key{{"ns", "a"}, {"ns", "b"}}, nil, []string{"j"}},
		{"deleted", watch.Deleted, ownedJob(b, "j", "10:00:00", ""), []key{{"ns", "b"}}, nil, nil},
	}
	for _, st := range steps {
		touched := x.observe(st.typ, st.job)
		if diff := cmp.Diff(st.touched, touched, cmp.AllowUnexported(key{})); diff != "" {
			t.Errorf("%s: queued (-want,+got):\n%s", st.name, diff)
		}
		for k, want := range map[string][]string{"a": st.ofA, "b": st.ofB} {
			got := x.jobsOf(key{"ns", k})
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("%s: jobs of %s %v, want %v", st.name, k, got, want)
			}
		}
	}
}
