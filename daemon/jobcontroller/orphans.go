package jobcontroller

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/kube"
)

// syncOrphanPod removes the tracking finalizer from a pod no running Job
// controls any more: its controller reference was removed (orphan
// propagation), or names a Job that is gone or finished. Pods controlled by
// something other than a Job are not touched.
//
// NOTE: as Kubernetes' syncOrphanPod.
func (c *Controller) syncOrphanPod(ctx context.Context, n podName) error {
	err := c.store.Write(func(tx *db.Tx) error {
		p, err := getPod(tx, n.namespace, n.name)
		if err != nil || p == nil || !hasTrackingFinalizer(p) {
			return noChangeIfNil(err)
		}
		if ref := metav1.GetControllerOfNoCopy(p); ref != nil {
			if jobControllerOf(p) == nil {
				return errNoChange // controlled by something else
			}
			job, err := getJob(tx, jobKey{n.namespace, ref.Name})
			if err != nil {
				return err
			}
			if job != nil && job.UID == ref.UID && (!isManagedByUs(job) || !kube.IsJobFinished(job)) {
				return errNoChange // its Job's sync handles it
			}
		}
		return removeTrackingFinalizer(tx, p)
	})
	if err != nil && !errors.Is(err, errNoChange) {
		return fmt.Errorf("releasing orphan pod %s/%s: %w", n.namespace, n.name, err)
	}
	return nil
}

func noChangeIfNil(err error) error {
	if err == nil {
		return errNoChange
	}
	return err
}
