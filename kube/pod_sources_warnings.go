package kube

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// PodSourceWarnings are kube's warnings on a written pod spec (those of
// pkg/api/pod's warnings.go) about what it takes from ConfigMaps and
// Secrets: volume files whose paths overlap, a projected source that names
// nothing, imagePullSecrets named twice or without a name; and a negative
// terminationGracePeriodSeconds (a template's: a Pod's became 1 on the way
// in, see defaultPod). fld is nil for
// a Pod's own spec, spec.template for a template's.
func PodSourceWarnings(spec *corev1.PodSpec, fld *field.Path) []string {
	warnings := overlappingPathWarnings(spec.Volumes)
	pullSecrets := fld.Child("spec", "imagePullSecrets")
	named := map[string]bool{}
	for i, ref := range spec.ImagePullSecrets {
		if named[ref.Name] {
			warnings = append(warnings, fmt.Sprintf("%s: duplicate name %q", pullSecrets.Index(i).Child("name"), ref.Name))
		}
		named[ref.Name] = true
	}
	for i, ref := range spec.ImagePullSecrets {
		if ref.Name == "" {
			warnings = append(warnings, fmt.Sprintf("%s: invalid empty name %q", pullSecrets.Index(i).Child("name"), ref.Name))
		}
	}
	if g := spec.TerminationGracePeriodSeconds; g != nil && *g < 0 {
		warnings = append(warnings, fmt.Sprintf("%s: must be >= 0; negative values are invalid and will be treated as 1", fld.Child("spec", "terminationGracePeriodSeconds")))
	}
	return warnings
}

// volumePath is a file path of a volume and, in a projected volume, the
// source it comes from.
type volumePath struct {
	path, source string
}

func (p volumePath) String() string {
	if p.source == "" {
		return fmt.Sprintf("%q", p.path)
	}
	return fmt.Sprintf("%q (%s)", p.path, p.source)
}

// overlappingPathWarnings: two files of one volume where one path is the
// other or lies below it — one of them would hide the other.
func overlappingPathWarnings(volumes []corev1.Volume) []string {
	var warnings []string
	for i := range volumes {
		v := &volumes[i]
		var seen pathSet
		add := func(desc string, paths []volumePath) {
			for _, msg := range seen.add(paths) {
				warnings = append(warnings, fmt.Sprintf("volume %q (%s): overlapping paths: %s", v.Name, desc, msg))
			}
		}
		switch {
		case v.ConfigMap != nil:
			add(fmt.Sprintf("ConfigMap %q", v.ConfigMap.Name), keyPaths(v.ConfigMap.Items, ""))
		case v.Secret != nil:
			add(fmt.Sprintf("Secret %q", v.Secret.SecretName), keyPaths(v.Secret.Items, ""))
		case v.DownwardAPI != nil:
			add("DownwardAPI", downwardAPIPaths(v.DownwardAPI.Items))
		case v.Projected != nil:
			for _, src := range v.Projected.Sources {
				if src == (corev1.VolumeProjection{}) {
					warnings = append(warnings, fmt.Sprintf("volume %q (Projected) has no sources provided", v.Name))
					continue
				}
				add("Projected", projectionPaths(src))
			}
		}
	}
	return warnings
}

// projectionPaths are the paths a projected volume's source writes, named
// by the source.
func projectionPaths(s corev1.VolumeProjection) []volumePath {
	switch {
	case s.ConfigMap != nil:
		return keyPaths(s.ConfigMap.Items, fmt.Sprintf("ConfigMap %q", s.ConfigMap.Name))
	case s.Secret != nil:
		return keyPaths(s.Secret.Items, fmt.Sprintf("Secret %q", s.Secret.Name))
	case s.DownwardAPI != nil:
		paths := downwardAPIPaths(s.DownwardAPI.Items)
		for i := range paths {
			paths[i].source = "DownwardAPI"
		}
		return paths
	case s.ServiceAccountToken != nil:
		return []volumePath{{s.ServiceAccountToken.Path, "ServiceAccountToken"}}
	case s.ClusterTrustBundle != nil:
		name := ""
		if b := s.ClusterTrustBundle; b.Name != nil {
			name = *b.Name
		} else if b.SignerName != nil {
			name = *b.SignerName
		}
		return []volumePath{{s.ClusterTrustBundle.Path, fmt.Sprintf("ClusterTrustBundle %q", name)}}
	case s.PodCertificate != nil:
		var paths []volumePath
		for _, p := range []volumePath{
			{s.PodCertificate.CertificateChainPath, "PodCertificate chain"},
			{s.PodCertificate.KeyPath, "PodCertificate key"},
			{s.PodCertificate.CredentialBundlePath, "PodCertificate credential bundle"},
		} {
			if p.path != "" {
				paths = append(paths, p)
			}
		}
		return paths
	}
	return nil
}

func keyPaths(items []corev1.KeyToPath, source string) []volumePath {
	paths := make([]volumePath, 0, len(items))
	for _, it := range items {
		paths = append(paths, volumePath{it.Path, source})
	}
	return paths
}

func downwardAPIPaths(items []corev1.DownwardAPIVolumeFile) []volumePath {
	paths := make([]volumePath, 0, len(items))
	for _, it := range items {
		paths = append(paths, volumePath{path: it.Path})
	}
	return paths
}

// pathSet is the paths of one volume seen so far.
type pathSet []volumePath

// add adds paths, describing each that overlaps one seen before it: the
// same path, or one below the other.
func (seen *pathSet) add(paths []volumePath) []string {
	var out []string
	for _, p := range paths {
		p.path = strings.TrimRight(p.path, "/")
		if p.path != "" {
			for _, s := range *seen {
				if s.path != "" && (strings.HasPrefix(s.path+"/", p.path+"/") || strings.HasPrefix(p.path+"/", s.path+"/")) {
					out = append(out, fmt.Sprintf("%s with %s", p, s))
				}
			}
		}
		*seen = append(*seen, p)
	}
	return out
}
