package api

import (
	"reflect"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/kube"
)

// serviceAccountResource is core/v1 serviceaccounts: the identities pods
// run as. Their token subresource is served beside (tokenRequestRoute).
var serviceAccountResource = &resource{
	gv:         coreV1,
	kind:       "ServiceAccount",
	plural:     "serviceaccounts",
	singular:   "serviceaccount",
	shortNames: []string{"sa"},
	store:      db.ServiceAccounts,
	goType:     reflect.TypeOf(corev1.ServiceAccount{}),
	listType:   reflect.TypeOf(corev1.ServiceAccountList{}),
	newList:    newServiceAccountList,
	fields:     objectFields,
	columns:    serviceAccountColumns,
	cells: func(obj db.Object, now time.Time) []any {
		return serviceAccountCells(obj.(*corev1.ServiceAccount), now)
	},
	prepareCreate: func(_ *server, obj db.Object) { kube.PrepareServiceAccount(obj.(*corev1.ServiceAccount)) },
	// NOTE: kube's ValidateServiceAccount checks the metadata only, which
	// every resource's writes check already.
	validateCreate: func(db.Object) field.ErrorList { return nil },
	prepareUpdate:  func(n, _ db.Object, _ bool) { kube.PrepareServiceAccount(n.(*corev1.ServiceAccount)) },
	validateUpdate: func(db.Object, db.Object) field.ErrorList { return nil },
	warnings: func(obj db.Object, created bool) []string {
		if !created {
			return nil
		}
		return kube.ServiceAccountWarnings(obj.(*corev1.ServiceAccount))
	},
	// NOTE: kube's ServiceAccount strategy keeps no metadata.generation.
	spec:               func(db.Object) any { return nil },
	defaultPropagation: metav1.DeletePropagationBackground,
	deleteGrace:        func(db.Object, *int64) int64 { return 0 },
	noStatus:           true,
}

func newServiceAccountList(items []db.Object, meta metav1.ListMeta) runtime.Object {
	return &corev1.ServiceAccountList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccountList"}, ListMeta: meta,
		Items: listItems[corev1.ServiceAccount](items)}
}

var serviceAccountColumns = []metav1.TableColumnDefinition{
	nameColumn,
	{Name: "Secrets", Type: "string", Description: corev1.ServiceAccount{}.SwaggerDoc()["secrets"]},
	ageColumn,
}

// serviceAccountCells is kube's row: the number of secrets referenced.
func serviceAccountCells(sa *corev1.ServiceAccount, now time.Time) []any {
	return []any{sa.Name, int64(len(sa.Secrets)), age(sa.CreationTimestamp, now)}
}
