package kube

import (
	"reflect"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// MaxDataSize is kube's MaxSecretSize: the most bytes the values of one
// ConfigMap or Secret may hold together.
const MaxDataSize = 1 << 20

// immutableMsg is kube's message for a change to an immutable object.
const immutableMsg = "field is immutable when `immutable` is set"

// ValidateConfigMap is kube's ValidateConfigMap (the metadata aside):
// keys of either bag are valid file names, appear in one bag only, and
// the values hold at most MaxDataSize bytes.
func ValidateConfigMap(cm *corev1.ConfigMap) field.ErrorList {
	var errs field.ErrorList
	size := 0
	for _, key := range sortedKeys(cm.Data) {
		p := field.NewPath("data").Key(key)
		errs = append(errs, validateDataKey(key, p)...)
		if _, dup := cm.BinaryData[key]; dup {
			errs = append(errs, field.Invalid(p, key, "duplicate of key present in binaryData"))
		}
		size += len(cm.Data[key])
	}
	for _, key := range sortedKeys(cm.BinaryData) {
		errs = append(errs, validateDataKey(key, field.NewPath("binaryData").Key(key))...)
		size += len(cm.BinaryData[key])
	}
	if size > MaxDataSize {
		// NOTE: kube reports the size of the whole object at the empty path.
		errs = append(errs, field.TooLong(field.NewPath(""), "", MaxDataSize))
	}
	return errs
}

// ValidateConfigMapUpdate is kube's ValidateConfigMapUpdate: an immutable
// ConfigMap keeps its data, binaryData and immutability.
func ValidateConfigMapUpdate(cm, old *corev1.ConfigMap) field.ErrorList {
	var errs field.ErrorList
	if isImmutable(old.Immutable) {
		if !isImmutable(cm.Immutable) {
			errs = append(errs, field.Forbidden(field.NewPath("immutable"), immutableMsg))
		}
		if !reflect.DeepEqual(cm.Data, old.Data) {
			errs = append(errs, field.Forbidden(field.NewPath("data"), immutableMsg))
		}
		if !reflect.DeepEqual(cm.BinaryData, old.BinaryData) {
			errs = append(errs, field.Forbidden(field.NewPath("binaryData"), immutableMsg))
		}
	}
	return append(errs, ValidateConfigMap(cm)...)
}

// validateDataKey: a ConfigMap or Secret key is a file name a volume can
// hold (kube's IsConfigMapKey).
func validateDataKey(key string, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsConfigMapKey(key) {
		errs = append(errs, field.Invalid(fld, key, msg))
	}
	return errs
}

func isImmutable(b *bool) bool { return b != nil && *b }

// sortedKeys are m's keys in order, so that errors come in the same order
// every time.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
