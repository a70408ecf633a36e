package db

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
)

// keySeparator joins namespace and name in an object key.
// NOTE: NUL sorts below every byte allowed in Kubernetes names, so bbolt's
// byte order of the keys is "by namespace, then by name", and the objects of
// one namespace form one contiguous key range (a prefix seek).
const keySeparator = "\x00"

// objectKey is the key of an object inside its resource bucket.
func objectKey(namespace, name string) []byte {
	return []byte(namespace + keySeparator + name)
}

// namespacePrefix is the key prefix of every object in namespace; nil for
// all namespaces.
func namespacePrefix(namespace string) []byte {
	if namespace == "" {
		return nil
	}
	return []byte(namespace + keySeparator)
}

// describeKey is how errors name an object: "namespace/name" or "name".
func describeKey(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// checkKey rejects a namespace or name that cannot be stored for r.
func checkKey(r Resource, namespace, name string) error {
	switch {
	case r.Namespaced && namespace == "":
		return fmt.Errorf("%s %q: namespace is required", r.Name, name)
	case !r.Namespaced && namespace != "":
		return fmt.Errorf("%s %q: resource is not namespaced", r.Name, describeKey(namespace, name))
	case name == "":
		return fmt.Errorf("%s in %q: name is required", r.Name, namespace)
	case strings.Contains(namespace, keySeparator) || strings.Contains(name, keySeparator):
		// No object can have such a key: reading one finds nothing.
		return fmt.Errorf("%s %q: NUL in namespace or name: %w", r.Name, describeKey(namespace, name), ErrNotFound)
	}
	return nil
}

// u64 encodes v big-endian, so that byte order is numeric order.
func u64(v uint64) []byte {
	return binary.BigEndian.AppendUint64(make([]byte, 0, 8), v)
}

// readU64 decodes a big-endian uint64; a missing value is 0.
func readU64(b []byte) uint64 {
	if len(b) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(b)
}

// formatRV is the decimal string form of a resourceVersion.
func formatRV(rv uint64) string {
	return strconv.FormatUint(rv, 10)
}

// encodeObject is obj's stored JSON: without resourceVersion (the stored
// value carries it apart) and without apiVersion/kind, so that every stored
// object has the same shape whatever the caller set. obj is left as it was.
func encodeObject(obj Object) ([]byte, error) {
	rv := obj.GetResourceVersion()
	obj.SetResourceVersion("")
	defer obj.SetResourceVersion(rv)
	if tm, ok := obj.GetObjectKind().(*metav1.TypeMeta); ok {
		saved := *tm
		*tm = metav1.TypeMeta{}
		defer func() { *tm = saved }()
	}
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encoding %q: %w", describeKey(obj.GetNamespace(), obj.GetName()), err)
	}
	return data, nil
}

// decodeObject decodes stored JSON into a fresh r object with resourceVersion rv.
func decodeObject(r Resource, rv uint64, data []byte) (Object, error) {
	obj := r.New()
	if err := json.Unmarshal(data, obj); err != nil {
		return nil, fmt.Errorf("decoding %s at resourceVersion %d: %w", r.Name, rv, err)
	}
	obj.SetResourceVersion(formatRV(rv))
	return obj, nil
}

// objectValue is an object bucket value: the object's resourceVersion
// (8 bytes big-endian), then its JSON.
func objectValue(rv uint64, data []byte) []byte {
	return append(u64(rv), data...)
}

// splitObjectValue splits an object bucket value into resourceVersion and JSON.
func splitObjectValue(v []byte) (uint64, []byte, error) {
	if len(v) < 8 {
		return 0, nil, fmt.Errorf("corrupt object value of %d bytes", len(v))
	}
	return binary.BigEndian.Uint64(v[:8]), v[8:], nil
}

// matchesLabels reports whether the stored JSON's labels match sel. It
// decodes metadata only and stops there: encoding/json writes metadata first
// (TypeMeta is empty in stored JSON), so the spec and status are not read.
func matchesLabels(data []byte, sel labels.Selector) (bool, error) {
	if sel == nil || sel.Empty() {
		return true, nil
	}
	head, err := decodeHead(data)
	if err != nil {
		return false, fmt.Errorf("decoding labels: %w", err)
	}
	return sel.Matches(labels.Set(head.Labels)), nil
}

// head is the part of an object's metadata that lists and history read
// without decoding the whole object.
type head struct {
	Namespace string            `json:"namespace"`
	Name      string            `json:"name"`
	Labels    map[string]string `json:"labels"`
}

// decodeHead finds metadata in an object's JSON, reading only as far as
// the metadata.
func decodeHead(data []byte) (head, error) {
	var h head
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return h, fmt.Errorf("not a JSON object (%v)", err)
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return h, err
		}
		if key != "metadata" {
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return h, err
			}
			continue
		}
		err = dec.Decode(&h)
		return h, err
	}
	return h, nil
}

// changeValue is a changes bucket value:
// "<TYPE> <resource> <len(prev)>\n" ‖ prev ‖ object JSON, where prev is the
// object bucket value the change replaced (empty for Added). The key is the
// change's resourceVersion. encoding/json never writes a raw newline, so the
// first newline ends the header.
func changeValue(typ watch.EventType, resource string, prev, data []byte) []byte {
	header := fmt.Sprintf("%s %s %d\n", typ, resource, len(prev))
	v := make([]byte, 0, len(header)+len(prev)+len(data))
	v = append(v, header...)
	v = append(v, prev...)
	return append(v, data...)
}

// change is one decoded entry of the change log.
type change struct {
	typ      watch.EventType
	resource string
	data     []byte // the object JSON after the change (Deleted: its last state)
	// prev is the object bucket value the change replaced, nil for none
	// (Added); prevKnown is false for entries logged before skiff kept it.
	prev      []byte
	prevKnown bool
}

// splitChangeValue decodes a changes bucket value. It also reads the older
// "<TYPE> <resource>\n" ‖ JSON form, whose prev is unknown.
func splitChangeValue(v []byte) (change, error) {
	header, rest, ok := bytes.Cut(v, []byte("\n"))
	if !ok {
		return change{}, fmt.Errorf("corrupt change value")
	}
	parts := strings.Split(string(header), " ")
	switch len(parts) {
	case 2:
		return change{typ: watch.EventType(parts[0]), resource: parts[1], data: rest}, nil
	case 3:
		n, err := strconv.Atoi(parts[2])
		if err != nil || n < 0 || n > len(rest) {
			return change{}, fmt.Errorf("corrupt change header %q", header)
		}
		c := change{typ: watch.EventType(parts[0]), resource: parts[1], data: rest[n:], prevKnown: true}
		if n > 0 {
			c.prev = rest[:n]
		}
		return c, nil
	}
	return change{}, fmt.Errorf("corrupt change header %q", header)
}
