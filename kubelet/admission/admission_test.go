package admission

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func TestInsufficient(t *testing.T) {
	alloc := Allocatable{CPU: resource.MustParse("2"), Memory: resource.MustParse("1Gi"), Storage: resource.MustParse("10Gi"), Pods: 3}
	tests := map[string]struct {
		req, used corev1.ResourceList
		pods      int
		want      []string
	}{
		"fits":                 {req: rl("cpu", "1", "memory", "512Mi"), used: rl("cpu", "1", "memory", "512Mi"), want: nil},
		"best effort fits":     {req: rl(), used: rl("cpu", "2", "memory", "1Gi"), want: nil},
		"memory":               {req: rl("memory", "600Mi"), used: rl("memory", "512Mi"), want: []string{"Insufficient memory"}},
		"cpu and memory":       {req: rl("cpu", "1500m", "memory", "2Gi"), used: rl("cpu", "1"), want: []string{"Insufficient cpu", "Insufficient memory"}},
		"too many pods":        {req: rl(), pods: 3, want: []string{"Too many pods"}},
		"bigger than the node": {req: rl("cpu", "3"), want: []string{"Insufficient cpu"}},
		"storage fits":         {req: rl("ephemeral-storage", "4Gi"), used: rl("ephemeral-storage", "6Gi"), want: nil},
		"storage":              {req: rl("ephemeral-storage", "5Gi"), used: rl("ephemeral-storage", "6Gi"), want: []string{"Insufficient ephemeral-storage"}},
		"storage beyond node":  {req: rl("ephemeral-storage", "11Gi"), want: []string{"Insufficient ephemeral-storage"}},
		"all three":            {req: rl("cpu", "3", "memory", "2Gi", "ephemeral-storage", "11Gi"), want: []string{"Insufficient cpu", "Insufficient memory", "Insufficient ephemeral-storage"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := Insufficient(tc.req, tc.used, tc.pods, alloc)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
		})
	}
}

func TestUnschedulableMessage(t *testing.T) {
	tests := map[string]struct {
		reasons []string
		want    string
	}{
		"memory":  {[]string{"Insufficient memory"}, "0/1 nodes are available: 1 Insufficient memory."},
		"storage": {[]string{"Insufficient ephemeral-storage"}, "0/1 nodes are available: 1 Insufficient ephemeral-storage."},
		"sorted":  {[]string{"Too many pods", "Insufficient memory", "Insufficient cpu"}, "0/1 nodes are available: 1 Insufficient cpu, 1 Insufficient memory, 1 Too many pods."},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := UnschedulableMessage(tc.reasons); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func podRequesting(uid string, created time.Duration, cpu string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			UID: types.UID(uid), Name: uid, Namespace: "default",
			CreationTimestamp: metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(created)),
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: rl("cpu", cpu)}}}},
	}
}

func admitted(t *Ticket) bool {
	select {
	case <-t.admitted:
		return true
	default:
		return false
	}
}

func TestScheduler(t *testing.T) {
	s := NewScheduler(Allocatable{CPU: resource.MustParse("2"), Memory: resource.MustParse("1Gi")})
	old := podRequesting("old", 0, "1")
	s.Bind(old.UID, &old.Spec) // recovered before the scheduler starts

	// Queued before start: nothing is admitted yet, in any order.
	late := s.Enqueue(podRequesting("late", 3*time.Second, "500m"))
	big := s.Enqueue(podRequesting("big", time.Second, "1500m"))
	small := s.Enqueue(podRequesting("small", 2*time.Second, "500m"))
	if admitted(late) || admitted(big) || admitted(small) {
		t.Fatal("admitted before start")
	}
	s.Start()
	// Creation order: big does not fit beside old, small and late do.
	if admitted(big) || !admitted(small) || !admitted(late) {
		t.Fatalf("after start: big %v small %v late %v, want false true true", admitted(big), admitted(small), admitted(late))
	}
	if diff := cmp.Diff([]string{"Insufficient cpu"}, s.WhyWaiting(big)); diff != "" {
		t.Errorf("why big waits (-want,+got):\n%s", diff)
	}
	s.Release(old.UID)
	if admitted(big) {
		t.Fatal("big admitted with 1 cpu in use by small and late")
	}
	s.Release(small.uid)
	s.Release(late.uid)
	if !admitted(big) {
		t.Fatal("big not admitted once the node is free")
	}
	again := s.Enqueue(podRequesting("big", time.Second, "1500m"))
	if !admitted(again) {
		t.Error("a bound pod asking again must be admitted at once")
	}
	gone := s.Enqueue(podRequesting("gone", 4*time.Second, "1"))
	s.Release(gone.uid) // deleted while waiting
	s.Release(big.uid)
	if admitted(gone) {
		t.Error("a released ticket was admitted")
	}
}

// BenchmarkSchedulerFlood: 10000 pods that never fit ask for room and go
// away again, while 100 fitting pods come and go (a flood of waiting pods
// must cost each admission and release little).
func BenchmarkSchedulerFlood(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		s := NewScheduler(Allocatable{CPU: resource.MustParse("2"), Memory: resource.MustParse("1Gi")})
		s.Start()
		var tickets []*Ticket
		for i := range 10000 {
			tickets = append(tickets, s.Enqueue(podRequesting(fmt.Sprintf("w%d", i), time.Duration(i), "1000")))
			if i%100 == 0 {
				fits := s.Enqueue(podRequesting(fmt.Sprintf("f%d", i), time.Duration(i), "10m"))
				s.Release(fits.uid)
			}
		}
		for _, t := range tickets {
			s.Release(t.uid)
		}
	}
}

// rl is a resource list of name, quantity pairs.
func rl(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i+1 < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

var sidecarPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)

func TestPodRequests(t *testing.T) {
	c := func(name string, req corev1.ResourceList, sidecar bool) corev1.Container {
		out := corev1.Container{Name: name, Resources: corev1.ResourceRequirements{Requests: req}}
		if sidecar {
			out.RestartPolicy = sidecarPolicy
		}
		return out
	}
	tests := map[string]struct {
		spec corev1.PodSpec
		want corev1.ResourceList
	}{
		"sum of containers": {
			spec: corev1.PodSpec{Containers: []corev1.Container{c("a", rl("cpu", "100m", "memory", "1Mi"), false), c("b", rl("cpu", "200m"), false)}},
			want: rl("cpu", "300m", "memory", "1Mi"),
		},
		"a bigger init container": {
			spec: corev1.PodSpec{
				InitContainers: []corev1.Container{c("i", rl("cpu", "1", "memory", "1Mi"), false)},
				Containers:     []corev1.Container{c("a", rl("cpu", "100m", "memory", "2Mi"), false)},
			},
			want: rl("cpu", "1", "memory", "2Mi"),
		},
		"sidecars add up, and to later init containers": {
			spec: corev1.PodSpec{
				InitContainers: []corev1.Container{c("s", rl("cpu", "500m"), true), c("i", rl("cpu", "1"), false)},
				Containers:     []corev1.Container{c("a", rl("cpu", "100m"), false)},
			},
			want: rl("cpu", "1500m"),
		},
		"overhead": {
			spec: corev1.PodSpec{Containers: []corev1.Container{c("a", rl("cpu", "100m"), false)}, Overhead: rl("cpu", "10m")},
			want: rl("cpu", "110m"),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := podRequests(&tc.spec)
			for name, q := range tc.want {
				if g := got[name]; g.Cmp(q) != 0 {
					t.Errorf("%s = %s, want %s", name, g.String(), q.String())
				}
			}
			if len(got) != len(tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
