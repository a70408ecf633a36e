package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"

	"github.com/gorilla/mux"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	"github.com/skiff-sh/skiff/db"
)

// eventsV1 is the events.k8s.io/v1 group version.
var eventsV1 = groupVersion{group: "events.k8s.io", version: "v1"}

// eventV1Resource is events.k8s.io/v1 events: the core/v1 Events, stored
// once, seen through kube's conversion (involvedObject is regarding,
// message is note, …). Its handlers convert requests and answers around
// the core/v1 handlers.
var eventV1Resource = func() *resource {
	r := *eventResource
	r.gv = eventsV1
	r.goType = reflect.TypeOf(eventsv1.Event{})
	r.listType = reflect.TypeOf(eventsv1.EventList{})
	r.newList = newEventV1List
	r.fields = eventV1Fields
	r.verbs = metav1.Verbs{"create", "delete", "get", "list", "patch", "update", "watch"}
	return &r
}()

func newEventV1List(items []db.Object, meta metav1.ListMeta) runtime.Object {
	l := &eventsv1.EventList{TypeMeta: metav1.TypeMeta{APIVersion: eventsV1.String(), Kind: "EventList"}, ListMeta: meta,
		Items: make([]eventsv1.Event, len(items))}
	for i, it := range items {
		l.Items[i] = *eventToV1(it.(*corev1.Event))
	}
	return l
}

// eventV1FieldNames maps events.k8s.io/v1 field selector names to the core
// ones (kube's field label conversion for events.k8s.io).
var eventV1FieldNames = map[string]string{
	"metadata.name": "metadata.name", "metadata.namespace": "metadata.namespace",
	"reason": "reason", "type": "type", "reportingController": "reportingComponent",
	"regarding.kind": "involvedObject.kind", "regarding.namespace": "involvedObject.namespace",
	"regarding.name": "involvedObject.name", "regarding.uid": "involvedObject.uid",
	"regarding.apiVersion": "involvedObject.apiVersion", "regarding.resourceVersion": "involvedObject.resourceVersion",
	"regarding.fieldPath": "involvedObject.fieldPath",
}

// eventV1Fields are the events.k8s.io/v1 field-selector fields of a stored event.
func eventV1Fields(obj db.Object) fields.Set {
	core := eventFields(obj)
	f := fields.Set{}
	for v1, c := range eventV1FieldNames {
		f[v1] = core[c]
	}
	return f
}

// eventsV1Routes registers the events.k8s.io/v1 paths.
func (s *server) eventsV1Routes(r *mux.Router) {
	rs := eventV1Resource
	prefix := rs.gv.prefix()
	collection := prefix + "/namespaces/{namespace}/events"
	list := s.eventsV1List(false)
	watch := s.eventsV1List(true)
	r.HandleFunc(prefix+"/events", s.methods(rs, "", map[string]http.HandlerFunc{http.MethodGet: list}))
	r.HandleFunc(prefix+"/watch/events", s.methods(rs, "", map[string]http.HandlerFunc{http.MethodGet: watch}))
	r.HandleFunc(prefix+"/watch/namespaces/{namespace}/events", s.methods(rs, "", map[string]http.HandlerFunc{http.MethodGet: watch}))
	r.HandleFunc(collection, s.methods(rs, "", map[string]http.HandlerFunc{
		http.MethodGet:  list,
		http.MethodPost: s.eventsV1Write(s.create(eventResource)),
	}))
	r.HandleFunc(collection+"/{name}", s.methods(rs, "", map[string]http.HandlerFunc{
		http.MethodGet:    func(w http.ResponseWriter, r *http.Request) { serveV1(w, r, false, s.get(eventResource)) },
		http.MethodPut:    s.eventsV1Write(s.update(eventResource, false)),
		http.MethodPatch:  s.eventsV1Patch,
		http.MethodDelete: func(w http.ResponseWriter, r *http.Request) { serveV1(w, r, false, s.deleteHandler(eventResource)) },
	}))
}

// serveV1 runs a core/v1 handler and converts its answer.
func serveV1(w http.ResponseWriter, r *http.Request, stream bool, core http.HandlerFunc) {
	cw := newV1Writer(w, stream)
	core(cw, r)
	cw.finish()
}

// eventsV1List serves a list or watch (always a watch on the deprecated
// /watch/ paths), with the field selector in core names.
func (s *server) eventsV1List(forceWatch bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		r, err := withCoreFieldSelector(r)
		if err != nil {
			writeError(w, r, err)
			return
		}
		q := r.URL.Query()
		if forceWatch {
			q.Set("watch", "true")
			r.URL.RawQuery = q.Encode()
		}
		watch := q.Get("watch") == "true" || q.Get("watch") == "1"
		serveV1(w, r, watch, s.list(eventResource))
	}
}

// withCoreFieldSelector is r with its fieldSelector in core/v1 names.
func withCoreFieldSelector(r *http.Request) (*http.Request, error) {
	q := r.URL.Query()
	raw := q.Get("fieldSelector")
	if raw == "" {
		return r, nil
	}
	sel, err := fields.ParseSelector(raw)
	if err != nil {
		return r, apierrors.NewBadRequest(fmt.Sprintf("invalid field selector: %v", err))
	}
	sel, err = sel.Transform(func(f, v string) (string, string, error) {
		core, ok := eventV1FieldNames[f]
		if !ok {
			return "", "", apierrors.NewBadRequest(fmt.Sprintf("field label not supported: %s", f))
		}
		return core, v, nil
	})
	if err != nil {
		return r, err
	}
	q.Set("fieldSelector", sel.String())
	r = r.Clone(r.Context())
	r.URL.RawQuery = q.Encode()
	return r, nil
}

// eventsV1Write serves a POST or PUT of an events.k8s.io/v1 Event: the
// body is decoded as one, converted, and handed to the core handler as JSON.
func (s *server) eventsV1Write(core http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ev, err := decodeEventV1(w, r)
		if err != nil {
			writeError(w, r, err)
			return
		}
		body, err := json.Marshal(eventFromV1(ev))
		if err != nil {
			writeError(w, r, err)
			return
		}
		serveV1(w, r, false, func(w http.ResponseWriter, _ *http.Request) { core(w, withJSONBody(r, body)) })
	}
}

// eventsV1Patch serves a PATCH: the patch applies to the events.k8s.io/v1
// form of the stored Event; the result is written as a core update that
// must find the Event unchanged since it was read.
func (s *server) eventsV1Patch(w http.ResponseWriter, r *http.Request) {
	v := mux.Vars(r)
	obj, err := s.store.Get(db.Events, v["namespace"], v["name"])
	if err != nil {
		writeError(w, r, statusFor(err, eventV1Resource.groupResource(), v["name"]))
		return
	}
	current := eventToV1(obj.(*corev1.Event))
	patched, err := applyPatchTo(w, r, eventV1Resource, current)
	if err != nil {
		writeError(w, r, statusFor(err, eventV1Resource.groupResource(), v["name"]))
		return
	}
	ev := patched.(*eventsv1.Event)
	if ev.ResourceVersion == "" {
		ev.ResourceVersion = current.ResourceVersion
	}
	body, err := json.Marshal(eventFromV1(ev))
	if err != nil {
		writeError(w, r, err)
		return
	}
	req := withJSONBody(r, body)
	req.Method = http.MethodPut
	serveV1(w, req, false, s.update(eventResource, false))
}

// decodeEventV1 decodes a request body (JSON, YAML or protobuf) as an
// events.k8s.io/v1 Event, with the request's field validation.
func decodeEventV1(w http.ResponseWriter, r *http.Request) (*eventsv1.Event, error) {
	ev := &eventsv1.Event{}
	prefix := decodePrefix(eventV1Resource)
	if mediaType(r) == mediaProtobuf {
		data, err := readBody(r)
		if err != nil {
			return nil, err
		}
		gvk, err := decodeProtobuf(data, ev, prefix)
		if err != nil {
			return nil, err
		}
		ev.SetGroupVersionKind(gvk)
	} else {
		directive, err := validationDirective(r)
		if err != nil {
			return nil, err
		}
		data, strict, err := bodyJSON(r)
		if err != nil {
			return nil, err
		}
		if err := decodeJSON(w, data, ev, directive, strict, prefix); err != nil {
			return nil, err
		}
	}
	if err := checkEventV1TypeMeta(ev); err != nil {
		return nil, err
	}
	return ev, nil
}

func checkEventV1TypeMeta(ev *eventsv1.Event) error {
	gvk := ev.GroupVersionKind()
	if gvk.Version != "" && gvk.GroupVersion().String() != eventsV1.String() {
		return apierrors.NewBadRequest(fmt.Sprintf("the API version in the data (%s) does not match the expected API version (%s)",
			gvk.GroupVersion(), eventsV1))
	}
	if gvk.Kind != "" && gvk.Kind != "Event" {
		return apierrors.NewBadRequest(fmt.Sprintf("the kind in the data (%s) does not match the expected kind (Event)", gvk.Kind))
	}
	return nil
}

// applyPatchTo applies the request's JSON, merge or strategic merge patch
// to obj (of rs's Go type) and decodes the result.
func applyPatchTo(w http.ResponseWriter, r *http.Request, rs *resource, obj runtime.Object) (runtime.Object, error) {
	pt := types.PatchType(mediaType(r))
	patch, err := readBody(r)
	if err != nil {
		return nil, err
	}
	original, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var patched []byte
	switch pt {
	case types.JSONPatchType:
		var p jsonpatch.Patch
		if p, err = jsonpatch.DecodePatch(patch); err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		patched, err = p.Apply(original)
	case types.MergePatchType:
		if !json.Valid(patch) {
			return nil, apierrors.NewBadRequest("error decoding patch: invalid JSON")
		}
		patched, err = jsonpatch.MergePatch(original, patch)
	case types.StrategicMergePatchType:
		patched, err = strategicpatch.StrategicMergePatch(original, patch, reflect.New(rs.goType).Interface())
	default:
		return nil, unsupportedPatchType(string(pt))
	}
	if err != nil {
		return nil, patchFailed(err)
	}
	out := reflect.New(rs.goType).Interface().(runtime.Object)
	if err := decodeJSON(w, patched, out, validationIgnore, nil, decodePrefix(rs)); err != nil {
		return nil, err
	}
	return out, nil
}

// withJSONBody is r with body as its JSON content.
func withJSONBody(r *http.Request, body []byte) *http.Request {
	req := r.Clone(r.Context())
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.ContentLength = int64(len(body))
	req.Header = r.Header.Clone()
	req.Header.Set("Content-Type", mediaJSON)
	return req
}

// v1Writer converts the core/v1 handlers' answers to events.k8s.io/v1:
// Events, EventLists and watch events carrying Events; anything else (a
// Status, a Table) passes as it is. A watch is converted line by line as
// it streams; any other answer once it is complete (Close).
type v1Writer struct {
	http.ResponseWriter
	stream bool
	buf    bytes.Buffer
	code   int
}

func newV1Writer(w http.ResponseWriter, stream bool) *v1Writer {
	return &v1Writer{ResponseWriter: w, stream: stream}
}

func (cw *v1Writer) WriteHeader(code int) {
	cw.Header().Del("Content-Length")
	if cw.stream {
		cw.ResponseWriter.WriteHeader(code)
		return
	}
	cw.code = code
}

func (cw *v1Writer) Write(p []byte) (int, error) {
	cw.buf.Write(p)
	if cw.stream {
		if err := cw.writeLines(); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// writeLines converts and writes the complete lines buffered.
func (cw *v1Writer) writeLines() error {
	for {
		i := bytes.IndexByte(cw.buf.Bytes(), '\n')
		if i < 0 {
			return nil
		}
		line := cw.buf.Next(i + 1)
		if _, err := cw.ResponseWriter.Write(convertEventsJSON(line)); err != nil {
			return err
		}
	}
}

func (cw *v1Writer) Flush() {
	if f, ok := cw.ResponseWriter.(http.Flusher); ok && cw.stream {
		f.Flush()
	}
}

// finish writes a buffered (non-streamed) answer. The handlers below call
// it when the core handler returns.
func (cw *v1Writer) finish() {
	if cw.stream {
		if cw.buf.Len() > 0 {
			_, _ = cw.ResponseWriter.Write(convertEventsJSON(cw.buf.Bytes()))
		}
		return
	}
	if cw.code == 0 {
		cw.code = http.StatusOK
	}
	cw.ResponseWriter.WriteHeader(cw.code)
	_, _ = cw.ResponseWriter.Write(convertEventsJSON(cw.buf.Bytes()))
}

// convertEventsJSON converts one JSON document of core/v1 Events to
// events.k8s.io/v1, keeping its indentation; anything else is returned as is.
func convertEventsJSON(data []byte) []byte {
	var head struct {
		Kind       string          `json:"kind"`
		APIVersion string          `json:"apiVersion"`
		Type       string          `json:"type"`
		Object     json.RawMessage `json:"object"`
	}
	if json.Unmarshal(data, &head) != nil {
		return data
	}
	var out any
	switch {
	case head.Kind == "Event" && head.APIVersion == "v1":
		var ev corev1.Event
		if json.Unmarshal(data, &ev) != nil {
			return data
		}
		out = eventToV1(&ev)
	case head.Kind == "EventList" && head.APIVersion == "v1":
		var list corev1.EventList
		if json.Unmarshal(data, &list) != nil {
			return data
		}
		l := &eventsv1.EventList{TypeMeta: metav1.TypeMeta{APIVersion: eventsV1.String(), Kind: "EventList"}, ListMeta: list.ListMeta,
			Items: make([]eventsv1.Event, len(list.Items))}
		for i := range list.Items {
			l.Items[i] = *eventToV1(&list.Items[i])
		}
		out = l
	case head.Type != "" && len(head.Object) > 0:
		out = map[string]json.RawMessage{"type": json.RawMessage(fmt.Sprintf("%q", head.Type)),
			"object": bytes.TrimSpace(convertEventsJSON(head.Object))}
	default:
		return data
	}
	converted, err := json.Marshal(out)
	if err != nil {
		return data
	}
	if bytes.Contains(bytes.TrimSpace(data), []byte("\n")) {
		var indented bytes.Buffer
		if json.Indent(&indented, converted, "", "  ") == nil {
			converted = indented.Bytes()
		}
	}
	if bytes.HasSuffix(data, []byte("\n")) {
		converted = append(converted, '\n')
	}
	return converted
}

// eventToV1 is kube's conversion of a core/v1 Event to events.k8s.io/v1.
func eventToV1(ev *corev1.Event) *eventsv1.Event {
	out := &eventsv1.Event{
		TypeMeta:                 metav1.TypeMeta{APIVersion: eventsV1.String(), Kind: "Event"},
		ObjectMeta:               ev.ObjectMeta,
		EventTime:                ev.EventTime,
		ReportingController:      ev.ReportingController,
		ReportingInstance:        ev.ReportingInstance,
		Action:                   ev.Action,
		Reason:                   ev.Reason,
		Regarding:                ev.InvolvedObject,
		Related:                  ev.Related,
		Note:                     ev.Message,
		Type:                     ev.Type,
		DeprecatedSource:         ev.Source,
		DeprecatedFirstTimestamp: ev.FirstTimestamp,
		DeprecatedLastTimestamp:  ev.LastTimestamp,
		DeprecatedCount:          ev.Count,
	}
	if ev.Series != nil {
		out.Series = &eventsv1.EventSeries{Count: ev.Series.Count, LastObservedTime: ev.Series.LastObservedTime}
	}
	return out
}

// eventFromV1 is kube's conversion of an events.k8s.io/v1 Event to core/v1.
func eventFromV1(ev *eventsv1.Event) *corev1.Event {
	out := &corev1.Event{
		TypeMeta:            metav1.TypeMeta{APIVersion: "v1", Kind: "Event"},
		ObjectMeta:          ev.ObjectMeta,
		InvolvedObject:      ev.Regarding,
		Reason:              ev.Reason,
		Message:             ev.Note,
		Source:              ev.DeprecatedSource,
		FirstTimestamp:      ev.DeprecatedFirstTimestamp,
		LastTimestamp:       ev.DeprecatedLastTimestamp,
		Count:               ev.DeprecatedCount,
		Type:                ev.Type,
		EventTime:           ev.EventTime,
		Action:              ev.Action,
		Related:             ev.Related,
		ReportingController: ev.ReportingController,
		ReportingInstance:   ev.ReportingInstance,
	}
	if ev.Series != nil {
		out.Series = &corev1.EventSeries{Count: ev.Series.Count, LastObservedTime: ev.Series.LastObservedTime}
	}
	return out
}
