package api

import (
	"encoding/json"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/skiff-sh/skiff/db"
)

// metadata.managedFields and server-side apply, as kube-apiserver tracks
// them: one managedfields.FieldManager (structured-merge-diff underneath)
// per resource and per status subresource, typed by the schemas of the
// OpenAPI documents this package serves.

// fieldManagerKey names a field manager: a resource, or its status.
type fieldManagerKey struct {
	rs     *resource
	status bool
}

// fieldManagers are built once: by PrepareWrites, or by the first write.
var fieldManagers = sync.OnceValues(buildFieldManagers)

// PrepareWrites builds what every write needs and no read does: the field
// managers, typed by the served OpenAPI schemas (about 50 ms of CPU and 24
// MB of garbage, 0.4 MB kept). kube-apiserver builds them as it installs
// its groups; a daemon that calls this as it starts spares its first write
// the wait. Safe to call at any time, and more than once.
func PrepareWrites() {
	_, _ = fieldManagers()
}

// fieldManagerFor is the field manager of rs (or of its status).
func fieldManagerFor(rs *resource, status bool) (*managedfields.FieldManager, error) {
	managers, err := fieldManagers()
	if err != nil {
		return nil, err
	}
	fm, ok := managers[fieldManagerKey{rs, status}]
	if !ok {
		return nil, fmt.Errorf("no field manager for %s", rs.plural)
	}
	return fm, nil
}

func buildFieldManagers() (map[fieldManagerKey]*managedfields.FieldManager, error) {
	schemas, err := openAPISchemas()
	if err != nil {
		return nil, err
	}
	tc, err := managedfields.NewTypeConverter(schemas, false)
	if err != nil {
		return nil, fmt.Errorf("building the type converter: %w", err)
	}
	scheme := runtime.NewScheme()
	for _, rs := range resources {
		scheme.AddKnownTypeWithName(rs.gvk(), rs.store.New())
	}
	managers := map[fieldManagerKey]*managedfields.FieldManager{}
	for _, rs := range resources {
		for _, status := range []bool{false, true} {
			// NOTE: kube's strategies reset the status on the main resource
			// and the spec on the status subresource (GetResetFields): such
			// fields in an apply are ignored, and nobody owns them there.
			subresource, reset := "", fieldpath.MakePathOrDie("status")
			if status {
				subresource, reset = "status", fieldpath.MakePathOrDie("spec")
			}
			resetFields := map[fieldpath.APIVersion]fieldpath.Filter{
				fieldpath.APIVersion(rs.gv.String()): fieldpath.NewExcludeSetFilter(fieldpath.NewSet(reset)),
			}
			fm, err := managedfields.NewDefaultFieldManager(tc, scheme, scheme, scheme, rs.gvk(), rs.gv.schema(), subresource, resetFields)
			if err != nil {
				return nil, fmt.Errorf("building the field manager of %s: %w", rs.plural, err)
			}
			managers[fieldManagerKey{rs, status}] = fm
		}
	}
	return managers, nil
}

// openAPISchemas are the component schemas of every served group
// version's OpenAPI v3 document, read back from their JSON form (as a
// client would see them).
func openAPISchemas() (map[string]*spec.Schema, error) {
	all := map[string]*spec.Schema{}
	for _, gv := range groupVersions {
		data, err := json.Marshal(buildOpenAPIV3(version.Info{}, gv).Components.Schemas)
		if err != nil {
			return nil, fmt.Errorf("encoding the schemas of %s: %w", gv, err)
		}
		var schemas map[string]*spec.Schema
		if err := json.Unmarshal(data, &schemas); err != nil {
			return nil, fmt.Errorf("decoding the schemas of %s: %w", gv, err)
		}
		for name, s := range schemas {
			all[name] = s
		}
	}
	return all, nil
}

// trackUpdate records in obj's managedFields the fields that an update (or
// a create: old is an empty object) by manager changed, as kube-apiserver
// does for every write that is not an apply.
func trackUpdate(rs *resource, status bool, old, obj db.Object, manager string) {
	fm, err := fieldManagerFor(rs, status)
	if err != nil {
		return
	}
	rs.setTypeMeta(old)
	rs.setTypeMeta(obj)
	tracked := fm.UpdateNoErrors(old, obj.DeepCopyObject(), manager)
	if a, err := meta.Accessor(tracked); err == nil {
		obj.SetManagedFields(a.GetManagedFields())
	}
}
