package db

import (
	"fmt"

	"go.etcd.io/bbolt"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
)

// NOTE: kube-apiserver's SimpleNameGenerator appends 5 random characters and
// cuts generateName to 63-5 characters so that the result fits a DNS label.
const (
	randomSuffixLength     = 5
	maxGeneratedNameLength = 63 - randomSuffixLength
	// NOTE: kube-apiserver retries a colliding generated name (RetryGenerateName,
	// GA in v1.32) a few times before answering AlreadyExists.
	generateNameAttempts = 8
)

// GeneratedName is a name generated from base as Create generates one: base
// cut as Kubernetes cuts it, and 5 random characters of
// "bcdfghjklmnpqrstvwxz2456789". Callers that must know a generated name
// before creating use it to set Name themselves.
func GeneratedName(base string) string {
	if len(base) > maxGeneratedNameLength {
		base = base[:maxGeneratedNameLength]
	}
	return base + utilrand.String(randomSuffixLength)
}

// freeGeneratedName picks a generated name not yet taken in namespace.
func freeGeneratedName(b *bbolt.Bucket, r Resource, namespace, base string) (string, error) {
	for range generateNameAttempts {
		name := GeneratedName(base)
		if b.Get(objectKey(namespace, name)) == nil {
			return name, nil
		}
	}
	return "", fmt.Errorf("%s %q: no free generated name after %d attempts: %w",
		r.Name, describeKey(namespace, base), generateNameAttempts, ErrAlreadyExists)
}

// GenerateName gives obj a name from its GenerateName as Create would (a
// name not yet taken in its namespace), for a writer that validates a new
// object under its final name before creating it in the same transaction,
// as kube-apiserver names an object before validating it. An obj that has
// a Name, or no GenerateName, is left alone.
func (tx *Tx) GenerateName(r Resource, obj Object) error {
	base := obj.GetGenerateName()
	if obj.GetName() != "" || base == "" {
		return nil
	}
	b := tx.bucket(r)
	if b == nil {
		obj.SetName(GeneratedName(base))
		return nil
	}
	name, err := freeGeneratedName(b, r, obj.GetNamespace(), base)
	if err != nil {
		return err
	}
	obj.SetName(name)
	return nil
}
