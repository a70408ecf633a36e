package api

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
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
	var body io.WriterTo
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
		writeBody(w, r, body)
		return
	}
	objs, err := decodeListed(rs, items)
	if err != nil {
		writeError(w, r, err)
		return
	}
	s.respondList(w, r, rs, objs, meta)
}

// writeBody writes a 200 JSON response of body, indented if the client
// asked for it (or is a human's). NOTE: the body is written as it is made,
// through a buffer, not made whole first: for 10000 Jobs that whole was
// 24 MB allocated, cleared and copied once more.
func writeBody(w http.ResponseWriter, r *http.Request, body io.WriterTo) {
	w.Header().Set("Content-Type", mediaJSON)
	if isPretty(r) {
		var compact, indented bytes.Buffer
		_, _ = body.WriteTo(&compact)
		out := compact.Bytes()
		if err := json.Indent(&indented, out, "", "  "); err == nil {
			out = indented.Bytes()
		}
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(out)
		return
	}
	w.WriteHeader(http.StatusOK)
	bw := bufio.NewWriterSize(w, 64<<10)
	if _, err := body.WriteTo(copyingWriter{bw}); err == nil {
		_ = bw.Flush()
	}
}

// copyingWriter writes to bw in pieces no larger than its buffer, so that
// bw copies every byte rather than handing a large piece on as it is.
// NOTE: a list's stored JSON is in a buffer that the next list reuses once
// the handler returns (spareList), and HTTP/2's response writer returns
// when its stream is reset without waiting for the connection's writer to
// be done with the bytes it was handed.
type copyingWriter struct{ bw *bufio.Writer }

func (c copyingWriter) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		m, err := c.bw.Write(p[:min(len(p), c.bw.Size())])
		n += m
		if err != nil {
			return n, err
		}
		p = p[m:]
	}
	return n, nil
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
// the stored JSON as it is written; false if the list's own encoding has
// not the expected shape, or an item does not decode.
func storedListJSON(rs *resource, items []listed, meta metav1.ListMeta) (io.WriterTo, bool) {
	envelope, err := json.Marshal(rs.newList(nil, meta))
	if err != nil {
		return nil, false
	}
	head, ok := bytes.CutSuffix(envelope, []byte(`[]}`))
	if !ok {
		return nil, false
	}
	l := &storedList{head: head, items: items, cuts: make([]int, len(items))}
	for i := range items {
		if l.cuts[i], ok = resourceVersionAt(items[i].JSON); ok {
			continue
		}
		// An item of another shape is decoded and encoded, before anything
		// is written: an error is still the response's.
		obj, err := items[i].decode(rs)
		if err != nil {
			return nil, false
		}
		encoded, err := json.Marshal(obj)
		if err != nil {
			return nil, false
		}
		if l.encoded == nil {
			l.encoded = map[int][]byte{}
		}
		l.encoded[i] = encoded
	}
	return l, true
}

// storedList is a JSON list body written from the stored JSON: each item's
// JSON with its resourceVersion put in at its cut, after its uid, as
// encoding/json writes the object (list items carry no apiVersion and kind,
// as kube-apiserver's), or the item encoded if it has no cut.
type storedList struct {
	head    []byte
	items   []listed
	cuts    []int
	encoded map[int][]byte
}

// WriteTo writes the list.
func (l *storedList) WriteTo(w io.Writer) (int64, error) {
	out := bodyWriter{w: w}
	out.write(l.head)
	out.write(openBracket)
	var rv []byte
	for i := range l.items {
		if i > 0 {
			out.write(comma)
		}
		if encoded, ok := l.encoded[i]; ok {
			out.write(encoded)
			continue
		}
		data, cut := l.items[i].JSON, l.cuts[i]
		out.write(data[:cut])
		rv = appendResourceVersion(rv[:0], l.items[i].RV)
		out.write(rv)
		out.write(data[cut:])
	}
	out.write(closeList)
	return out.n, out.err
}

var (
	openBracket = []byte("[")
	comma       = []byte(",")
	closeList   = []byte("]}\n")
)

// bodyWriter writes to w until a write fails, counting the bytes.
type bodyWriter struct {
	w   io.Writer
	n   int64
	err error
}

func (b *bodyWriter) write(p []byte) {
	if b.err != nil {
		return
	}
	n, err := b.w.Write(p)
	b.n += int64(n)
	b.err = err
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

// appendResourceVersion appends the resourceVersion field that follows uid.
func appendResourceVersion(buf []byte, rv uint64) []byte {
	buf = append(buf, `,"resourceVersion":"`...)
	buf = strconv.AppendUint(buf, rv, 10)
	return append(buf, '"')
}
