package api

import (
	"reflect"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// schemaBuilder derives OpenAPI schemas from Go API types by reflection:
// json tags name the properties, SwaggerDoc() describes them, struct types
// become named definitions referenced where used. One builder per
// document: v3 documents reference with allOf (a $ref cannot carry a
// description in OpenAPI 3.0), as kube's do.
type schemaBuilder struct {
	v3   bool
	defs map[string]*spec.Schema
	gvks map[reflect.Type][]map[string]string
}

func newSchemaBuilder(v3 bool) *schemaBuilder {
	return &schemaBuilder{v3: v3, defs: map[string]*spec.Schema{}, gvks: map[reflect.Type][]map[string]string{}}
}

// defName is kube's definition name of a type: the package path with the
// domain reversed, then the type name ("io.k8s.api.batch.v1.Job").
func defName(t reflect.Type) string {
	host, rest, _ := strings.Cut(t.PkgPath(), "/")
	labels := strings.Split(host, ".")
	for i, j := 0, len(labels)-1; i < j; i, j = i+1, j-1 {
		labels[i], labels[j] = labels[j], labels[i]
	}
	return strings.Join(labels, ".") + "." + strings.ReplaceAll(rest, "/", ".") + "." + t.Name()
}

// refPrefix is where definitions live in the document.
func (b *schemaBuilder) refPrefix() string {
	if b.v3 {
		return "#/components/schemas/"
	}
	return "#/definitions/"
}

// tagKind marks a type as a top-level kind (x-kubernetes-group-version-kind).
func (b *schemaBuilder) tagKind(t reflect.Type, group, version, kind string) {
	b.gvks[t] = append(b.gvks[t], map[string]string{"group": group, "version": version, "kind": kind})
}

// ref returns a reference to t's definition, building it if needed.
func (b *schemaBuilder) ref(t reflect.Type) spec.Schema {
	name := defName(t)
	if _, ok := b.defs[name]; !ok {
		b.defs[name] = &spec.Schema{} // placeholder: cycles end here
		s := b.definition(t)
		if gvks, ok := b.gvks[t]; ok {
			list := make([]any, len(gvks))
			for i, g := range gvks {
				list[i] = g
			}
			s.AddExtension("x-kubernetes-group-version-kind", list)
		}
		*b.defs[name] = s
	}
	return spec.Schema{SchemaProps: spec.SchemaProps{Ref: spec.MustCreateRef(b.refPrefix() + name)}}
}

// Types that describe their own OpenAPI shape (Time, Quantity, IntOrString…).
type (
	openAPITyped interface {
		OpenAPISchemaType() []string
		OpenAPISchemaFormat() string
	}
	openAPIV3OneOf interface{ OpenAPIV3OneOfTypes() []string }
	swaggerDoc     interface{ SwaggerDoc() map[string]string }
)

var (
	rawExtensionType = reflect.TypeOf(runtime.RawExtension{})
	fieldsV1Type     = reflect.TypeOf(metav1.FieldsV1{})
)

// definition is the schema of a named struct type.
func (b *schemaBuilder) definition(t reflect.Type) spec.Schema {
	v := reflect.New(t).Elem().Interface()
	var s spec.Schema
	if d, ok := v.(swaggerDoc); ok {
		s.Description = d.SwaggerDoc()[""]
	}
	switch typed, _ := v.(openAPITyped); {
	case typed != nil:
		s.Type = typed.OpenAPISchemaType()
		s.Format = typed.OpenAPISchemaFormat()
		if oneOf, ok := v.(openAPIV3OneOf); ok && b.v3 && len(oneOf.OpenAPIV3OneOfTypes()) > 0 {
			s.Type = nil
			for _, typ := range oneOf.OpenAPIV3OneOfTypes() {
				s.OneOf = append(s.OneOf, *spec.StringProperty().Typed(typ, ""))
			}
		}
		return s
	case t == rawExtensionType || t == fieldsV1Type:
		s.Type = spec.StringOrArray{"object"}
		return s
	}
	s.Type = spec.StringOrArray{"object"}
	b.addFields(&s, t, v)
	markStruct(&s, t)
	return s
}

// addFields adds the json properties of struct type t (inline embedded
// structs flattened) to s.
func (b *schemaBuilder) addFields(s *spec.Schema, t reflect.Type, v any) {
	docs := map[string]string{}
	if d, ok := v.(swaggerDoc); ok {
		docs = d.SwaggerDoc()
	}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if f.Anonymous && (name == "" || strings.Contains(opts, "inline")) {
			b.addFields(s, f.Type, reflect.New(f.Type).Elem().Interface())
			continue
		}
		if name == "" {
			name = f.Name
		}
		p := b.property(f.Type, docs[name])
		if strategy := f.Tag.Get("patchStrategy"); strategy != "" {
			p.AddExtension("x-kubernetes-patch-strategy", strategy)
		}
		if key := f.Tag.Get("patchMergeKey"); key != "" {
			p.AddExtension("x-kubernetes-patch-merge-key", key)
		}
		markField(&p, t, name)
		if s.Properties == nil {
			s.Properties = map[string]spec.Schema{}
		}
		s.Properties[name] = p
		if !strings.Contains(opts, "omitempty") && f.Type.Kind() != reflect.Pointer {
			s.Required = append(s.Required, name)
		}
	}
}

// property is the schema of a field of type t described by doc.
func (b *schemaBuilder) property(t reflect.Type, doc string) spec.Schema {
	s := b.typeSchema(t)
	if s.Ref.String() != "" && b.v3 {
		s = spec.Schema{SchemaProps: spec.SchemaProps{AllOf: []spec.Schema{s}}}
	}
	s.Description = doc
	return s
}

// typeSchema is the (unnamed) schema of a field's type.
func (b *schemaBuilder) typeSchema(t reflect.Type) spec.Schema {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		return b.ref(t)
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return *spec.StrFmtProperty("byte")
		}
		item := b.typeSchema(t.Elem())
		return *spec.ArrayProperty(&item)
	case reflect.Map:
		item := b.typeSchema(t.Elem())
		return *spec.MapProperty(&item)
	case reflect.String:
		return *spec.StringProperty()
	case reflect.Bool:
		return *spec.BoolProperty()
	case reflect.Int32, reflect.Uint32, reflect.Int16, reflect.Uint16, reflect.Int8, reflect.Uint8:
		return *spec.Int32Property()
	case reflect.Int, reflect.Int64, reflect.Uint, reflect.Uint64:
		return *spec.Int64Property()
	case reflect.Float32, reflect.Float64:
		return *spec.Float64Property()
	}
	return spec.Schema{SchemaProps: spec.SchemaProps{Type: spec.StringOrArray{"object"}}}
}
