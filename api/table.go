package api

import (
	"bytes"
	"mime"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/validation"

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

// decodeCellMetadata reads the metadata every kind's cells read: the name
// and the creation and deletion timestamps; and notes where the object's
// own metadata ends (a Table row copies it).
func decodeCellMetadata(c *jsonCursor, meta *metav1.ObjectMeta) {
	top := c.i == len(storedMetadataKey) && bytes.HasPrefix(c.data, storedMetadataKey)
	c.fields(func(key []byte) {
		switch string(key) {
		case "name":
			meta.Name = c.str()
		case "creationTimestamp":
			meta.CreationTimestamp = c.time()
		case "deletionTimestamp":
			meta.DeletionTimestamp = c.timep()
		}
	})
	if top && c.err == nil {
		c.metadataEnd = c.i
	}
}

// formatLabelSelector is metav1.FormatLabelSelector(sel), the selector as
// kube's printers show it ("<none>" if empty, "<error>" if invalid).
// NOTE: FormatLabelSelector builds a labels.Selector, validating every key
// with a regular expression; for a Table of 10000 Jobs (whose selectors
// differ in their value only) that was a tenth of the time. A selector of
// matchLabels alone is written here, its keys' validity remembered
// (TestFormatLabelSelector compares the two).
func formatLabelSelector(sel *metav1.LabelSelector) string {
	if sel == nil || len(sel.MatchExpressions) > 0 || len(sel.MatchLabels) == 0 {
		return metav1.FormatLabelSelector(sel)
	}
	if len(sel.MatchLabels) == 1 { // a Job's own selector
		for k, v := range sel.MatchLabels {
			if !isLabelKey(k) || !isLabelValue(v) {
				return "<error>"
			}
			return k + "=" + v
		}
	}
	keys := make([]string, 0, len(sel.MatchLabels))
	size := 0
	for k, v := range sel.MatchLabels {
		if !isLabelKey(k) || !isLabelValue(v) {
			return "<error>"
		}
		keys = append(keys, k)
		size += len(k) + len(v) + 2
	}
	slices.Sort(keys)
	var b strings.Builder
	b.Grow(size)
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(sel.MatchLabels[k])
	}
	return b.String()
}

// validLabelKeys remembers up to maxValidLabelKeys keys that are valid
// label keys.
var (
	validLabelKeys      sync.Map
	validLabelKeysCount atomic.Int32
)

const maxValidLabelKeys = 256

// isLabelKey is whether key is a valid label key, as labels.NewRequirement
// checks it.
func isLabelKey(key string) bool {
	if _, ok := validLabelKeys.Load(key); ok {
		return true
	}
	if len(validation.IsQualifiedName(key)) > 0 {
		return false
	}
	if validLabelKeysCount.Add(1) <= maxValidLabelKeys {
		validLabelKeys.Store(key, struct{}{})
	}
	return true
}

// isLabelValue is whether v is a valid label value, as
// labels.NewRequirement checks it. NOTE: the regular expression was 7% of
// a Table row of a Job (its selector's value is the Job's uid); a value of
// at most 63 letters, digits, '-', '_' and '.', beginning and ending with
// a letter or digit, matches it, and only other values are given to it.
func isLabelValue(v string) bool {
	if len(v) == 0 || len(v) > validation.LabelValueMaxLength || !isAlphanumeric(v[0]) || !isAlphanumeric(v[len(v)-1]) {
		return len(validation.IsValidLabelValue(v)) == 0
	}
	for i := 1; i < len(v)-1; i++ {
		if b := v[i]; !isAlphanumeric(b) && b != '-' && b != '_' && b != '.' {
			return len(validation.IsValidLabelValue(v)) == 0
		}
	}
	return true
}

func isAlphanumeric(b byte) bool {
	return 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9'
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
