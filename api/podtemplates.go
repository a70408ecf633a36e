package api

import (
	"reflect"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/kube"
)

// podTemplateResource is core/v1 podtemplates: pod templates stored for
// clients to read; nothing runs them.
var podTemplateResource = &resource{
	gv:       coreV1,
	kind:     "PodTemplate",
	plural:   "podtemplates",
	singular: "podtemplate",
	store:    db.PodTemplates,
	goType:   reflect.TypeOf(corev1.PodTemplate{}),
	listType: reflect.TypeOf(corev1.PodTemplateList{}),
	newList:  newPodTemplateList,
	fields:   objectFields,
	columns:  podTemplateColumns,
	cells:    func(obj db.Object, _ time.Time) []any { return podTemplateCells(obj.(*corev1.PodTemplate)) },
	prepareCreate: func(_ *server, obj db.Object) {
		kube.PreparePodTemplateForCreate(obj.(*corev1.PodTemplate))
	},
	validateCreate: validateAs(kube.ValidatePodTemplate),
	prepareUpdate: func(newObj, oldObj db.Object, _ bool) {
		kube.PreparePodTemplateForUpdate(newObj.(*corev1.PodTemplate), oldObj.(*corev1.PodTemplate))
	},
	validateUpdate: validateUpdateAs(kube.ValidatePodTemplateUpdate),
	// A change of the template bumps metadata.generation, as kube's strategy does.
	spec:               func(obj db.Object) any { return obj.(*corev1.PodTemplate).Template },
	defaultPropagation: metav1.DeletePropagationBackground,
	deleteGrace:        func(db.Object, *int64) int64 { return 0 },
	noStatus:           true,
}

func newPodTemplateList(items []db.Object, meta metav1.ListMeta) runtime.Object {
	return &corev1.PodTemplateList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PodTemplateList"}, ListMeta: meta,
		Items: listItems[corev1.PodTemplate](items)}
}

// podTemplateColumns are kube's PodTemplate columns.
var podTemplateColumns = []metav1.TableColumnDefinition{
	nameColumn,
	{Name: "Containers", Type: "string", Description: "Names of each container in the template."},
	{Name: "Images", Type: "string", Description: "Images referenced by each container in the template."},
	{Name: "Pod Labels", Type: "string", Description: "The labels for the pod template."},
}

// podTemplateCells is kube's row: the containers, their images and the
// template's labels (PodTemplates have no age column).
func podTemplateCells(pt *corev1.PodTemplate) []any {
	names, images := containerCells(pt.Template.Spec.Containers)
	return []any{pt.Name, names, images, labels.FormatLabels(pt.Template.Labels)}
}
