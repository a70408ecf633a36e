package kube

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
)

// kubeValue is v as a field error should show it. kube-apiserver validates
// its internal types, whose structs have no json tags, and field errors
// render a struct value as its JSON: keys are then the Go field names
// ({"Rules":[{"Action":"FailJob",…}]}). Structs of k8s.io/api, and slices
// of them, are wrapped to render that way; other values are kept.
//
// NOTE: the batch types have the same fields in the same order inside and
// out, so their rendering is kube's; the pod template's internal form
// differs from core/v1 in places, so its rendering is only close.
func kubeValue(v any) any {
	t := reflect.TypeOf(v)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t != nil && t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	if t != nil && t.Kind() == reflect.Struct && isAPIType(t) {
		return goFieldJSON{v}
	}
	return v
}

// isAPIType reports whether t is declared in k8s.io/api (as opposed to
// apimachinery, whose types keep their JSON form inside kube too).
func isAPIType(t reflect.Type) bool {
	return strings.HasPrefix(t.PkgPath(), "k8s.io/api/")
}

// goFieldJSON marshals its value as encoding/json would without the json
// tags of k8s.io/api structs.
type goFieldJSON struct{ v any }

// MarshalJSON implements json.Marshaler.
func (g goFieldJSON) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	err := writeGoFieldJSON(&b, reflect.ValueOf(g.v))
	return b.Bytes(), err
}

// writeGoFieldJSON writes v: k8s.io/api structs field by field under their
// Go names, anything else through encoding/json.
func writeGoFieldJSON(b *bytes.Buffer, v reflect.Value) error {
	switch {
	case !v.IsValid():
		b.WriteString("null")
		return nil
	case v.Kind() == reflect.Pointer:
		if v.IsNil() {
			b.WriteString("null")
			return nil
		}
		return writeGoFieldJSON(b, v.Elem())
	case v.Kind() == reflect.Struct && isAPIType(v.Type()):
		return writeGoFieldStruct(b, v)
	case v.Kind() == reflect.Slice && v.Type().Elem().Kind() != reflect.Uint8:
		return writeGoFieldSlice(b, v)
	}
	data, err := json.Marshal(v.Interface())
	b.Write(data)
	return err
}

// writeGoFieldStruct writes a struct's exported fields in order; an
// embedded apimachinery struct (ObjectMeta) is inlined, as it is embedded
// untagged in kube's internal types.
func writeGoFieldStruct(b *bytes.Buffer, v reflect.Value) error {
	b.WriteByte('{')
	n := 0
	for i := 0; i < v.NumField(); i++ {
		f := v.Type().Field(i)
		if !f.IsExported() {
			continue
		}
		if f.Anonymous && !isAPIType(f.Type) {
			data, err := json.Marshal(v.Field(i).Interface())
			if err != nil {
				return err
			}
			if inner := bytes.TrimSuffix(bytes.TrimPrefix(data, []byte("{")), []byte("}")); len(inner) > 0 {
				n = writeComma(b, n)
				b.Write(inner)
			}
			continue
		}
		n = writeComma(b, n)
		key, _ := json.Marshal(f.Name)
		b.Write(key)
		b.WriteByte(':')
		if err := writeGoFieldJSON(b, v.Field(i)); err != nil {
			return err
		}
	}
	b.WriteByte('}')
	return nil
}

// writeComma writes the separator before member n and returns n+1.
func writeComma(b *bytes.Buffer, n int) int {
	if n > 0 {
		b.WriteByte(',')
	}
	return n + 1
}

// writeGoFieldSlice writes a slice element by element (nil is null).
func writeGoFieldSlice(b *bytes.Buffer, v reflect.Value) error {
	if v.IsNil() {
		b.WriteString("null")
		return nil
	}
	b.WriteByte('[')
	for i := 0; i < v.Len(); i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		if err := writeGoFieldJSON(b, v.Index(i)); err != nil {
			return err
		}
	}
	b.WriteByte(']')
	return nil
}
