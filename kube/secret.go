package kube

import (
	"crypto/tls"
	"encoding/json"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// redacted stands for a Secret's value in a validation error, as kube
// writes it: an error goes back to the client and into logs, a value never.
const redacted = "<secret contents redacted>"

// PrepareSecret is what kube-apiserver does to every Secret it decodes,
// created or updated: stringData is merged into data (it wins over a key
// of the same name) and dropped, so that it is never stored nor returned,
// and an empty type is Opaque (SetDefaults_Secret).
func PrepareSecret(s *corev1.Secret) {
	if len(s.StringData) > 0 && s.Data == nil {
		s.Data = make(map[string][]byte, len(s.StringData))
	}
	for k, v := range s.StringData {
		s.Data[k] = []byte(v)
	}
	s.StringData = nil
	if s.Type == "" {
		s.Type = corev1.SecretTypeOpaque
	}
}

// ValidateSecret is kube's ValidateSecret (the metadata aside): valid
// keys, at most MaxDataSize bytes of values, and the keys each type
// requires. No error carries a value of the Secret.
func ValidateSecret(s *corev1.Secret) field.ErrorList {
	var errs field.ErrorList
	data := field.NewPath("data")
	size := 0
	for _, key := range sortedKeys(s.Data) {
		errs = append(errs, validateDataKey(key, data.Key(key))...)
		size += len(s.Data[key])
	}
	if size > MaxDataSize {
		errs = append(errs, field.TooLong(data, "", MaxDataSize))
	}
	return append(errs, validateSecretType(s, data)...)
}

// validateSecretType checks the keys a Secret's type requires.
func validateSecretType(s *corev1.Secret, data *field.Path) field.ErrorList {
	var errs field.ErrorList
	has := func(key string) bool { _, ok := s.Data[key]; return ok }
	switch s.Type {
	case corev1.SecretTypeServiceAccountToken:
		// NOTE: the token and the uid annotation come later from the token
		// controller; only the account's name is required.
		if s.Annotations[corev1.ServiceAccountNameKey] == "" {
			errs = append(errs, field.Required(field.NewPath("metadata", "annotations").Key(corev1.ServiceAccountNameKey), ""))
		}
	case corev1.SecretTypeDockercfg:
		errs = append(errs, validateJSONKey(s.Data, corev1.DockerConfigKey, data)...)
	case corev1.SecretTypeDockerConfigJson:
		errs = append(errs, validateJSONKey(s.Data, corev1.DockerConfigJsonKey, data)...)
	case corev1.SecretTypeBasicAuth:
		// Either may be empty, but one of them must be there.
		if !has(corev1.BasicAuthUsernameKey) && !has(corev1.BasicAuthPasswordKey) {
			errs = append(errs, field.Required(data.Key(corev1.BasicAuthUsernameKey), ""),
				field.Required(data.Key(corev1.BasicAuthPasswordKey), ""))
		}
	case corev1.SecretTypeSSHAuth:
		if len(s.Data[corev1.SSHAuthPrivateKey]) == 0 {
			errs = append(errs, field.Required(data.Key(corev1.SSHAuthPrivateKey), ""))
		}
	case corev1.SecretTypeTLS:
		if !has(corev1.TLSCertKey) {
			errs = append(errs, field.Required(data.Key(corev1.TLSCertKey), ""))
		}
		if !has(corev1.TLSPrivateKeyKey) {
			errs = append(errs, field.Required(data.Key(corev1.TLSPrivateKeyKey), ""))
		}
	}
	return errs
}

// validateJSONKey: data[key] is there and holds a JSON object.
func validateJSONKey(data map[string][]byte, key string, fld *field.Path) field.ErrorList {
	raw, ok := data[key]
	if !ok {
		return field.ErrorList{field.Required(fld.Key(key), "")}
	}
	if err := json.Unmarshal(raw, &map[string]any{}); err != nil {
		return field.ErrorList{field.Invalid(fld.Key(key), redacted, err.Error())}
	}
	return nil
}

// ValidateSecretUpdate is kube's ValidateSecretUpdate: the type never
// changes, an immutable Secret keeps its data and immutability.
func ValidateSecretUpdate(s, old *corev1.Secret) field.ErrorList {
	errs := validateImmutable(s.Type, old.Type, field.NewPath("type"))
	if isImmutable(old.Immutable) {
		if !isImmutable(s.Immutable) {
			errs = append(errs, field.Forbidden(field.NewPath("immutable"), immutableMsg))
		}
		if !reflect.DeepEqual(s.Data, old.Data) {
			errs = append(errs, field.Forbidden(field.NewPath("data"), immutableMsg))
		}
	}
	return append(errs, ValidateSecret(s)...)
}

// SecretWarnings are kube's warnings on a written Secret: a TLS Secret
// whose key does not match its certificate.
func SecretWarnings(s *corev1.Secret) []string {
	if s.Type != corev1.SecretTypeTLS {
		return nil
	}
	if _, err := tls.X509KeyPair(s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey]); err != nil {
		return []string{err.Error()}
	}
	return nil
}
