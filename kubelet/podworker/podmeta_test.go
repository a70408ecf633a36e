package podworker

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestWithLatestMeta: a container's config takes the newest labels and
// annotations seen and keeps the rest of the pod it was given; the channel
// taken with them closes at their next change, not at other updates.
func TestWithLatestMeta(t *testing.T) {
	w := &worker{}
	given := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u1", Annotations: map[string]string{"a": "1"}},
		Status: corev1.PodStatus{PodIP: "10.88.0.7"}}
	if got, _ := w.withLatestMeta(given); got != given {
		t.Error("without a newer version the given pod is not used as it is")
	}

	seen := given.DeepCopy()
	seen.Status.PodIP = ""
	w.containersChanged(seen)
	_, changed := w.withLatestMeta(given)
	seen = seen.DeepCopy()
	seen.Status.Phase = corev1.PodPending
	w.containersChanged(seen) // a status update
	if isClosed(changed) {
		t.Error("woken by an update that changed neither labels nor annotations")
	}

	seen = seen.DeepCopy()
	seen.Annotations["mysubpath"] = "mypath"
	seen.Labels = map[string]string{"l": "x"}
	w.containersChanged(seen)
	if !isClosed(changed) {
		t.Error("not woken by a change of the annotations")
	}
	got, _ := w.withLatestMeta(given)
	want := given.DeepCopy()
	want.Annotations, want.Labels = map[string]string{"a": "1", "mysubpath": "mypath"}, map[string]string{"l": "x"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want,+got):\n%s", diff)
	}
	if given.Annotations["mysubpath"] != "" {
		t.Error("the given pod was changed")
	}

	other := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u2"}}
	if got, _ := w.withLatestMeta(other); got != other {
		t.Error("another pod's metadata was taken")
	}
}
