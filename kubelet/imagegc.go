package kubelet

import (
	"context"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"

	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/kube"
	"github.com/skiff-sh/skiff/runtime"
)

// imageGCPeriod is how often image garbage collection looks at the disk,
// as the kubelet's ImageGCPeriod.
const imageGCPeriod = 5 * time.Minute

// CollectImages removes unused images while the image disk is fuller than
// high percent, down to low percent, until ctx ends. Images named by a pod
// that is not finished are kept even when no container uses them yet.
func CollectImages(ctx context.Context, store *db.Store, rt *runtime.Runtime, high, low int) error {
	if high <= 0 || high > 100 {
		return nil // disabled, as the kubelet does with a threshold of 100
	}
	tick := time.NewTicker(imageGCPeriod)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		inUse, err := podImages(store)
		if err != nil {
			logrus.WithError(err).Warn("image garbage collection: listing pods")
			continue
		}
		removed, err := rt.ImageGC(ctx, high, low, inUse)
		if err != nil {
			logrus.WithError(err).Warn("image garbage collection")
		}
		if len(removed) > 0 {
			logrus.WithField("images", removed).Info("image garbage collection removed unused images")
		}
	}
}

// podImages is every image named by a pod that has not finished.
func podImages(store *db.Store) (map[string]bool, error) {
	objs, _, err := store.List(db.Pods, "", nil)
	if err != nil {
		return nil, err
	}
	inUse := map[string]bool{}
	for _, obj := range objs {
		pod := obj.(*corev1.Pod)
		if kube.IsPodTerminal(pod) {
			continue
		}
		for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
			for _, c := range list {
				inUse[c.Image] = true
			}
		}
		for _, c := range pod.Spec.EphemeralContainers {
			inUse[c.Image] = true
		}
	}
	return inUse, nil
}
