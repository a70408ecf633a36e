package api

import (
	"reflect"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/kube"
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
	decodeCells:          func(c *jsonCursor, obj db.Object) { decodePodCells(c, obj.(*corev1.Pod)) },
	prepareCreate:        func(s *server, obj db.Object) { s.pods.PrepareForCreate(obj.(*corev1.Pod)) },
	validateCreate:       validateAs(kube.ValidatePodCreate),
	prepareUpdate:        prepareUpdateAs(kube.PreparePodForUpdate, kube.PreparePodForStatusUpdate),
	validateUpdate:       validateUpdateAs(kube.ValidatePodUpdate),
	validateStatusUpdate: validateUpdateAs(kube.ValidatePodStatusUpdate),
	spec:                 func(obj db.Object) any { return obj.(*corev1.Pod).Spec },
	defaultPropagation:   metav1.DeletePropagationBackground,
	deleteGrace:          podDeleteGrace,
	warnings:             podWarnings,
	admitWrite:           admitPod,
}

// admitPod is the admission of a new pod against its ServiceAccount and
// RuntimeClass (kube.PodStrategy.Admit); an update (old set) is not
// admitted again, as kube's plugins admit creates only.
func admitPod(s *server, tx *db.Tx, _ authenticationv1.UserInfo, obj, old db.Object) error {
	if old != nil {
		return nil
	}
	pod := obj.(*corev1.Pod)
	refs, err := findPodRefs(tx, pod)
	if err != nil {
		return err
	}
	return s.pods.Admit(pod, refs)
}

// findPodRefs reads what the admission of pod reads: its ServiceAccount
// and the RuntimeClass it names.
func findPodRefs(tx *db.Tx, pod *corev1.Pod) (kube.PodRefs, error) {
	var refs kube.PodRefs
	var err error
	refs.ServiceAccount, err = db.Find[*corev1.ServiceAccount](tx, db.ServiceAccounts, pod.Namespace, kube.PodServiceAccount(pod))
	if name := pod.Spec.RuntimeClassName; err == nil && name != nil {
		refs.RuntimeClass, err = db.Find[*nodev1.RuntimeClass](tx, db.RuntimeClasses, "", *name)
	}
	return refs, err
}

// podWarnings are kube's warnings on a created pod about what it takes
// from ConfigMaps and Secrets.
//
// NOTE: kube warns again on an update that changes the spec; a pod's
// volumes and imagePullSecrets never change, so that would only repeat
// what the create said.
func podWarnings(obj db.Object, created bool) []string {
	if !created {
		return nil
	}
	return kube.PodSourceWarnings(&obj.(*corev1.Pod).Spec, nil)
}

func newPodList(items []db.Object, meta metav1.ListMeta) runtime.Object {
	return &corev1.PodList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PodList"}, ListMeta: meta,
		Items: listItems[corev1.Pod](items)}
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

// podDeleteGrace is the grace period of a Pod's deletion (kube.DeletionGrace).
func podDeleteGrace(obj db.Object, requested *int64) int64 { return kube.DeletionGrace(obj, requested) }

func ptrTo[T any](v T) *T { return &v }
