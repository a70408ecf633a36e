package api

import (
	"reflect"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/kube"
)

// configMapResource is core/v1 configmaps: data a pod takes as files or
// environment variables.
var configMapResource = &resource{
	gv:             coreV1,
	kind:           "ConfigMap",
	plural:         "configmaps",
	singular:       "configmap",
	shortNames:     []string{"cm"},
	store:          db.ConfigMaps,
	goType:         reflect.TypeOf(corev1.ConfigMap{}),
	listType:       reflect.TypeOf(corev1.ConfigMapList{}),
	newList:        newConfigMapList,
	fields:         objectFields,
	columns:        configMapColumns,
	cells:          func(obj db.Object, now time.Time) []any { return configMapCells(obj.(*corev1.ConfigMap), now) },
	prepareCreate:  func(*server, db.Object) {},
	validateCreate: validateAs(kube.ValidateConfigMap),
	prepareUpdate:  func(db.Object, db.Object, bool) {},
	validateUpdate: validateUpdateAs(kube.ValidateConfigMapUpdate),
	// NOTE: kube's ConfigMap strategy keeps no metadata.generation.
	spec:               func(db.Object) any { return nil },
	defaultPropagation: metav1.DeletePropagationBackground,
	deleteGrace:        func(db.Object, *int64) int64 { return 0 },
	noStatus:           true,
}

func newConfigMapList(items []db.Object, meta metav1.ListMeta) runtime.Object {
	return &corev1.ConfigMapList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMapList"}, ListMeta: meta,
		Items: listItems[corev1.ConfigMap](items)}
}

var configMapColumns = []metav1.TableColumnDefinition{
	nameColumn,
	{Name: "Data", Type: "string", Description: corev1.ConfigMap{}.SwaggerDoc()["data"]},
	ageColumn,
}

// configMapCells is kube's row: the number of keys of both bags.
func configMapCells(cm *corev1.ConfigMap, now time.Time) []any {
	return []any{cm.Name, int64(len(cm.Data) + len(cm.BinaryData)), age(cm.CreationTimestamp, now)}
}
