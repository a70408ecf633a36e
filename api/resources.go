package api

import (
	"reflect"

	authenticationv1 "k8s.io/api/authentication/v1"
	"slices"
	"time"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/skiff-sh/skiff/db"
)

// groupVersion is an API group version served here.
type groupVersion struct{ group, version string }

var (
	coreV1  = groupVersion{group: "", version: "v1"}
	batchV1 = groupVersion{group: "batch", version: "v1"}
	// groupVersions are served in this order in discovery.
	groupVersions = []groupVersion{coreV1, batchV1, eventsV1, discoveryV1, rbacV1, authenticationV1, authorizationV1, coordinationV1, nodeV1}
)

// prefix is the URL path of the group version: /api/v1 or /apis/<group>/<version>.
func (gv groupVersion) prefix() string {
	if gv.group == "" {
		return "/api/" + gv.version
	}
	return "/apis/" + gv.group + "/" + gv.version
}

// String is "v1" for the core group, "<group>/<version>" otherwise.
func (gv groupVersion) String() string { return gv.schema().String() }

func (gv groupVersion) schema() schema.GroupVersion {
	return schema.GroupVersion{Group: gv.group, Version: gv.version}
}

// resource describes one served resource: its names, its store, and the
// policy hooks (defaulting, validation, update rules, tables) that make the
// generic handlers behave as kube-apiserver does for that kind.
type resource struct {
	gv         groupVersion
	kind       string
	plural     string
	singular   string
	shortNames []string
	store      db.Resource
	hasLog     bool
	// goType and listType are the Go types, for OpenAPI.
	goType, listType reflect.Type

	// newList wraps items in the kind's typed List.
	newList func(items []db.Object, meta metav1.ListMeta) runtime.Object
	// fields is the field-selector set of an object.
	fields func(obj db.Object) fields.Set
	// columns and cells are the Table printer.
	columns []metav1.TableColumnDefinition
	cells   func(obj db.Object, now time.Time) []any
	// decodeCells, if set, reads from an object's stored JSON the fields
	// cells reads, into an empty object: a Table of stored objects decodes
	// only those (storedTableJSON).
	decodeCells func(c *jsonCursor, obj db.Object)
	// prepareCreate defaults a new object (name, namespace, uid already set).
	prepareCreate func(s *server, obj db.Object)
	// validateCreate validates a defaulted new object.
	validateCreate func(obj db.Object) field.ErrorList
	// prepareUpdate keeps what an update of the object (or of its status
	// when status is true) may not change from old.
	prepareUpdate func(newObj, oldObj db.Object, status bool)
	// validateUpdate validates an update of the object (not of its status).
	validateUpdate func(newObj, oldObj db.Object) field.ErrorList
	// validateStatusUpdate validates an update of the object's status
	// subresource; nil = only the metadata rules.
	validateStatusUpdate func(newObj, oldObj db.Object) field.ErrorList
	// allocate, if set, gives a new, valid object what it takes from a
	// pool shared by all objects (a Service's ClusterIP), inside the
	// transaction that stores it (a Read one for a dry run).
	allocate func(s *server, tx *db.Tx, obj db.Object) error
	// spec is the part of the object whose change bumps metadata.generation.
	spec func(obj db.Object) any
	// defaultPropagation applies to DELETE without a propagation policy.
	defaultPropagation metav1.DeletionPropagation
	// deleteGrace is the grace period of a DELETE of obj given the
	// requested one (nil if the options have none).
	deleteGrace func(obj db.Object, requested *int64) int64

	// verbs are the verbs served; nil = create, delete, get, list, patch,
	// update, watch.
	verbs metav1.Verbs
	// noStatus: the resource has no status subresource.
	noStatus bool
	// categories are the discovery categories ("all").
	categories []string
	// validateName validates metadata.name; nil = a DNS subdomain.
	validateName apivalidation.ValidateNameFunc
	// warning, if set, goes with every answer about the resource (kube's
	// deprecation warning).
	warning string
	// warnings, if set, are kube's warnings on an object a write stored
	// (WarningsOnCreate, WarningsOnUpdate); created is true for a create.
	warnings func(obj db.Object, created bool) []string
	// admitWrite, if set, may refuse a create (old nil) or update of obj
	// by the request's user, inside the transaction that stores it (a Read
	// one for a dry run): RBAC's escalation check.
	admitWrite func(s *server, tx *db.Tx, user authenticationv1.UserInfo, obj, old db.Object) error
}

// allVerbs are the verbs of a resource served in full.
var allVerbs = metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}

// servedVerbs are the verbs rs serves.
func (rs *resource) servedVerbs() metav1.Verbs {
	if rs.verbs == nil {
		return allVerbs
	}
	return rs.verbs
}

// serves reports whether rs serves verb.
func (rs *resource) serves(verb string) bool { return slices.Contains(rs.servedVerbs(), verb) }

// namespaced reports whether rs lives in namespaces.
func (rs *resource) namespaced() bool { return rs.store.Namespaced }

// resources are all the served resources.
var resources = []*resource{podResource, cronJobResource, jobResource, eventResource, namespaceResource, nodeResource, eventV1Resource,
	serviceResource, endpointsResource, endpointSliceResource, configMapResource, secretResource,
	serviceAccountResource, roleResource, clusterRoleResource, roleBindingResource, clusterRoleBindingResource,
	podTemplateResource, leaseResource, runtimeClassResource}

// gvk is the resource's kind with its group version.
func (rs *resource) gvk() schema.GroupVersionKind { return rs.gv.schema().WithKind(rs.kind) }

// groupResource names the resource in errors ("jobs.batch", "pods").
func (rs *resource) groupResource() schema.GroupResource {
	return schema.GroupResource{Group: rs.gv.group, Resource: rs.plural}
}

// groupKind names the kind in validation errors ("Job.batch").
func (rs *resource) groupKind() schema.GroupKind {
	return schema.GroupKind{Group: rs.gv.group, Kind: rs.kind}
}

// setTypeMeta sets apiVersion and kind on an object about to go out.
func (rs *resource) setTypeMeta(obj db.Object) {
	obj.GetObjectKind().SetGroupVersionKind(rs.gvk())
}

// objectFields are the field-selector fields every object has.
func objectFields(obj db.Object) fields.Set {
	return fields.Set{"metadata.name": obj.GetName(), "metadata.namespace": obj.GetNamespace()}
}

// validateAs adapts a kube rule on a new object of kind T to a
// validateCreate hook.
func validateAs[T db.Object](rule func(T) field.ErrorList) func(db.Object) field.ErrorList {
	return func(obj db.Object) field.ErrorList { return rule(obj.(T)) }
}

// validateUpdateAs adapts a kube rule on an update (new, old) of kind T to
// a validateUpdate or validateStatusUpdate hook.
func validateUpdateAs[T db.Object](rule func(T, T) field.ErrorList) func(db.Object, db.Object) field.ErrorList {
	return func(newObj, oldObj db.Object) field.ErrorList { return rule(newObj.(T), oldObj.(T)) }
}

// prepareUpdateAs adapts kube's preparations of an update and of a status
// update of kind T to a prepareUpdate hook.
func prepareUpdateAs[T db.Object](update, status func(T, T)) func(db.Object, db.Object, bool) {
	return func(newObj, oldObj db.Object, isStatus bool) {
		if isStatus {
			status(newObj.(T), oldObj.(T))
			return
		}
		update(newObj.(T), oldObj.(T))
	}
}

// listItems is a list's Items: the stored objects, each a *T, as values.
func listItems[T any](items []db.Object) []T {
	out := make([]T, len(items))
	for i, it := range items {
		out[i] = *any(it).(*T)
	}
	return out
}
