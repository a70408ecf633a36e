package api

import (
	"reflect"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/kube"
)

var coordinationV1 = groupVersion{group: coordinationv1.GroupName, version: "v1"}

// leaseResource is coordination.k8s.io/v1 leases: the locks clients' leader
// elections hold and renew.
var leaseResource = &resource{
	gv:       coordinationV1,
	kind:     "Lease",
	plural:   "leases",
	singular: "lease",
	store:    db.Leases,
	goType:   reflect.TypeOf(coordinationv1.Lease{}),
	listType: reflect.TypeOf(coordinationv1.LeaseList{}),
	newList:  newLeaseList,
	fields:   objectFields,
	columns:  leaseColumns,
	cells: func(obj db.Object, now time.Time) []any {
		l := obj.(*coordinationv1.Lease)
		holder := "<unknown>"
		if l.Spec.HolderIdentity != nil {
			holder = *l.Spec.HolderIdentity
		}
		return []any{l.Name, holder, age(l.CreationTimestamp, now)}
	},
	prepareCreate:  func(_ *server, obj db.Object) { kube.PrepareLease(obj.(*coordinationv1.Lease), nil) },
	validateCreate: validateAs(kube.ValidateLease),
	prepareUpdate: func(n, o db.Object, _ bool) {
		kube.PrepareLease(n.(*coordinationv1.Lease), o.(*coordinationv1.Lease))
	},
	validateUpdate: validateUpdateAs(kube.ValidateLeaseUpdate),
	// NOTE: kube's Lease strategy keeps no metadata.generation.
	spec:               func(db.Object) any { return nil },
	defaultPropagation: metav1.DeletePropagationBackground,
	deleteGrace:        func(db.Object, *int64) int64 { return 0 },
	noStatus:           true,
}

func newLeaseList(items []db.Object, meta metav1.ListMeta) runtime.Object {
	return &coordinationv1.LeaseList{TypeMeta: metav1.TypeMeta{APIVersion: coordinationV1.String(), Kind: "LeaseList"},
		ListMeta: meta, Items: listItems[coordinationv1.Lease](items)}
}

// leaseColumns are kube's Lease columns.
var leaseColumns = []metav1.TableColumnDefinition{
	nameColumn,
	{Name: "Holder", Type: "string", Description: coordinationv1.LeaseSpec{}.SwaggerDoc()["holderIdentity"]},
	ageColumn,
}
