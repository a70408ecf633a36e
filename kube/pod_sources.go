package kube

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// fileModeMsg is kube's message for a file mode out of range.
const fileModeMsg = "must be a number between 0 and 0777 (octal), both inclusive"

// validateFileMode: a volume file mode is within 0–0777.
func validateFileMode(mode *int32, fld *field.Path) field.ErrorList {
	if mode != nil && (*mode > 0o777 || *mode < 0) {
		return field.ErrorList{field.Invalid(fld, *mode, fileModeMsg)}
	}
	return nil
}

// validateConfigMapVolume is kube's validateConfigMapVolumeSource.
func validateConfigMapVolume(src *corev1.ConfigMapVolumeSource, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if src.Name == "" {
		errs = append(errs, field.Required(fld.Child("name"), ""))
	}
	errs = append(errs, validateFileMode(src.DefaultMode, fld.Child("defaultMode"))...)
	for i := range src.Items {
		errs = append(errs, validateKeyToPath(&src.Items[i], fld.Child("items").Index(i))...)
	}
	return errs
}

// validateSecretVolume is kube's validateSecretVolumeSource.
func validateSecretVolume(src *corev1.SecretVolumeSource, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if src.SecretName == "" {
		errs = append(errs, field.Required(fld.Child("secretName"), ""))
	}
	errs = append(errs, validateFileMode(src.DefaultMode, fld.Child("defaultMode"))...)
	for i := range src.Items {
		errs = append(errs, validateKeyToPath(&src.Items[i], fld.Child("items").Index(i))...)
	}
	return errs
}

// validateKeyToPath is kube's validateKeyToPath: a key, a local path that
// stays inside the volume, a mode in range.
func validateKeyToPath(kp *corev1.KeyToPath, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if kp.Key == "" {
		errs = append(errs, field.Required(fld.Child("key"), ""))
	}
	if kp.Path == "" {
		errs = append(errs, field.Required(fld.Child("path"), ""))
	}
	errs = append(errs, validateLocalNonReservedPath(kp.Path, fld.Child("path"))...)
	return append(errs, validateFileMode(kp.Mode, fld.Child("mode"))...)
}

// validateLocalNonReservedPath is kube's ValidateLocalNonReservedPath: a
// relative path without '..' elements that does not start with '..' (the
// atomic writer's own names).
func validateLocalNonReservedPath(p string, fld *field.Path) field.ErrorList {
	errs := validateDescendingPath(p, fld)
	if strings.HasPrefix(p, "..") && !strings.HasPrefix(p, "../") {
		errs = append(errs, field.Invalid(fld, p, "must not start with '..'"))
	}
	return errs
}

// volumeDownwardFields are the fields a downwardAPI volume file may show.
var volumeDownwardFields = []string{"metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid"}

// envDownwardFields are the fields an env var may take.
var envDownwardFields = []string{"metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName",
	"spec.serviceAccountName", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs"}

// validateDownwardAPIVolume is kube's validateDownwardAPIVolumeSource.
func validateDownwardAPIVolume(src *corev1.DownwardAPIVolumeSource, fld *field.Path) field.ErrorList {
	errs := validateFileMode(src.DefaultMode, fld.Child("defaultMode"))
	for i := range src.Items {
		// NOTE: kube reports an item's errors at the source's path, without
		// the item's index.
		errs = append(errs, validateDownwardAPIFile(&src.Items[i], fld)...)
	}
	return errs
}

// validateDownwardAPIFile is kube's validateDownwardAPIVolumeFile.
func validateDownwardAPIFile(f *corev1.DownwardAPIVolumeFile, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if f.Path == "" {
		errs = append(errs, field.Required(fld.Child("path"), ""))
	}
	errs = append(errs, validateLocalNonReservedPath(f.Path, fld.Child("path"))...)
	switch {
	case f.FieldRef != nil:
		errs = append(errs, validateFieldSelector(f.FieldRef, volumeDownwardFields, fld.Child("fieldRef"))...)
		if f.ResourceFieldRef != nil {
			errs = append(errs, field.Invalid(fld, "resource", "fieldRef and resourceFieldRef can not be specified simultaneously"))
		}
	case f.ResourceFieldRef != nil:
		errs = append(errs, validateResourceFieldSelector(f.ResourceFieldRef, true, fld.Child("resourceFieldRef"))...)
	default:
		errs = append(errs, field.Required(fld, "one of fieldRef and resourceFieldRef is required"))
	}
	return append(errs, validateFileMode(f.Mode, fld.Child("mode"))...)
}

// validateProjectedVolume is kube's validateProjectedVolumeSource for the
// configMap, secret, downwardAPI and serviceAccountToken sources: one kind
// per source, and no path written twice.
func validateProjectedVolume(p *corev1.ProjectedVolumeSource, fld *field.Path) field.ErrorList {
	errs := validateFileMode(p.DefaultMode, fld.Child("defaultMode"))
	paths := map[string]bool{}
	// claim reports a path used twice, naming it with what kube names it.
	claim := func(path string, name any) {
		if paths[path] {
			errs = append(errs, field.Invalid(fld, name, "conflicting duplicate paths"))
		}
		paths[path] = true
	}
	for i, s := range p.Sources {
		sp := fld.Child("sources").Index(i)
		n := 0
		if s.Secret != nil {
			n++
			pp := sp.Child("secret")
			if s.Secret.Name == "" {
				errs = append(errs, field.Required(pp.Child("name"), ""))
			}
			for j := range s.Secret.Items {
				errs = append(errs, validateKeyToPath(&s.Secret.Items[j], pp.Child("items").Index(j))...)
				if path := s.Secret.Items[j].Path; path != "" {
					claim(path, s.Secret.Name)
				}
			}
		}
		if s.ConfigMap != nil {
			n++
			pp := sp.Child("configMap")
			if s.ConfigMap.Name == "" {
				errs = append(errs, field.Required(pp.Child("name"), ""))
			}
			for j := range s.ConfigMap.Items {
				errs = append(errs, validateKeyToPath(&s.ConfigMap.Items[j], pp.Child("items").Index(j))...)
				if path := s.ConfigMap.Items[j].Path; path != "" {
					claim(path, s.ConfigMap.Name)
				}
			}
		}
		if s.DownwardAPI != nil {
			n++
			for j := range s.DownwardAPI.Items {
				f := &s.DownwardAPI.Items[j]
				errs = append(errs, validateDownwardAPIFile(f, sp.Child("downwardAPI"))...)
				if f.Path != "" {
					claim(f.Path, f.Path)
				}
			}
		}
		if t := s.ServiceAccountToken; t != nil {
			n++
			pp := sp.Child("serviceAccountToken")
			var exp int64
			if t.ExpirationSeconds != nil {
				exp = *t.ExpirationSeconds
			}
			if exp < 10*60 {
				errs = append(errs, field.Invalid(pp.Child("expirationSeconds"), exp, "may not specify a duration less than 10 minutes"))
			}
			if exp > 1<<32 {
				errs = append(errs, field.Invalid(pp.Child("expirationSeconds"), exp, "may not specify a duration larger than 2^32 seconds"))
			}
			// NOTE: kube reports the token's path at the volume's path.
			if t.Path == "" {
				errs = append(errs, field.Required(fld.Child("path"), ""))
			} else {
				errs = append(errs, validateLocalNonReservedPath(t.Path, fld.Child("path"))...)
			}
		}
		if s.ClusterTrustBundle != nil {
			n++
		}
		if s.PodCertificate != nil {
			n++
		}
		if n > 1 {
			errs = append(errs, field.Forbidden(sp, "may not specify more than 1 volume type per source"))
		}
	}
	return errs
}

// validateEnv is kube's ValidateEnv with relaxed names (GA in 1.34): each
// variable has a name of printable ASCII without '=', and at most one
// source, not beside a value.
func validateEnv(vars []corev1.EnvVar, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, ev := range vars {
		p := fld.Index(i)
		if ev.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		} else {
			for _, msg := range validation.IsRelaxedEnvVarName(ev.Name) {
				errs = append(errs, field.Invalid(p.Child("name"), ev.Name, msg))
			}
		}
		errs = append(errs, validateEnvSource(ev, p.Child("valueFrom"))...)
	}
	return errs
}

// validateEnvSource is kube's validateEnvVarValueFrom.
func validateEnvSource(ev corev1.EnvVar, fld *field.Path) field.ErrorList {
	from := ev.ValueFrom
	if from == nil {
		return nil
	}
	var errs field.ErrorList
	n := 0
	if from.FieldRef != nil {
		n++
		errs = append(errs, validateFieldSelector(from.FieldRef, envDownwardFields, fld.Child("fieldRef"))...)
	}
	if from.ResourceFieldRef != nil {
		n++
		errs = append(errs, validateResourceFieldSelector(from.ResourceFieldRef, false, fld.Child("resourceFieldRef"))...)
	}
	if from.ConfigMapKeyRef != nil {
		n++
		errs = append(errs, validateKeySelector(from.ConfigMapKeyRef.Name, from.ConfigMapKeyRef.Key, fld.Child("configMapKeyRef"))...)
	}
	if from.SecretKeyRef != nil {
		n++
		errs = append(errs, validateKeySelector(from.SecretKeyRef.Name, from.SecretKeyRef.Key, fld.Child("secretKeyRef"))...)
	}
	if from.FileKeyRef != nil {
		n++
	}
	switch {
	case n == 0:
		errs = append(errs, field.Invalid(fld, "", "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`"))
	case ev.Value != "":
		errs = append(errs, field.Invalid(fld, "", "may not be specified when `value` is not empty"))
	case n > 1:
		errs = append(errs, field.Invalid(fld, "", "may not have more than one field specified at a time"))
	}
	return errs
}

// validateKeySelector is kube's validateConfigMapKeySelector and
// validateSecretKeySelector: an object name and a valid key.
func validateKeySelector(name, key string, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range apivalidation.NameIsDNSSubdomain(name, false) {
		errs = append(errs, field.Invalid(fld.Child("name"), name, msg))
	}
	if key == "" {
		return append(errs, field.Required(fld.Child("key"), ""))
	}
	return append(errs, validateDataKey(key, fld.Child("key"))...)
}

// validateEnvFrom is kube's ValidateEnvFrom with relaxed prefixes.
func validateEnvFrom(vars []corev1.EnvFromSource, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, ev := range vars {
		p := fld.Index(i)
		if ev.Prefix != "" {
			for _, msg := range validation.IsRelaxedEnvVarName(ev.Prefix) {
				errs = append(errs, field.Invalid(p.Child("prefix"), ev.Prefix, msg))
			}
		}
		n := 0
		if ev.ConfigMapRef != nil {
			n++
			errs = append(errs, validateSourceName(ev.ConfigMapRef.Name, p.Child("configMapRef"))...)
		}
		if ev.SecretRef != nil {
			n++
			errs = append(errs, validateSourceName(ev.SecretRef.Name, p.Child("secretRef"))...)
		}
		switch {
		case n == 0:
			errs = append(errs, field.Invalid(fld, "", "must specify one of: `configMapRef` or `secretRef`"))
		case n > 1:
			errs = append(errs, field.Invalid(fld, "", "may not have more than one field specified at a time"))
		}
	}
	return errs
}

// validateSourceName: envFrom names a ConfigMap or Secret (a DNS
// subdomain, judged as a prefix as kube does).
func validateSourceName(name string, fld *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(fld.Child("name"), "")}
	}
	var errs field.ErrorList
	for _, msg := range apivalidation.NameIsDNSSubdomain(name, true) {
		errs = append(errs, field.Invalid(fld.Child("name"), name, msg))
	}
	return errs
}

// downwardLabels are the field labels kube's ConvertDownwardAPIFieldLabel
// knows for pods.
var downwardLabels = []string{"metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace",
	"metadata.uid", "spec.nodeName", "spec.restartPolicy", "spec.serviceAccountName", "spec.schedulerName",
	"status.phase", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs"}

// validateFieldSelector is kube's validateObjectFieldSelector: a v1 field
// path among supported, or a label or annotation by key.
func validateFieldSelector(fs *corev1.ObjectFieldSelector, supported []string, fld *field.Path) field.ErrorList {
	if fs.APIVersion == "" {
		return field.ErrorList{field.Required(fld.Child("apiVersion"), "")}
	}
	if fs.FieldPath == "" {
		return field.ErrorList{field.Required(fld.Child("fieldPath"), "")}
	}
	path, sub, subscripted := splitSubscript(fs.FieldPath)
	var convErr string
	switch {
	case fs.APIVersion != "v1":
		convErr = "unsupported pod version: " + fs.APIVersion
	case subscripted && path != "metadata.annotations" && path != "metadata.labels":
		convErr = "field label does not support subscript: " + fs.FieldPath
	case !subscripted && !slices.Contains(downwardLabels, path) && path != "spec.host":
		convErr = "field label not supported: " + fs.FieldPath
	}
	if convErr != "" {
		return field.ErrorList{field.Invalid(fld.Child("fieldPath"), fs.FieldPath, "error converting fieldPath: "+convErr)}
	}
	if path == "spec.host" {
		path = "spec.nodeName"
	}
	var errs field.ErrorList
	switch {
	case subscripted && path == "metadata.annotations":
		sub = strings.ToLower(sub)
		fallthrough
	case subscripted:
		for _, msg := range validation.IsQualifiedName(sub) {
			errs = append(errs, field.Invalid(fld, sub, msg))
		}
	case !slices.Contains(supported, path):
		errs = append(errs, field.NotSupported(fld.Child("fieldPath"), path, supported))
	}
	return errs
}

// splitSubscript splits "metadata.labels['key']" into the path and the key.
func splitSubscript(fieldPath string) (path, sub string, ok bool) {
	if !strings.HasSuffix(fieldPath, "']") {
		return fieldPath, "", false
	}
	path, sub, ok = strings.Cut(strings.TrimSuffix(fieldPath, "']"), "['")
	if !ok {
		return fieldPath, "", false
	}
	return path, sub, true
}

// containerResources are the resources a resourceFieldRef may name.
var containerResources = []string{"limits.cpu", "limits.ephemeral-storage", "limits.memory",
	"requests.cpu", "requests.ephemeral-storage", "requests.memory"}

// validateResourceFieldSelector is kube's validateContainerResourceFieldSelector
// (the divisor aside): in a volume the container must be named; the
// resource is one of containerResources or a hugepages one.
func validateResourceFieldSelector(fs *corev1.ResourceFieldSelector, volume bool, fld *field.Path) field.ErrorList {
	switch {
	case volume && fs.ContainerName == "":
		return field.ErrorList{field.Required(fld.Child("containerName"), "")}
	case fs.Resource == "":
		return field.ErrorList{field.Required(fld.Child("resource"), "")}
	case slices.Contains(containerResources, fs.Resource),
		strings.HasPrefix(fs.Resource, "requests.hugepages-"), strings.HasPrefix(fs.Resource, "limits.hugepages-"):
		return nil
	}
	return field.ErrorList{field.NotSupported(fld.Child("resource"), fs.Resource, containerResources)}
}

// validateImagePullSecrets is kube's validateImagePullSecrets: a reference
// carries a name only.
func validateImagePullSecrets(refs []corev1.LocalObjectReference, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, ref := range refs {
		if ref != (corev1.LocalObjectReference{Name: ref.Name}) {
			errs = append(errs, field.Invalid(fld.Index(i), ref, "only name may be set"))
		}
	}
	return errs
}
