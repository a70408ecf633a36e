package api

import (
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"time"

	"github.com/gorilla/mux"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/kube"
)

// namespaceResource is core/v1 namespaces.
var namespaceResource = &resource{
	gv:                 coreV1,
	kind:               "Namespace",
	plural:             "namespaces",
	singular:           "namespace",
	shortNames:         []string{"ns"},
	store:              db.Namespaces,
	goType:             reflect.TypeOf(corev1.Namespace{}),
	listType:           reflect.TypeOf(corev1.NamespaceList{}),
	newList:            newNamespaceList,
	fields:             namespaceFields,
	columns:            namespaceColumns,
	cells:              func(obj db.Object, now time.Time) []any { return namespaceCells(obj.(*corev1.Namespace), now) },
	prepareCreate:      func(_ *server, obj db.Object) { kube.PrepareNamespaceForCreate(obj.(*corev1.Namespace)) },
	validateCreate:     func(db.Object) field.ErrorList { return nil },
	prepareUpdate:      prepareUpdateAs(kube.PrepareNamespaceForUpdate, kube.PrepareNamespaceForStatusUpdate),
	validateUpdate:     func(db.Object, db.Object) field.ErrorList { return nil },
	spec:               func(obj db.Object) any { return nil },
	defaultPropagation: metav1.DeletePropagationBackground,
	deleteGrace:        func(db.Object, *int64) int64 { return 0 },
	// NOTE: a namespace name is a DNS label (kube's ValidateNamespaceName).
	validateName: apivalidation.ValidateNamespaceName,
	// NOTE: kube serves no deletecollection of namespaces.
	verbs: metav1.Verbs{"create", "delete", "get", "list", "patch", "update", "watch"},
}

func newNamespaceList(items []db.Object, meta metav1.ListMeta) runtime.Object {
	return &corev1.NamespaceList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "NamespaceList"}, ListMeta: meta,
		Items: listItems[corev1.Namespace](items)}
}

// namespaceFields are the namespace fields usable in field selectors.
func namespaceFields(obj db.Object) fields.Set {
	// NOTE: kube's namespace fields also have the legacy "name".
	return fields.Set{"metadata.name": obj.GetName(), "name": obj.GetName(),
		"status.phase": string(obj.(*corev1.Namespace).Status.Phase)}
}

var namespaceColumns = []metav1.TableColumnDefinition{
	nameColumn,
	{Name: "Status", Type: "string", Description: "The status of the namespace"},
	ageColumn,
}

func namespaceCells(ns *corev1.Namespace, now time.Time) []any {
	return []any{ns.Name, string(ns.Status.Phase), age(ns.CreationTimestamp, now)}
}

// deleteHandler is the DELETE handler of rs.
func (s *server) deleteHandler(rs *resource) http.HandlerFunc {
	if rs == namespaceResource {
		return s.deleteNamespace
	}
	return s.delete(rs)
}

// deleteNamespace serves DELETE of a namespace as kube-apiserver does: the
// first deletion sets deletionTimestamp and phase Terminating (the
// namespace controller then empties it and removes the "kubernetes"
// finalizer); the namespace goes once its spec.finalizers are empty.
func (s *server) deleteNamespace(w http.ResponseWriter, r *http.Request) {
	rs := namespaceResource
	name := mux.Vars(r)["name"]
	opts, err := deleteOptions(w, r)
	if err == nil && slices.Contains(kube.ImmortalNamespaces, name) {
		err = apierrors.NewForbidden(rs.groupResource(), name, fmt.Errorf("this namespace may not be deleted"))
	}
	if err != nil {
		writeError(w, r, statusFor(err, rs.groupResource(), name))
		return
	}
	var (
		out     db.Object
		deleted bool
	)
	err = s.store.Write(func(tx *db.Tx) error {
		obj, err := tx.Get(rs.store, "", name)
		if err != nil {
			return err
		}
		if err := checkPreconditions(rs, obj, opts.Preconditions); err != nil {
			return err
		}
		ns := obj.(*corev1.Namespace)
		out = ns
		switch {
		case len(opts.DryRun) > 0:
			return nil
		case ns.DeletionTimestamp == nil:
			now := metav1.Now()
			ns.DeletionTimestamp = &now
			ns.Status.Phase = corev1.NamespaceTerminating
			return tx.Update(rs.store, ns)
		case len(ns.Spec.Finalizers) == 0:
			deleted = true
			_, err := tx.Delete(rs.store, "", name)
			return err
		}
		return nil
	})
	if err != nil {
		writeError(w, r, statusFor(err, rs.groupResource(), name))
		return
	}
	if deleted {
		writeStatus(w, r, &metav1.Status{Status: metav1.StatusSuccess, Code: http.StatusOK,
			Details: &metav1.StatusDetails{Name: name, Kind: rs.plural, UID: out.GetUID()}})
		return
	}
	s.respond(w, r, rs, http.StatusOK, out)
}

// admitNamespace is kube-apiserver's NamespaceLifecycle admission of a new
// object of rs in namespace ns: 404 if the namespace does not exist, 403
// if it is being terminated. It only applies when Config.NamespaceLifecycle
// is set.
func (s *server) admitNamespace(tx *db.Tx, rs *resource, ns, name string) error {
	if !s.cfg.NamespaceLifecycle || !rs.namespaced() {
		return nil
	}
	namespace, err := db.Find[*corev1.Namespace](tx, db.Namespaces, "", ns)
	if err != nil {
		return err
	}
	return kube.AdmitNamespace(namespace, ns, rs.groupResource(), name)
}
