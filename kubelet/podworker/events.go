package podworker

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	skiffruntime "github.com/skiff-sh/skiff/runtime"
)

// Recorder records Events on objects; package events' *Recorder
// implements it (source "kubelet" with the node as host for Config.Recorder,
// "default-scheduler" for Config.SchedulerRecorder).
type Recorder interface {
	Event(obj runtime.Object, eventtype, reason, messageFmt string, args ...any)
}

// podRef references the worker's pod.
func (w *worker) podRef() *corev1.ObjectReference {
	return &corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: w.ns, Name: w.name, UID: w.uid}
}

// event records a kubelet Event on the pod.
func (w *worker) event(eventtype, reason, messageFmt string, args ...any) {
	if rec := w.m.cfg.Recorder; rec != nil {
		rec.Event(w.podRef(), eventtype, reason, messageFmt, args...)
	}
}

// schedulerEvent records a scheduler Event on the pod.
func (w *worker) schedulerEvent(eventtype, reason, messageFmt string, args ...any) {
	if rec := w.m.cfg.SchedulerRecorder; rec != nil {
		rec.Event(w.podRef(), eventtype, reason, messageFmt, args...)
	}
}

// hasScheduledCondition reports whether the pod's PodScheduled condition is True.
func hasScheduledCondition(status *corev1.PodStatus) bool {
	c := findCondition(status, corev1.PodScheduled)
	return c != nil && c.Status == corev1.ConditionTrue
}

// event records a kubelet Event on the container, as the kubelet does with
// a reference to the pod whose fieldPath names the container.
func (r *containerRun) event(eventtype, reason, messageFmt string, args ...any) {
	rec := r.w.m.cfg.Recorder
	if rec == nil {
		return
	}
	ref := r.w.podRef()
	ref.ResourceVersion = r.pod.ResourceVersion
	switch r.kind {
	case kindInit, kindSidecar:
		ref.FieldPath = fmt.Sprintf("spec.initContainers{%s}", r.spec.Name)
	case kindEphemeral:
		ref.FieldPath = fmt.Sprintf("spec.ephemeralContainers{%s}", r.spec.Name)
	default:
		ref.FieldPath = fmt.Sprintf("spec.containers{%s}", r.spec.Name)
	}
	rec.Event(ref, eventtype, reason, messageFmt, args...)
}

// ensureImage is Runtime.EnsureImage with the kubelet's image Events:
// "already present on machine", or Pulling, the layers' progress
// (pullprogress.go), then Pulled (or Failed). It returns the image's info
// once it is there.
func (r *containerRun) ensureImage(ctx context.Context) (skiffruntime.ImageInfo, error) {
	rt, image, policy := r.w.m.cfg.Runtime, r.spec.Image, pullPolicy(r.spec)
	info, err := rt.ImageInfo(ctx, image)
	present := err == nil
	if !present || policy == skiffruntime.PullAlways {
		ctx = skiffruntime.WithPullSecrets(ctx, r.pullSecrets()...)
	}
	switch {
	case present && policy != skiffruntime.PullAlways:
		// NOTE: nothing to pull; the container's creation unpacks the
		// image's layers if they are not.
		r.event(corev1.EventTypeNormal, "Pulled", "Container image %q already present on machine", image)
		return info, nil
	case policy == skiffruntime.PullNever:
		err := rt.EnsureImage(ctx, image, policy)
		if errors.Is(err, skiffruntime.ErrImageNotPresent) {
			r.event(corev1.EventTypeWarning, reasonErrImageNeverPull, "Container image %q is not present with pull policy of Never", image)
			r.event(corev1.EventTypeWarning, "Failed", "Error: %s", reasonErrImageNeverPull)
		}
		if err != nil {
			return skiffruntime.ImageInfo{}, err
		}
		return rt.ImageInfo(ctx, image)
	}
	r.event(corev1.EventTypeNormal, "Pulling", "Pulling image %q", image)
	start := time.Now()
	progress := newPullProgress(image, r.w.m.now, r.event)
	if err := rt.EnsureImageWithProgress(ctx, image, policy, progress.report); err != nil {
		if ctx.Err() == nil {
			r.event(corev1.EventTypeWarning, "Failed", "Failed to pull image %q: %v", image, err)
			r.event(corev1.EventTypeWarning, "Failed", "Error: %s", reasonErrImagePull)
		}
		return skiffruntime.ImageInfo{}, err
	}
	r.w.start.pulled(start, time.Now())
	took := time.Since(start).Truncate(time.Millisecond)
	if info, err = rt.ImageInfo(ctx, image); err != nil {
		return skiffruntime.ImageInfo{}, fmt.Errorf("inspecting image %q: %w", image, err)
	}
	r.w.m.cfg.Metrics.observePull(took, info.Size)
	r.event(corev1.EventTypeNormal, "Pulled", "Successfully pulled image %q in %v (%v including waiting). Image size: %v bytes.",
		image, took, took, info.Size)
	return info, nil
}

// waitEvents records why a container waits to be created again, as the
// kubelet does on each try: BackOff and Failed "Error: ImagePullBackOff"
// for an image that could not be pulled, Failed "Error: <message>" for
// anything else but a missing image (already reported by ensureImage).
func (r *containerRun) waitEvents(err error, message string) {
	var ie *imageError
	switch {
	case errors.Is(err, skiffruntime.ErrImageNotPresent):
	case errors.As(err, &ie):
		r.event(corev1.EventTypeNormal, "BackOff", "Back-off pulling image %q", r.spec.Image)
		r.event(corev1.EventTypeWarning, "Failed", "Error: %s", reasonImagePullBackOff)
	default:
		r.event(corev1.EventTypeWarning, "Failed", "Error: %s", message)
	}
}

// podDescription is how the kubelet names a pod in messages: name_namespace(uid).
func podDescription(pod *corev1.Pod) string {
	return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
}
