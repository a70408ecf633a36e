package controller

import (
	"slices"
	"strings"
	"unique"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiff-sh/skiff/db"
)

// NOTE: what a follower keeps of every object it delivered is the memory
// that grows with the store: eight followers of Jobs and Pods each held
// their own decoded labels map and ownerReferences per object (about half
// of skiffd's heap with 10000 Jobs and 10000 Pods stored). Keys and
// metadata are interned (package unique) and the labels and owners kept
// encoded in one string, so followers of one resource share one copy of
// each object's, and a follower's own entry is two words.

// seenKey is an object's namespace and name, interned.
type seenKey = unique.Handle[objectKey]

// seenMeta is what a tombstone carries besides the key: the uid, the labels
// and ownerReferences last delivered, encoded (encodeLabels, encodeOwners)
// so that the value is comparable and can be interned.
type seenMeta struct {
	uid    types.UID
	labels string
	owners string
}

// lastSeen is what a follower keeps of a delivered object.
type lastSeen struct {
	rv   uint64
	meta unique.Handle[seenMeta]
}

func keyOf(obj db.Object) objectKey { return objectKey{obj.GetNamespace(), obj.GetName()} }

func seenKeyOf(obj db.Object) seenKey { return unique.Make(keyOf(obj)) }

func seen(obj db.Object, rv uint64) lastSeen {
	return lastSeen{rv: rv, meta: unique.Make(seenMeta{
		uid:    obj.GetUID(),
		labels: encodeLabels(obj.GetLabels()),
		owners: encodeOwners(obj.GetOwnerReferences()),
	})}
}

// field ends each encoded field: a label's key and value, an owner's
// fields. NUL is in none of them (validation allows no control character
// in a label, a name, a kind, an apiVersion or a uid).
const field = "\x00"

// encodeLabels is labels as key, value, key, value… in key order, each
// ended by field.
func encodeLabels(labels map[string]string) string {
	if len(labels) == 0 {
		return ""
	}
	keys := make([]string, 0, len(labels))
	n := 0
	for k, v := range labels {
		keys = append(keys, k)
		n += len(k) + len(v) + 2*len(field)
	}
	slices.Sort(keys)
	var b strings.Builder
	b.Grow(n)
	for _, k := range keys {
		b.WriteString(k)
		b.WriteString(field)
		b.WriteString(labels[k])
		b.WriteString(field)
	}
	return b.String()
}

func decodeLabels(s string) map[string]string {
	if s == "" {
		return nil
	}
	f := strings.Split(strings.TrimSuffix(s, field), field)
	labels := make(map[string]string, len(f)/2)
	for i := 0; i+1 < len(f); i += 2 {
		labels[f[i]] = f[i+1]
	}
	return labels
}

// ownerFields is how many fields encodeOwners writes per owner.
const ownerFields = 6

// encodeOwners is each owner's apiVersion, kind, name, uid, controller and
// blockOwnerDeletion ("" unset, "t" true, "f" false), each ended by field.
func encodeOwners(owners []metav1.OwnerReference) string {
	var b strings.Builder
	for _, o := range owners {
		for _, v := range []string{o.APIVersion, o.Kind, o.Name, string(o.UID), encodeBool(o.Controller), encodeBool(o.BlockOwnerDeletion)} {
			b.WriteString(v)
			b.WriteString(field)
		}
	}
	return b.String()
}

func decodeOwners(s string) []metav1.OwnerReference {
	if s == "" {
		return nil
	}
	f := strings.Split(strings.TrimSuffix(s, field), field)
	owners := make([]metav1.OwnerReference, 0, len(f)/ownerFields)
	for i := 0; i+ownerFields <= len(f); i += ownerFields {
		owners = append(owners, metav1.OwnerReference{
			APIVersion: f[i], Kind: f[i+1], Name: f[i+2], UID: types.UID(f[i+3]),
			Controller: decodeBool(f[i+4]), BlockOwnerDeletion: decodeBool(f[i+5]),
		})
	}
	return owners
}

func encodeBool(b *bool) string {
	switch {
	case b == nil:
		return ""
	case *b:
		return "t"
	default:
		return "f"
	}
}

func decodeBool(s string) *bool {
	if s == "" {
		return nil
	}
	b := s == "t"
	return &b
}
