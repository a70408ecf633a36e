package api

import (
	"reflect"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/skiff-sh/skiff/db"
)

// podResource is core/v1 pods.
var podResource = &resource{
	gv:                   coreV1,
	kind:                 "Pod",
	plural:               "pods",
	singular:             "pod",
	shortNames:           []string{"po"},
	categories:           []string{"all"},
	store:                db.Pods,
	hasLog:               true,
	goType:               reflect.TypeOf(corev1.Pod{}),
	listType:             reflect.TypeOf(corev1.PodList{}),
	newList:              newPodList,
	fields:               podFields,
	columns:              podColumns,
	cells:                func(obj db.Object, now time.Time) []any { return podCells(obj.(*corev1.Pod), now) },
	prepareCreate:        preparePodCreate,
	validateCreate:       validatePodCreate,
	prepareUpdate:        preparePodUpdate,
	validateUpdate:       validatePodUpdate,
	validateStatusUpdate: validatePodStatusUpdate,
	spec:                 func(obj db.Object) any { return obj.(*corev1.Pod).Spec },
	defaultPropagation:   metav1.DeletePropagationBackground,
	deleteGrace:          podDeleteGrace,
}

func newPodList(items []db.Object, meta metav1.ListMeta) runtime.Object {
	l := &corev1.PodList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PodList"}, ListMeta: meta,
		Items: make([]corev1.Pod, len(items))}
	for i, it := range items {
		l.Items[i] = *it.(*corev1.Pod)
	}
	return l
}

// podFields are the pod fields usable in field selectors.
func podFields(obj db.Object) fields.Set {
	pod := obj.(*corev1.Pod)
	f := objectFields(obj)
	f["spec.nodeName"] = pod.Spec.NodeName
	f["spec.restartPolicy"] = string(pod.Spec.RestartPolicy)
	f["spec.schedulerName"] = pod.Spec.SchedulerName
	f["spec.serviceAccountName"] = pod.Spec.ServiceAccountName
	f["status.phase"] = string(pod.Status.Phase)
	f["status.podIP"] = pod.Status.PodIP
	f["status.nominatedNodeName"] = pod.Status.NominatedNodeName
	return f
}

// preparePodCreate defaults a new bare Pod and binds it to this node.
func preparePodCreate(s *server, obj db.Object) {
	pod := obj.(*corev1.Pod)
	pod.Status = corev1.PodStatus{Phase: corev1.PodPending, QOSClass: qosClass(&pod.Spec)}
	defaultPodSpec(&pod.Spec)
	if pod.Spec.EnableServiceLinks == nil {
		pod.Spec.EnableServiceLinks = ptrTo(true)
	}
	// NOTE: skiff has no scheduler: a Pod created without a node is bound to
	// this one, as the scheduler would bind it to the only node.
	if pod.Spec.NodeName == "" {
		pod.Spec.NodeName = s.cfg.NodeName
	}
}

// qosClass is the Pod's quality of service class as the kubelet computes it,
// simplified: no requests or limits → BestEffort; every container with
// limits equal to requests for cpu and memory → Guaranteed; else Burstable.
func qosClass(spec *corev1.PodSpec) corev1.PodQOSClass {
	any, guaranteed := false, true
	for _, c := range append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...) {
		if len(c.Resources.Requests) > 0 || len(c.Resources.Limits) > 0 {
			any = true
		}
		for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			l, ok := c.Resources.Limits[res]
			if !ok {
				guaranteed = false
				continue
			}
			if r, ok := c.Resources.Requests[res]; ok && r.Cmp(l) != 0 {
				guaranteed = false
			}
		}
	}
	switch {
	case !any:
		return corev1.PodQOSBestEffort
	case guaranteed:
		return corev1.PodQOSGuaranteed
	}
	return corev1.PodQOSBurstable
}

// preparePodUpdate keeps the status on a Pod update, and everything but
// the status on a status update.
func preparePodUpdate(newObj, oldObj db.Object, status bool) {
	n, o := newObj.(*corev1.Pod), oldObj.(*corev1.Pod)
	if status {
		n.Spec = o.Spec
		return
	}
	n.Status = o.Status
	defaultPodSpec(&n.Spec)
}

// podDeleteGrace is the grace period of a Pod's deletion (db.DeletionGrace).
func podDeleteGrace(obj db.Object, requested *int64) int64 { return db.DeletionGrace(obj, requested) }

func ptrTo[T any](v T) *T { return &v }
