package api

import (
	"mime"
	"net/http"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/skiff-sh/skiff/db"
)

// wantsTable reports whether the Accept header asks for a meta.k8s.io
// Table (before any plain JSON alternative), and in which version.
func wantsTable(r *http.Request) (string, bool) {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		if mt != mediaJSON && mt != "*/*" && mt != "application/*" {
			continue
		}
		if params["as"] == "" {
			return "", false
		}
		if params["as"] == "Table" && params["g"] == "meta.k8s.io" && (params["v"] == "v1" || params["v"] == "v1beta1") {
			return params["v"], true
		}
	}
	return "", false
}

// table renders items as a metav1.Table with rs's columns; rows carry
// PartialObjectMetadata unless ?includeObject says None or Object.
func (rs *resource) table(r *http.Request, version string, items []db.Object, meta metav1.ListMeta) *metav1.Table {
	now := time.Now()
	t := &metav1.Table{
		TypeMeta:          metav1.TypeMeta{APIVersion: "meta.k8s.io/" + version, Kind: "Table"},
		ListMeta:          meta,
		ColumnDefinitions: rs.columns,
		Rows:              make([]metav1.TableRow, 0, len(items)),
	}
	include := r.URL.Query().Get("includeObject")
	for _, obj := range items {
		row := metav1.TableRow{Cells: rs.cells(obj, now)}
		switch include {
		case "None":
		case "Object":
			rs.setTypeMeta(obj)
			row.Object = runtime.RawExtension{Object: obj}
		default:
			row.Object = runtime.RawExtension{Object: partialMetadata(obj, version)}
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// partialMetadata is the metadata-only form of obj that Table rows carry.
func partialMetadata(obj db.Object, version string) *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{
		TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/" + version, Kind: "PartialObjectMetadata"},
	}
	if om, ok := obj.(metav1.ObjectMetaAccessor); ok {
		m.ObjectMeta = *om.GetObjectMeta().(*metav1.ObjectMeta)
	}
	return m
}

// age is the AGE cell: the human duration since t, "<unknown>" if unset.
func age(t metav1.Time, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t.Time))
}

// noneIfEmpty is kubectl's "<none>" for an empty cell.
func noneIfEmpty(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// nameColumn and ageColumn are the first and the age column of every table.
var (
	nameColumn = metav1.TableColumnDefinition{Name: "Name", Type: "string", Format: "name",
		Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]}
	ageColumn = metav1.TableColumnDefinition{Name: "Age", Type: "string",
		Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]}
)
