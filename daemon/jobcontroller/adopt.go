package jobcontroller

import (
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/skiff-sh/skiff/db"
)

// claimPods adopts the candidate orphans that match the Job's selector and
// releases the Job's pods that no longer match it. It returns the pods the
// Job now controls (pods without the released, with the adopted) and what
// it changed.
//
// NOTE: as Kubernetes' ControllerRefManager.ClaimPods, used by the Job
// controller with the tracking finalizer: adoption sets the controller
// reference (controller and blockOwnerDeletion true) and adds the tracking
// finalizer; release removes both. Nothing is adopted or released while the
// Job is being deleted, and pods being deleted are not adopted.
func claimPods(tx *db.Tx, job *batchv1.Job, pods []*corev1.Pod, candidates map[string]uint64) (kept, adopted []*corev1.Pod, released []string, err error) {
	if job.DeletionTimestamp != nil {
		return pods, nil, nil, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(job.Spec.Selector)
	if err != nil || sel.Empty() {
		return pods, nil, nil, nil // validation refuses such selectors
	}
	for _, p := range pods {
		if sel.Matches(labels.Set(p.Labels)) {
			kept = append(kept, p)
			continue
		}
		if err := releasePod(tx, job, p); err != nil {
			return nil, nil, nil, err
		}
		released = append(released, p.Name)
	}
	for name := range candidates {
		p, err := getPod(tx, job.Namespace, name)
		if err != nil {
			return nil, nil, nil, err
		}
		if p == nil || !isAdoptable(p) || !sel.Matches(labels.Set(p.Labels)) {
			continue
		}
		p.OwnerReferences = append(p.OwnerReferences, controllerRef(job))
		p.Finalizers = appendTrackingFinalizer(p.Finalizers)
		if err := tx.Update(db.Pods, p); err != nil {
			return nil, nil, nil, fmt.Errorf("adopting pod %s: %w", name, err)
		}
		kept = append(kept, p)
		adopted = append(adopted, p)
	}
	return kept, adopted, released, nil
}

// releasePod removes the Job's ownerReference and tracking finalizer.
func releasePod(tx *db.Tx, job *batchv1.Job, p *corev1.Pod) error {
	refs := p.OwnerReferences[:0:0]
	for _, r := range p.OwnerReferences {
		if r.UID != job.UID {
			refs = append(refs, r)
		}
	}
	p.OwnerReferences = refs
	p.Finalizers = withoutTrackingFinalizer(p.Finalizers)
	if err := tx.Update(db.Pods, p); err != nil {
		return fmt.Errorf("releasing pod %s: %w", p.Name, err)
	}
	return nil
}
