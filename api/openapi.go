package api

import (
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"

	openapiv2 "github.com/google/gnostic-models/openapiv2"
	"github.com/gorilla/mux"
	"github.com/sirupsen/logrus"
	"google.golang.org/protobuf/proto"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// The protobuf form of /openapi/v2: client-go asks for the old name (with
// "@", which is not a valid media type to parse) and gets the answer under
// the new one, as kube-openapi serves it.
const (
	mediaOpenAPIV2ProtoOld = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
	mediaOpenAPIV2Proto    = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
)

// openAPIDocs are the OpenAPI documents, rendered once on first use.
type openAPIDocs struct {
	info  version.Info
	once  sync.Once
	err   error
	v2    []byte
	v2pb  []byte
	v3    map[string][]byte // by group-version path: "api/v1", "apis/batch/v1"
	v3tag map[string]string // hash of each v3 document
}

func newOpenAPIDocs(info version.Info) *openAPIDocs { return &openAPIDocs{info: info} }

// load renders the documents the first time.
func (d *openAPIDocs) load() error {
	d.once.Do(func() { d.err = d.render() })
	return d.err
}

func (d *openAPIDocs) render() error {
	var err error
	if d.v2, err = json.Marshal(buildOpenAPIV2(d.info)); err != nil {
		return fmt.Errorf("encoding openapi v2: %w", err)
	}
	doc, err := openapiv2.ParseDocument(d.v2)
	if err != nil {
		return fmt.Errorf("converting openapi v2 to protobuf: %w", err)
	}
	if d.v2pb, err = proto.Marshal(doc); err != nil {
		return fmt.Errorf("encoding openapi v2 protobuf: %w", err)
	}
	d.v3, d.v3tag = map[string][]byte{}, map[string]string{}
	for _, gv := range groupVersions {
		key := strings.TrimPrefix(gv.prefix(), "/")
		if d.v3[key], err = json.Marshal(buildOpenAPIV3(d.info, gv)); err != nil {
			return fmt.Errorf("encoding openapi v3 %s: %w", gv, err)
		}
		d.v3tag[key] = fmt.Sprintf("%X", sha512.Sum512(d.v3[key]))
	}
	return nil
}

// openAPIV2 serves /openapi/v2 as JSON, or protobuf when asked for it.
func (s *server) openAPIV2(w http.ResponseWriter, r *http.Request) {
	if err := s.openapi.load(); err != nil {
		writeError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", mediaJSON)
	body := s.openapi.v2
	if accept := r.Header.Get("Accept"); strings.Contains(accept, mediaOpenAPIV2Proto) || strings.Contains(accept, mediaOpenAPIV2ProtoOld) {
		w.Header().Set("Content-Type", mediaOpenAPIV2Proto)
		body = s.openapi.v2pb
	}
	_, _ = w.Write(body)
}

// openAPIV3Discovery serves /openapi/v3: where each group version's
// document is, with a hash to cache it by.
func (s *server) openAPIV3Discovery(w http.ResponseWriter, r *http.Request) {
	if err := s.openapi.load(); err != nil {
		writeError(w, r, err)
		return
	}
	type entry struct {
		URL string `json:"serverRelativeURL"`
	}
	paths := map[string]entry{}
	for key, tag := range s.openapi.v3tag {
		paths[key] = entry{URL: "/openapi/v3/" + key + "?hash=" + tag}
	}
	writeJSON(w, r, http.StatusOK, map[string]any{"paths": paths})
}

// openAPIV3GroupVersion serves /openapi/v3/<group-version path>.
func (s *server) openAPIV3GroupVersion(w http.ResponseWriter, r *http.Request) {
	if err := s.openapi.load(); err != nil {
		writeError(w, r, err)
		return
	}
	key := mux.Vars(r)["gv"]
	body, ok := s.openapi.v3[key]
	if !ok {
		notFound(w, r)
		return
	}
	if r.URL.Query().Get("hash") == s.openapi.v3tag[key] {
		w.Header().Set("Cache-Control", "public, immutable")
	}
	w.Header().Set("Etag", `"`+s.openapi.v3tag[key]+`"`)
	w.Header().Set("Content-Type", mediaJSON)
	_, _ = w.Write(body)
}

// tagKinds marks the top-level kinds of every served group version.
func tagKinds(b *schemaBuilder) {
	for _, rs := range resources {
		b.tagKind(rs.goType, rs.gv.group, rs.gv.version, rs.kind)
		b.tagKind(rs.listType, rs.gv.group, rs.gv.version, rs.kind+"List")
	}
	b.tagKind(evictionType, "policy", "v1", "Eviction")
	for _, t := range []reflect.Type{statusType, deleteOptionsType} {
		for _, gv := range groupVersions {
			b.tagKind(t, gv.group, gv.version, t.Name())
		}
	}
}

// opExtensions are the kube extensions of an operation.
func opExtensions(rs *resource, o op) spec.Extensions {
	gvk := o.gvk
	if gvk == nil {
		gvk = map[string]string{"group": rs.gv.group, "version": rs.gv.version, "kind": rs.kind}
	}
	return spec.Extensions{"x-kubernetes-action": o.action, "x-kubernetes-group-version-kind": gvk}
}

// responseMediaTypes are what an operation answers in.
func responseMediaTypes(o op) []string {
	if o.resp == nil {
		return []string{"text/plain"}
	}
	return []string{mediaJSON, mediaYAML}
}

// codeDescriptions name the response codes.
var codeDescriptions = map[int]string{200: "OK", 201: "Created", 202: "Accepted"}

func tagOf(gv groupVersion) string {
	if gv.group == "" {
		return "core_" + gv.version
	}
	return gv.group + "_" + gv.version
}

// buildOpenAPIV2 is the swagger 2.0 document of everything served.
func buildOpenAPIV2(info version.Info) *spec.Swagger {
	b := newSchemaBuilder(false)
	tagKinds(b)
	paths := map[string]spec.PathItem{}
	for _, rs := range resources {
		for _, pi := range resourcePaths(rs) {
			paths[pi.path] = v2PathItem(b, pi)
		}
	}
	b.ref(statusType)
	defs := spec.Definitions{}
	for name, s := range b.defs {
		defs[name] = *s
	}
	return &spec.Swagger{SwaggerProps: spec.SwaggerProps{
		Swagger:     "2.0",
		Info:        &spec.Info{InfoProps: spec.InfoProps{Title: "Kubernetes", Version: info.GitVersion}},
		Paths:       &spec.Paths{Paths: paths},
		Definitions: defs,
	}}
}

func v2PathItem(b *schemaBuilder, pi pathItem) spec.PathItem {
	item := spec.PathItem{}
	for _, p := range pi.params {
		item.Parameters = append(item.Parameters, v2Param(p))
	}
	for _, o := range pi.ops {
		op := &spec.Operation{
			VendorExtensible: spec.VendorExtensible{Extensions: opExtensions(pi.rs, o)},
			OperationProps: spec.OperationProps{
				ID: o.id, Tags: []string{tagOf(pi.rs.gv)}, Consumes: o.consumes, Produces: responseMediaTypes(o),
				Schemes:   []string{"https"},
				Responses: &spec.Responses{ResponsesProps: spec.ResponsesProps{StatusCodeResponses: map[int]spec.Response{}}},
			},
		}
		if o.consumes == nil {
			op.Consumes = []string{"*/*"}
		}
		if o.body != nil {
			ref := b.ref(o.body)
			op.Parameters = append(op.Parameters, spec.Parameter{ParamProps: spec.ParamProps{Name: "body", In: "body", Required: o.body != deleteOptionsType, Schema: &ref}})
		}
		for _, p := range o.params {
			op.Parameters = append(op.Parameters, v2Param(p))
		}
		for _, code := range o.codes {
			schema := spec.StringProperty()
			if o.resp != nil {
				ref := b.ref(o.resp)
				schema = &ref
			}
			op.Responses.StatusCodeResponses[code] = spec.Response{ResponseProps: spec.ResponseProps{Description: codeDescriptions[code], Schema: schema}}
		}
		setV2Op(&item, o.method, op)
	}
	return item
}

func v2Param(p param) spec.Parameter {
	return spec.Parameter{
		ParamProps:        spec.ParamProps{Name: p.name, In: p.in, Description: p.desc, Required: p.required},
		SimpleSchema:      spec.SimpleSchema{Type: p.typ},
		CommonValidations: spec.CommonValidations{UniqueItems: true},
	}
}

func setV2Op(item *spec.PathItem, method string, op *spec.Operation) {
	switch method {
	case "get":
		item.Get = op
	case "put":
		item.Put = op
	case "post":
		item.Post = op
	case "patch":
		item.Patch = op
	case "delete":
		item.Delete = op
	default:
		logrus.Errorf("openapi: unknown method %q", method)
	}
}

// buildOpenAPIV3 is the OpenAPI 3.0 document of one group version.
func buildOpenAPIV3(info version.Info, gv groupVersion) *spec3.OpenAPI {
	b := newSchemaBuilder(true)
	tagKinds(b)
	paths := map[string]*spec3.Path{}
	for _, rs := range resources {
		if rs.gv != gv {
			continue
		}
		for _, pi := range resourcePaths(rs) {
			paths[pi.path] = v3Path(b, pi)
		}
	}
	b.ref(statusType)
	return &spec3.OpenAPI{
		Version:    "3.0.0",
		Info:       &spec.Info{InfoProps: spec.InfoProps{Title: "Kubernetes", Version: info.GitVersion}},
		Paths:      &spec3.Paths{Paths: paths},
		Components: &spec3.Components{Schemas: b.defs},
	}
}

func v3Path(b *schemaBuilder, pi pathItem) *spec3.Path {
	item := &spec3.Path{}
	for _, p := range pi.params {
		item.Parameters = append(item.Parameters, v3Param(p))
	}
	for _, o := range pi.ops {
		op := &spec3.Operation{
			VendorExtensible: spec.VendorExtensible{Extensions: opExtensions(pi.rs, o)},
			OperationProps: spec3.OperationProps{
				OperationId: o.id, Tags: []string{tagOf(pi.rs.gv)},
				Responses: &spec3.Responses{ResponsesProps: spec3.ResponsesProps{StatusCodeResponses: map[int]*spec3.Response{}}},
			},
		}
		for _, p := range o.params {
			op.Parameters = append(op.Parameters, v3Param(p))
		}
		if o.body != nil {
			ref := b.ref(o.body)
			content := map[string]*spec3.MediaType{}
			consumes := o.consumes
			if consumes == nil {
				consumes = []string{"*/*"}
			}
			for _, mt := range consumes {
				content[mt] = &spec3.MediaType{MediaTypeProps: spec3.MediaTypeProps{Schema: &ref}}
			}
			op.RequestBody = &spec3.RequestBody{RequestBodyProps: spec3.RequestBodyProps{Content: content, Required: o.body != deleteOptionsType}}
		}
		for _, code := range o.codes {
			content := map[string]*spec3.MediaType{}
			for _, mt := range responseMediaTypes(o) {
				schema := spec.StringProperty()
				if o.resp != nil {
					ref := b.ref(o.resp)
					schema = &ref
				}
				content[mt] = &spec3.MediaType{MediaTypeProps: spec3.MediaTypeProps{Schema: schema}}
			}
			op.Responses.StatusCodeResponses[code] = &spec3.Response{ResponseProps: spec3.ResponseProps{Description: codeDescriptions[code], Content: content}}
		}
		setV3Op(item, o.method, op)
	}
	return item
}

func v3Param(p param) *spec3.Parameter {
	schema := &spec.Schema{SchemaProps: spec.SchemaProps{Type: spec.StringOrArray{p.typ}, UniqueItems: true}}
	return &spec3.Parameter{ParameterProps: spec3.ParameterProps{Name: p.name, In: p.in, Description: p.desc, Required: p.required, Schema: schema}}
}

func setV3Op(item *spec3.Path, method string, op *spec3.Operation) {
	switch method {
	case "get":
		item.Get = op
	case "put":
		item.Put = op
	case "post":
		item.Post = op
	case "patch":
		item.Patch = op
	case "delete":
		item.Delete = op
	default:
		logrus.Errorf("openapi: unknown method %q", method)
	}
}
