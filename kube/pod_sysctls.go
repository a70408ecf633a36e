package kube

import (
	"fmt"
	"regexp"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/component-helpers/node/util/sysctl"
)

// sysctlMaxLength is kube's SysctlMaxLength.
const sysctlMaxLength = 253

// sysctlNameRegexp is kube's sysctlContainSlashRegexp: segments of lower
// case letters, digits, '-' and '_' (starting and ending with a letter or
// digit) joined by '.' or '/'.
var sysctlNameRegexp = regexp.MustCompile(`^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$`)

// validateSysctls is kube's validateSysctls: each name present, well
// formed and given once, and none of a namespace the pod shares with the
// host (net.* with hostNetwork, IPC ones with hostIPC) — unless old, the
// stored spec, already had such a sysctl, which kube lets an update keep.
// Which sysctls are safe is the kubelet's question, not validation's.
func validateSysctls(spec, old *corev1.PodSpec, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	checkHost := !hostSysctlViolation(old)
	seen := map[string]bool{}
	for i, s := range spec.SecurityContext.Sysctls {
		p := fld.Index(i).Child("name")
		switch {
		case s.Name == "":
			errs = append(errs, field.Required(p, ""))
		case len(s.Name) > sysctlMaxLength || !sysctlNameRegexp.MatchString(s.Name):
			errs = append(errs, field.Invalid(p, s.Name, fmt.Sprintf("must have at most %d characters and match regex %s", sysctlMaxLength, sysctlNameRegexp)))
		case seen[s.Name]:
			errs = append(errs, field.Duplicate(p, s.Name))
		}
		seen[s.Name] = true
		if checkHost {
			if msg := hostSysctl(spec, s.Name); msg != "" {
				errs = append(errs, field.Invalid(p, s.Name, msg))
			}
		}
	}
	return errs
}

// hostSysctl is kube's ValidateHostSysctl: why a sysctl may not be set on a
// pod sharing that sysctl's namespace with the host ("" = it may).
func hostSysctl(spec *corev1.PodSpec, name string) string {
	ns, _, _ := sysctl.GetNamespace(name)
	switch {
	case spec.HostNetwork && ns == sysctl.NetNamespace:
		return "may not be specified when 'hostNetwork' is true"
	case spec.HostIPC && ns == sysctl.IPCNamespace:
		return "may not be specified when 'hostIPC' is true"
	}
	return ""
}

// hostSysctlViolation reports whether a stored spec has a sysctl of a
// namespace it shares with the host.
func hostSysctlViolation(old *corev1.PodSpec) bool {
	if old == nil || old.SecurityContext == nil {
		return false
	}
	for _, s := range old.SecurityContext.Sysctls {
		if hostSysctl(old, s.Name) != "" {
			return true
		}
	}
	return false
}
