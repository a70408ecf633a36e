package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	goruntime "runtime"
	"time"

	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/db"
)

// storedTableJSON is the JSON the Table of items encodes to (rs.table's,
// TestStoredTableIsTheEncodedTable), made from the stored JSON: each row's
// cells from the fields rs.decodeCells reads, and its
// PartialObjectMetadata's metadata copied as stored. Rows are made in
// chunks on every CPU, before anything is written. includeObject=Object
// needs whole objects: false.
func storedTableJSON(rs *resource, version, include string, items []listed, meta metav1.ListMeta, now time.Time) (io.WriterTo, bool, error) {
	if rs.decodeCells == nil || include == "Object" || !rs.servedAsStored() {
		return nil, false, nil
	}
	envelope, err := json.Marshal(&metav1.Table{
		TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/" + version, Kind: "Table"},
		ListMeta: meta, ColumnDefinitions: rs.columns,
	})
	if err != nil {
		return nil, false, err
	}
	head, ok := bytes.CutSuffix(envelope, []byte(`"rows":null}`))
	if !ok {
		return nil, false, nil
	}
	chunks := make([][]byte, (len(items)+decodeChunk-1)/decodeChunk)
	var g errgroup.Group
	g.SetLimit(goruntime.GOMAXPROCS(0))
	for n := range chunks {
		g.Go(func() error {
			var buf bytes.Buffer
			var c jsonCursor
			obj := rs.store.New()
			first, last := n*decodeChunk, min((n+1)*decodeChunk, len(items))
			for i := first; i < last; i++ {
				if i > 0 {
					buf.WriteByte(',')
				}
				if err := writeStoredRow(&buf, &c, rs, obj, version, include, &items[i], now); err != nil {
					return err
				}
				if i == first {
					buf.Grow(chunkSize(buf.Len(), items[first:last]))
				}
			}
			chunks[n] = buf.Bytes()
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, false, err
	}
	return &storedTable{head: head, chunks: chunks}, true, nil
}

// chunkSize is about the size of a chunk of rows whose first is rowSize:
// the rest are as large, but no larger than their stored JSON (the
// metadata they copy) and their cells.
func chunkSize(rowSize int, items []listed) int {
	bound := 0
	for i := range items {
		bound += len(items[i].JSON) + 256
	}
	return min(rowSize*len(items)*9/8, bound)
}

// storedTable is a Table body: the Table's head and its rows' chunks.
type storedTable struct {
	head   []byte
	chunks [][]byte
}

var (
	openRows   = []byte(`"rows":[`)
	closeTable = []byte("]}\n")
)

// WriteTo writes the Table.
func (t *storedTable) WriteTo(w io.Writer) (int64, error) {
	out := bodyWriter{w: w}
	out.write(t.head)
	out.write(openRows)
	for _, c := range t.chunks {
		out.write(c)
	}
	out.write(closeTable)
	return out.n, out.err
}

// writeStoredRow writes the Table row of one stored item, decoding its
// cells' fields into obj with c (both emptied first: they serve a chunk).
func writeStoredRow(buf *bytes.Buffer, c *jsonCursor, rs *resource, obj db.Object, version, include string, it *listed, now time.Time) error {
	reflect.ValueOf(obj).Elem().SetZero()
	*c = jsonCursor{data: it.JSON}
	rs.decodeCells(c, obj)
	if err := c.end(); err != nil {
		return fmt.Errorf("decoding %s %q: %w", rs.kind, it.Name, err)
	}
	if err := writeCells(buf, rs.cells(obj, now)); err != nil {
		return fmt.Errorf("encoding the row of %s %q: %w", rs.kind, it.Name, err)
	}
	buf.WriteString(`,"object":`)
	if include == "None" {
		buf.WriteString("null}")
		return nil
	}
	data := it.JSON
	cut, ok := resourceVersionAt(data)
	if !ok {
		return fmt.Errorf("reading %s %q: %w", rs.kind, it.Name, errBadJSON)
	}
	metaEnd := c.metadataEnd
	if metaEnd == 0 {
		var err error
		if metaEnd, err = skipValue(data, len(storedMetadataKey)); err != nil {
			return fmt.Errorf("reading %s %q: %w", rs.kind, it.Name, errBadJSON)
		}
	}
	if metaEnd < cut {
		return fmt.Errorf("reading %s %q: %w", rs.kind, it.Name, errBadJSON)
	}
	buf.WriteString(`{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/` + version + `","metadata":`)
	buf.Write(data[len(storedMetadataKey):cut])
	buf.Write(appendResourceVersion(buf.AvailableBuffer(), it.RV))
	buf.Write(data[cut:metaEnd])
	buf.WriteString("}}")
	return nil
}

// writeCells writes a row's cells as encoding/json encodes them ({"cells":
// and the array).
func writeCells(buf *bytes.Buffer, cells []any) error {
	buf.WriteString(`{"cells":`)
	if cells == nil {
		buf.WriteString("null")
		return nil
	}
	buf.WriteByte('[')
	for i, cell := range cells {
		if i > 0 {
			buf.WriteByte(',')
		}
		if s, ok := cell.(string); ok && isPlainJSONString(s) {
			buf.WriteByte('"')
			buf.WriteString(s)
			buf.WriteByte('"')
			continue
		}
		encoded, err := json.Marshal(cell)
		if err != nil {
			return err
		}
		buf.Write(encoded)
	}
	buf.WriteByte(']')
	return nil
}

// isPlainJSONString reports whether encoding/json writes s as it is between
// quotes: printable ASCII without '"', '\\' and the HTML characters it
// escapes ('<', '>', '&').
func isPlainJSONString(s string) bool {
	for i := 0; i < len(s); i++ {
		switch b := s[i]; {
		case b < 0x20 || b >= 0x7f, b == '"', b == '\\', b == '<', b == '>', b == '&':
			return false
		}
	}
	return true
}
