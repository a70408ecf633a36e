package api

import (
	"reflect"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/kube"
)

// secretResource is core/v1 secrets. Their values never reach a log: the
// request log names the URI, never the body, and validation errors carry
// keys, never values (kube's "<secret contents redacted>").
var secretResource = &resource{
	gv:             coreV1,
	kind:           "Secret",
	plural:         "secrets",
	singular:       "secret",
	store:          db.Secrets,
	goType:         reflect.TypeOf(corev1.Secret{}),
	listType:       reflect.TypeOf(corev1.SecretList{}),
	newList:        newSecretList,
	fields:         secretFields,
	columns:        secretColumns,
	cells:          func(obj db.Object, now time.Time) []any { return secretCells(obj.(*corev1.Secret), now) },
	prepareCreate:  func(_ *server, obj db.Object) { kube.PrepareSecret(obj.(*corev1.Secret)) },
	validateCreate: validateAs(kube.ValidateSecret),
	prepareUpdate:  func(n, _ db.Object, _ bool) { kube.PrepareSecret(n.(*corev1.Secret)) },
	validateUpdate: validateUpdateAs(kube.ValidateSecretUpdate),
	warnings:       func(obj db.Object, _ bool) []string { return kube.SecretWarnings(obj.(*corev1.Secret)) },
	// NOTE: kube's Secret strategy keeps no metadata.generation.
	spec:               func(db.Object) any { return nil },
	defaultPropagation: metav1.DeletePropagationBackground,
	deleteGrace:        func(db.Object, *int64) int64 { return 0 },
	noStatus:           true,
}

func newSecretList(items []db.Object, meta metav1.ListMeta) runtime.Object {
	return &corev1.SecretList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "SecretList"}, ListMeta: meta,
		Items: listItems[corev1.Secret](items)}
}

// secretFields are the secret fields usable in field selectors (kube's
// SelectableFields: the type).
func secretFields(obj db.Object) fields.Set {
	f := objectFields(obj)
	f["type"] = string(obj.(*corev1.Secret).Type)
	return f
}

var secretColumns = []metav1.TableColumnDefinition{
	nameColumn,
	{Name: "Type", Type: "string", Description: corev1.Secret{}.SwaggerDoc()["type"]},
	{Name: "Data", Type: "string", Description: corev1.Secret{}.SwaggerDoc()["data"]},
	ageColumn,
}

// secretCells is kube's row: the type and the number of keys.
func secretCells(s *corev1.Secret, now time.Time) []any {
	return []any{s.Name, string(s.Type), int64(len(s.Data)), age(s.CreationTimestamp, now)}
}
