package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	goruntime "runtime"
	"strconv"
	"time"

	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/skiff-sh/skiff/db"
)

// listed is one item of a list: as stored, and decoded once something
// needs the object (a field selector, a Table, a kind served converted).
type listed struct {
	db.Stored
	obj db.Object
}

func (it *listed) decode(rs *resource) (db.Object, error) {
	if it.obj == nil {
		obj, err := it.Stored.Decode(rs.store)
		if err != nil {
			return nil, err
		}
		it.obj = obj
	}
	return it.obj, nil
}

// filterListed keeps the items matching the field selector, decoding them.
func filterListed(rs *resource, items []listed, sel fields.Selector) ([]listed, error) {
	if sel == nil || sel.Empty() {
		return items, nil
	}
	out := items[:0]
	for i := range items {
		obj, err := items[i].decode(rs)
		if err != nil {
			return nil, err
		}
		if sel.Matches(rs.fields(obj)) {
			out = append(out, items[i])
		}
	}
	return out, nil
}

// respondListed writes a list page. A JSON list of a kind served as it is
// stored is written from the stored JSON, each item given its
// resourceVersion, without decoding and re-encoding it: the same bytes
// (TestStoredListIsTheEncodedList), a tenth of the time for thousands of
// objects. Tables and converted kinds go through the objects.
func (s *server) respondListed(w http.ResponseWriter, r *http.Request, rs *resource, items []listed, meta metav1.ListMeta) {
	var body []byte
	var ok bool
	if version, table := wantsTable(r); table {
		var err error
		body, ok, err = storedTableJSON(rs, version, r.URL.Query().Get("includeObject"), items, meta, time.Now())
		if err != nil {
			writeError(w, r, err)
			return
		}
	} else if rs.servedAsStored() {
		body, ok = storedListJSON(rs, items, meta)
	}
	if ok {
		if isPretty(r) {
			var indented bytes.Buffer
			if err := json.Indent(&indented, body, "", "  "); err == nil {
				body = indented.Bytes()
			}
		}
		w.Header().Set("Content-Type", mediaJSON)
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body)
		return
	}
	objs, err := decodeListed(rs, items)
	if err != nil {
		writeError(w, r, err)
		return
	}
	s.respondList(w, r, rs, objs, meta)
}

// decodeChunk is how many items one goroutine of decodeListed decodes.
const decodeChunk = 512

// decodeListed decodes the items, in chunks on every CPU: decoding is most
// of a large Table's time.
func decodeListed(rs *resource, items []listed) ([]db.Object, error) {
	objs := make([]db.Object, len(items))
	var g errgroup.Group
	g.SetLimit(goruntime.GOMAXPROCS(0))
	for start := 0; start < len(items); start += decodeChunk {
		chunk := items[start:min(start+decodeChunk, len(items))]
		g.Go(func() error {
			for i := range chunk {
				obj, err := chunk[i].decode(rs)
				if err != nil {
					return err
				}
				objs[start+i] = obj
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return objs, nil
}

// servedAsStored reports whether the resource's objects are served in the
// Go type they are stored in (events.k8s.io/v1 events are converted).
func (rs *resource) servedAsStored() bool {
	return reflect.TypeOf(rs.store.New()).Elem() == rs.goType
}

// storedListJSON is the JSON the kind's List of items encodes to, made from
// the stored JSON; false if the list's own encoding has not the expected
// shape.
func storedListJSON(rs *resource, items []listed, meta metav1.ListMeta) ([]byte, bool) {
	envelope, err := json.Marshal(rs.newList(nil, meta))
	if err != nil {
		return nil, false
	}
	head, ok := bytes.CutSuffix(envelope, []byte(`[]}`))
	if !ok {
		return nil, false
	}
	size := len(head) + 3
	for _, it := range items {
		size += len(it.JSON) + 32
	}
	buf := bytes.NewBuffer(make([]byte, 0, size))
	buf.Write(head)
	buf.WriteByte('[')
	for i := range items {
		if i > 0 {
			buf.WriteByte(',')
		}
		if err := writeStoredItem(buf, rs, &items[i]); err != nil {
			return nil, false
		}
	}
	buf.WriteString("]}\n")
	return buf.Bytes(), true
}

// uidField precedes resourceVersion in an encoded ObjectMeta (metav1's
// field order: name, generateName, namespace, selfLink, uid,
// resourceVersion). Names, namespaces and generateNames cannot hold a
// quote, so its first occurrence is metadata.uid's.
var uidField = []byte(`,"uid":"`)

// storedMetadataKey begins every stored object's JSON (ObjectMeta is the
// first field of every kind).
var storedMetadataKey = []byte(`{"metadata":`)

// resourceVersionAt is where metadata.resourceVersion goes in stored JSON:
// just after metadata.uid's value; false if the JSON is not of that shape.
func resourceVersionAt(data []byte) (int, bool) {
	rest, ok := bytes.CutPrefix(data, storedMetadataKey)
	if !ok || !bytes.HasPrefix(rest, []byte("{")) {
		return 0, false
	}
	i := bytes.Index(rest, uidField)
	if i < 0 {
		return 0, false
	}
	afterUID := rest[i+len(uidField):]
	end := bytes.IndexByte(afterUID, '"')
	if end < 0 {
		return 0, false
	}
	return len(data) - len(afterUID) + end + 1, true
}

// writeResourceVersion writes the resourceVersion field that follows uid.
func writeResourceVersion(buf *bytes.Buffer, rv uint64) {
	buf.WriteString(`,"resourceVersion":"`)
	buf.WriteString(strconv.FormatUint(rv, 10))
	buf.WriteByte('"')
}

// writeStoredItem writes one item: the stored JSON with its resourceVersion
// after the uid, as encoding/json writes the object (list items carry no
// apiVersion and kind, as kube-apiserver's); an item of another shape is
// decoded and encoded.
func writeStoredItem(buf *bytes.Buffer, rs *resource, it *listed) error {
	data := it.JSON
	if cut, ok := resourceVersionAt(data); ok {
		buf.Write(data[:cut])
		writeResourceVersion(buf, it.RV)
		buf.Write(data[cut:])
		return nil
	}
	obj, err := it.decode(rs)
	if err != nil {
		return err
	}
	encoded, err := json.Marshal(obj)
	if err != nil {
		return fmt.Errorf("encoding %s %q: %w", rs.kind, it.Name, err)
	}
	buf.Write(encoded)
	return nil
}
