package kube

import (
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateVolumes is kube's ValidateVolumes for what a volume list can get
// wrong on any node: names (a DNS label, unique), exactly one source, and
// the sources skiff mounts from the node (hostPath, emptyDir). It returns
// the names of the valid volumes, which mounts must reference.
func validateVolumes(volumes []corev1.Volume, fld *field.Path) (map[string]bool, field.ErrorList) {
	var errs field.ErrorList
	names := map[string]bool{}
	for i := range volumes {
		v := &volumes[i]
		p := fld.Index(i)
		verrs := validateVolumeSource(&v.VolumeSource, p)
		if v.Name == "" {
			verrs = append(verrs, field.Required(p.Child("name"), ""))
		} else {
			for _, msg := range validation.IsDNS1123Label(v.Name) {
				verrs = append(verrs, field.Invalid(p.Child("name"), v.Name, msg))
			}
		}
		if names[v.Name] {
			verrs = append(verrs, field.Duplicate(p.Child("name"), v.Name))
		}
		if len(verrs) == 0 {
			names[v.Name] = true
		}
		errs = append(errs, verrs...)
	}
	return names, errs
}

// validateVolumeSource checks that exactly one source is set, and the
// hostPath, emptyDir, configMap, secret, projected and downwardAPI sources.
//
// NOTE: kube names the extra source by its field in the error path; a few
// of its names differ from the JSON ones (a typo, "downwarAPI"): skiff
// uses the JSON names throughout.
func validateVolumeSource(src *corev1.VolumeSource, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	set := setVolumeSources(src)
	if len(set) == 0 {
		return field.ErrorList{field.Required(fld, "must specify a volume type")}
	}
	for _, name := range set[1:] {
		errs = append(errs, field.Forbidden(fld.Child(name), "may not specify more than 1 volume type"))
	}
	switch {
	case set[0] == "hostPath":
		errs = append(errs, validateHostPath(src.HostPath, fld.Child("hostPath"))...)
	case set[0] == "configMap":
		errs = append(errs, validateConfigMapVolume(src.ConfigMap, fld.Child("configMap"))...)
	case set[0] == "secret":
		errs = append(errs, validateSecretVolume(src.Secret, fld.Child("secret"))...)
	case set[0] == "projected":
		errs = append(errs, validateProjectedVolume(src.Projected, fld.Child("projected"))...)
	case set[0] == "downwardAPI":
		errs = append(errs, validateDownwardAPIVolume(src.DownwardAPI, fld.Child("downwardAPI"))...)
	case set[0] == "emptyDir" && src.EmptyDir.SizeLimit != nil && src.EmptyDir.SizeLimit.Sign() < 0:
		errs = append(errs, field.Forbidden(fld.Child("emptyDir").Child("sizeLimit"), "SizeLimit field must be a valid resource quantity"))
	}
	return errs
}

// setVolumeSources are the JSON names of the sources set in src, in the
// order kube's validation checks them (the first is the volume's source,
// the others are refused).
func setVolumeSources(src *corev1.VolumeSource) []string {
	var set []string
	v := reflect.ValueOf(src).Elem()
	for i := range v.NumField() {
		if f := v.Field(i); f.Kind() == reflect.Pointer && !f.IsNil() {
			name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
			set = append(set, name)
		}
	}
	slices.SortStableFunc(set, func(a, b string) int {
		return slices.Index(volumeSourceOrder, a) - slices.Index(volumeSourceOrder, b)
	})
	return set
}

// volumeSourceOrder is the order of kube's validateVolumeSource.
var volumeSourceOrder = []string{
	"emptyDir", "hostPath", "gitRepo", "gcePersistentDisk", "awsElasticBlockStore", "secret", "nfs",
	"iscsi", "glusterfs", "flocker", "persistentVolumeClaim", "rbd", "cinder", "cephfs", "quobyte",
	"downwardAPI", "fc", "flexVolume", "configMap", "azureFile", "vsphereVolume", "photonPersistentDisk",
	"portworxVolume", "azureDisk", "storageos", "projected", "scaleIO", "csi", "ephemeral", "image",
}

// hostPathTypes are the hostPath types kube accepts, sorted as its
// NotSupported message lists them.
var hostPathTypes = []string{"", "BlockDevice", "CharDevice", "Directory", "DirectoryOrCreate", "File", "FileOrCreate", "Socket"}

// validateHostPath: a path without '..' elements, and a known type.
func validateHostPath(hp *corev1.HostPathVolumeSource, fld *field.Path) field.ErrorList {
	if hp.Path == "" {
		return field.ErrorList{field.Required(fld.Child("path"), "")}
	}
	errs := validateNoBacksteps(hp.Path, fld.Child("path"))
	if hp.Type != nil && !slices.Contains(hostPathTypes, string(*hp.Type)) {
		errs = append(errs, field.NotSupported(fld.Child("type"), *hp.Type, hostPathTypes))
	}
	return errs
}

// validateVolumeMounts is kube's ValidateVolumeMounts: each mount names a
// volume of the pod, has a unique mount path, and its subPath or
// subPathExpr (not both) stays inside the volume.
//
// NOTE: kube reports subPath errors at "<mounts>.subPath", without the
// mount's index; skiff keeps that path.
func validateVolumeMounts(mounts []corev1.VolumeMount, volumes map[string]bool, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	paths := map[string]bool{}
	for i, m := range mounts {
		p := fld.Index(i)
		if m.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		}
		if !volumes[m.Name] {
			errs = append(errs, field.NotFound(p.Child("name"), m.Name))
		}
		if m.MountPath == "" {
			errs = append(errs, field.Required(p.Child("mountPath"), ""))
		}
		if paths[m.MountPath] {
			errs = append(errs, field.Invalid(p.Child("mountPath"), m.MountPath, "must be unique"))
		}
		paths[m.MountPath] = true
		if m.SubPath != "" {
			errs = append(errs, validateDescendingPath(m.SubPath, fld.Child("subPath"))...)
		}
		if m.SubPathExpr != "" {
			if m.SubPath != "" {
				errs = append(errs, field.Invalid(p.Child("subPathExpr"), m.SubPathExpr, "subPathExpr and subPath are mutually exclusive"))
			}
			errs = append(errs, validateDescendingPath(m.SubPathExpr, fld.Child("subPathExpr"))...)
		}
	}
	return errs
}

// validateDescendingPath: a relative path without '..' elements.
func validateDescendingPath(p string, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if path.IsAbs(p) {
		errs = append(errs, field.Invalid(fld, p, "must be a relative path"))
	}
	return append(errs, validateNoBacksteps(p, fld)...)
}

// validateNoBacksteps refuses a path with a '..' element (once, however
// many there are).
func validateNoBacksteps(p string, fld *field.Path) field.ErrorList {
	if slices.Contains(strings.Split(filepath.ToSlash(p), "/"), "..") {
		return field.ErrorList{field.Invalid(fld, p, "must not contain '..'")}
	}
	return nil
}
