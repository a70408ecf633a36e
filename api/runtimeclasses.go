package api

import (
	"reflect"
	"time"

	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/kube"
)

var nodeV1 = groupVersion{group: nodev1.GroupName, version: "v1"}

// runtimeClassResource is node.k8s.io/v1 runtimeclasses: the container
// runtime configurations (handlers) pods may ask for, with the overhead
// and scheduling the admission of such a pod applies (kube.PodStrategy).
var runtimeClassResource = &resource{
	gv:       nodeV1,
	kind:     "RuntimeClass",
	plural:   "runtimeclasses",
	singular: "runtimeclass",
	store:    db.RuntimeClasses,
	goType:   reflect.TypeOf(nodev1.RuntimeClass{}),
	listType: reflect.TypeOf(nodev1.RuntimeClassList{}),
	newList: func(items []db.Object, meta metav1.ListMeta) runtime.Object {
		return &nodev1.RuntimeClassList{TypeMeta: metav1.TypeMeta{APIVersion: nodeV1.String(), Kind: "RuntimeClassList"},
			ListMeta: meta, Items: listItems[nodev1.RuntimeClass](items)}
	},
	fields:  objectFields,
	columns: runtimeClassColumns,
	cells: func(obj db.Object, now time.Time) []any {
		rc := obj.(*nodev1.RuntimeClass)
		return []any{rc.Name, rc.Handler, age(rc.CreationTimestamp, now)}
	},
	prepareCreate:  func(*server, db.Object) {},
	validateCreate: validateAs(kube.ValidateRuntimeClass),
	prepareUpdate:  func(db.Object, db.Object, bool) {},
	validateUpdate: validateUpdateAs(kube.ValidateRuntimeClassUpdate),
	warnings:       func(obj db.Object, _ bool) []string { return kube.RuntimeClassWarnings(obj.(*nodev1.RuntimeClass)) },
	// NOTE: kube's RuntimeClass strategy keeps no metadata.generation.
	spec:               func(db.Object) any { return nil },
	defaultPropagation: metav1.DeletePropagationBackground,
	deleteGrace:        func(db.Object, *int64) int64 { return 0 },
	noStatus:           true,
}

// runtimeClassColumns are kube's RuntimeClass columns.
var runtimeClassColumns = []metav1.TableColumnDefinition{
	nameColumn,
	// NOTE: kube describes the column with ObjectMeta's (absent) doc of
	// "handler": an empty description.
	{Name: "Handler", Type: "string"},
	ageColumn,
}
