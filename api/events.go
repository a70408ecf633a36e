package api

import (
	"reflect"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/kube"
)

// eventResource is core/v1 events: written by skiff's own recorders and by
// clients (client-go's recorder creates and patches them), read by
// `kubectl describe` and `kubectl get events`.
var eventResource = &resource{
	gv:                 coreV1,
	kind:               "Event",
	plural:             "events",
	singular:           "event",
	shortNames:         []string{"ev"},
	store:              db.Events,
	goType:             reflect.TypeOf(corev1.Event{}),
	listType:           reflect.TypeOf(corev1.EventList{}),
	newList:            newEventList,
	fields:             eventFields,
	columns:            eventColumns,
	cells:              func(obj db.Object, now time.Time) []any { return eventCells(obj.(*corev1.Event), now) },
	prepareCreate:      func(*server, db.Object) {},
	validateCreate:     validateAs(kube.ValidateEvent),
	prepareUpdate:      func(db.Object, db.Object, bool) {},
	validateUpdate:     func(n, _ db.Object) field.ErrorList { return kube.ValidateEvent(n.(*corev1.Event)) },
	spec:               func(db.Object) any { return nil },
	defaultPropagation: metav1.DeletePropagationBackground,
	deleteGrace:        func(db.Object, *int64) int64 { return 0 },
	noStatus:           true,
}

func newEventList(items []db.Object, meta metav1.ListMeta) runtime.Object {
	return &corev1.EventList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "EventList"}, ListMeta: meta,
		Items: listItems[corev1.Event](items)}
}

// eventFields are the event fields usable in field selectors; `kubectl
// describe` finds an object's events with involvedObject.name, .namespace,
// .kind and .uid.
func eventFields(obj db.Object) fields.Set {
	ev := obj.(*corev1.Event)
	f := objectFields(obj)
	f["involvedObject.kind"] = ev.InvolvedObject.Kind
	f["involvedObject.namespace"] = ev.InvolvedObject.Namespace
	f["involvedObject.name"] = ev.InvolvedObject.Name
	f["involvedObject.uid"] = string(ev.InvolvedObject.UID)
	f["involvedObject.apiVersion"] = ev.InvolvedObject.APIVersion
	f["involvedObject.resourceVersion"] = ev.InvolvedObject.ResourceVersion
	f["involvedObject.fieldPath"] = ev.InvolvedObject.FieldPath
	f["reason"] = ev.Reason
	f["reportingComponent"] = ev.ReportingController
	f["source"] = firstNonEmpty(ev.Source.Component, ev.ReportingController)
	f["type"] = ev.Type
	return f
}

// eventColumns are kube's event columns; the server prints all of them
// (kubectl shows the priority 1 ones with -o wide).
var eventColumns = []metav1.TableColumnDefinition{
	{Name: "Last Seen", Type: "string", Description: corev1.Event{}.SwaggerDoc()["lastTimestamp"]},
	{Name: "Type", Type: "string", Description: corev1.Event{}.SwaggerDoc()["type"]},
	{Name: "Reason", Type: "string", Description: corev1.Event{}.SwaggerDoc()["reason"]},
	{Name: "Object", Type: "string", Description: corev1.Event{}.SwaggerDoc()["involvedObject"]},
	{Name: "Subobject", Type: "string", Priority: 1, Description: corev1.ObjectReference{}.SwaggerDoc()["fieldPath"]},
	{Name: "Source", Type: "string", Priority: 1, Description: corev1.Event{}.SwaggerDoc()["source"]},
	{Name: "Message", Type: "string", Description: corev1.Event{}.SwaggerDoc()["message"]},
	{Name: "First Seen", Type: "string", Priority: 1, Description: corev1.Event{}.SwaggerDoc()["firstTimestamp"]},
	{Name: "Count", Type: "string", Priority: 1, Description: corev1.Event{}.SwaggerDoc()["count"]},
	{Name: "Name", Type: "string", Priority: 1, Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
}

// eventCells is one event's row, as kube's printer makes it: events
// written through events.k8s.io have eventTime and series instead of the
// timestamps and count.
func eventCells(ev *corev1.Event, now time.Time) []any {
	first := age(ev.FirstTimestamp, now)
	if ev.FirstTimestamp.IsZero() {
		first = age(metav1.Time(ev.EventTime), now)
	}
	last := age(ev.LastTimestamp, now)
	if ev.LastTimestamp.IsZero() {
		last = first
	}
	count := ev.Count
	if ev.Series != nil {
		last, count = age(metav1.Time(ev.Series.LastObservedTime), now), ev.Series.Count
	} else if count == 0 {
		count = 1
	}
	target := strings.ToLower(ev.InvolvedObject.Kind)
	if ev.InvolvedObject.Name != "" {
		target += "/" + ev.InvolvedObject.Name
	}
	source := firstNonEmpty(ev.Source.Component, ev.ReportingController)
	if host := firstNonEmpty(ev.Source.Host, ev.ReportingInstance); host != "" {
		source += ", " + host
	}
	return []any{last, ev.Type, ev.Reason, target, ev.InvolvedObject.FieldPath, source,
		strings.TrimSpace(ev.Message), first, int64(count), ev.Name}
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
