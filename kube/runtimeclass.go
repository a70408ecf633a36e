package kube

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateRuntimeClass is kube's ValidateRuntimeClass (the metadata
// aside): the handler a DNS label, overhead.podFixed valid as container
// limits, scheduling's nodeSelector valid labels and its tolerations valid
// and not repeated.
func ValidateRuntimeClass(rc *nodev1.RuntimeClass) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range apivalidation.NameIsDNSLabel(rc.Handler, false) {
		errs = append(errs, field.Invalid(field.NewPath("handler"), rc.Handler, msg))
	}
	if rc.Overhead != nil {
		errs = append(errs, validateOverhead(rc.Overhead.PodFixed, field.NewPath("overhead"))...)
	}
	if s := rc.Scheduling; s != nil {
		fld := field.NewPath("scheduling")
		if s.NodeSelector != nil {
			errs = append(errs, metav1validation.ValidateLabels(s.NodeSelector, fld.Child("nodeSelector"))...)
		}
		errs = append(errs, validateUniqueTolerations(s.Tolerations, fld.Child("tolerations"))...)
	}
	return errs
}

// ValidateRuntimeClassUpdate is kube's update validation of a RuntimeClass
// (the metadata aside): valid as on create, and the handler unchanged.
func ValidateRuntimeClassUpdate(rc, old *nodev1.RuntimeClass) field.ErrorList {
	errs := ValidateRuntimeClass(rc)
	return append(errs, apivalidation.ValidateImmutableField(rc.Handler, old.Handler, field.NewPath("handler"))...)
}

// RuntimeClassWarnings are kube's warnings on a written RuntimeClass: the
// deprecated node labels its scheduling.nodeSelector uses.
func RuntimeClassWarnings(rc *nodev1.RuntimeClass) []string {
	if rc.Scheduling == nil {
		return nil
	}
	var warnings []string
	for key := range rc.Scheduling.NodeSelector {
		if msg, ok := deprecatedNodeLabels[key]; ok {
			warnings = append(warnings, fmt.Sprintf("%s: %s", field.NewPath("scheduling", "nodeSelector"), msg))
		}
	}
	sort.Strings(warnings)
	return warnings
}

// deprecatedNodeLabels are the node labels kube warns about, with its words.
var deprecatedNodeLabels = map[string]string{
	"beta.kubernetes.io/arch":                       `deprecated since v1.14; use "kubernetes.io/arch" instead`,
	"beta.kubernetes.io/os":                         `deprecated since v1.14; use "kubernetes.io/os" instead`,
	"failure-domain.beta.kubernetes.io/region":      `deprecated since v1.17; use "topology.kubernetes.io/region" instead`,
	"failure-domain.beta.kubernetes.io/zone":        `deprecated since v1.17; use "topology.kubernetes.io/zone" instead`,
	"beta.kubernetes.io/instance-type":              `deprecated since v1.17; use "node.kubernetes.io/instance-type" instead`,
	"app.kubernetes.io/created-by":                  `deprecated since v1.9`,
	"scheduler.alpha.kubernetes.io/preferAvoidPods": `deprecated since v1.22; use Taints and Tolerations instead`,
	"node-role.kubernetes.io/master":                `use "node-role.kubernetes.io/control-plane" instead`,
}

// validateOverhead is kube's validation of an overhead (a RuntimeClass's
// podFixed, a pod's spec.overhead): the rules of a container's limits.
func validateOverhead(list corev1.ResourceList, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	limits := fld.Child("limits")
	cpuOrMemory, hugePages := false, false
	for _, name := range slices.Sorted(maps.Keys(list)) {
		q, at := list[name], limits.Key(string(name))
		errs = append(errs, validateContainerResourceName(name, at)...)
		if q.Cmp(resource.Quantity{}) < 0 {
			errs = append(errs, field.Invalid(at, q.String(), "must be greater than or equal to 0"))
		}
		if isExtendedResourceName(name) && q.MilliValue()%1000 != 0 {
			errs = append(errs, field.Invalid(at, q, "must be an integer"))
		}
		hugePages = hugePages || strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix)
		cpuOrMemory = cpuOrMemory || name == corev1.ResourceCPU || name == corev1.ResourceMemory
	}
	if hugePages && !cpuOrMemory {
		errs = append(errs, field.Forbidden(fld, "HugePages require cpu or memory"))
	}
	return errs
}

// validateContainerResourceName is kube's: a qualified name; unprefixed,
// one of cpu, memory, ephemeral-storage or hugepages-<size>; prefixed and
// not kube's own, an extended resource name.
func validateContainerResourceName(name corev1.ResourceName, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(string(name)) {
		errs = append(errs, field.Invalid(fld, name, msg))
	}
	if len(errs) > 0 {
		return errs
	}
	if !strings.Contains(string(name), "/") {
		switch {
		case name == corev1.ResourceCPU, name == corev1.ResourceMemory, name == corev1.ResourceEphemeralStorage,
			strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix):
			return nil
		}
		return field.ErrorList{field.Invalid(fld, name, "must be a standard resource for containers")}
	}
	if !isNativeResourceName(name) && !isExtendedResourceName(name) {
		return field.ErrorList{field.Invalid(fld, name, "doesn't follow extended resource name standard")}
	}
	return nil
}

// isNativeResourceName: unprefixed, or in the kubernetes.io domain.
func isNativeResourceName(name corev1.ResourceName) bool {
	return !strings.Contains(string(name), "/") || strings.Contains(string(name), corev1.ResourceDefaultNamespacePrefix)
}

// isExtendedResourceName is kube's IsExtendedResourceName.
func isExtendedResourceName(name corev1.ResourceName) bool {
	if isNativeResourceName(name) || strings.HasPrefix(string(name), corev1.DefaultResourceRequestsPrefix) {
		return false
	}
	return len(validation.IsQualifiedName(corev1.DefaultResourceRequestsPrefix+string(name))) == 0
}

// validateUniqueTolerations is kube's validation of a RuntimeClass's
// tolerations: each valid, and none repeated (by key, operator, value and
// effect).
func validateUniqueTolerations(ts []corev1.Toleration, fld *field.Path) field.ErrorList {
	// NOTE: kube validates each toleration under the path
	// scheduling.tolerations.tolerations (it appends the child twice), and
	// the duplicates under scheduling.tolerations: its messages say so.
	errs := validateTolerations(ts, fld.Child("tolerations"))
	seen := map[corev1.Toleration]bool{}
	for i, t := range ts {
		key := corev1.Toleration{Key: t.Key, Operator: t.Operator, Value: t.Value, Effect: t.Effect}
		if seen[key] {
			errs = append(errs, field.Duplicate(fld.Index(i), t))
		}
		seen[key] = true
	}
	return errs
}

// validateTolerations is kube's ValidateTolerations.
func validateTolerations(ts []corev1.Toleration, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, t := range ts {
		at := fld.Index(i)
		if t.Key != "" {
			errs = append(errs, metav1validation.ValidateLabelName(t.Key, at.Child("key"))...)
		}
		if t.Key == "" && t.Operator != corev1.TolerationOpExists {
			errs = append(errs, field.Invalid(at.Child("operator"), t.Operator,
				"operator must be Exists when `key` is empty, which means \"match all values and all keys\""))
		}
		if t.TolerationSeconds != nil && t.Effect != corev1.TaintEffectNoExecute {
			errs = append(errs, field.Invalid(at.Child("effect"), t.Effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"))
		}
		switch t.Operator {
		case corev1.TolerationOpEqual, "":
			if msgs := validation.IsValidLabelValue(t.Value); len(msgs) > 0 {
				errs = append(errs, field.Invalid(at.Child("operator"), t.Value, strings.Join(msgs, ";")))
			}
		case corev1.TolerationOpExists:
			if t.Value != "" {
				errs = append(errs, field.Invalid(at.Child("operator"), t.Value, "value must be empty when `operator` is 'Exists'"))
			}
		default:
			errs = append(errs, field.NotSupported(at.Child("operator"), t.Operator,
				[]corev1.TolerationOperator{corev1.TolerationOpEqual, corev1.TolerationOpExists}))
		}
		switch t.Effect {
		case "", corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		default:
			errs = append(errs, field.NotSupported(at.Child("effect"), t.Effect,
				[]corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute}))
		}
	}
	return errs
}

// admitRuntimeClass is kube-apiserver's RuntimeClass admission of a new
// pod, its mutating and validating halves: rc is the class the pod names,
// as the writer's transaction reads it (nil when missing or when the pod
// names none). A pod naming a missing class is refused (403); the class's
// overhead becomes the pod's (a pod carrying another one is refused), its
// scheduling is merged into the pod's nodeSelector (a conflicting value
// refused) and tolerations. A pod naming no class may carry no overhead.
func admitRuntimeClass(pod *corev1.Pod, rc *nodev1.RuntimeClass) error {
	name := pod.Spec.RuntimeClassName
	if name != nil && rc == nil {
		return forbidPod(pod, fmt.Errorf("pod rejected: RuntimeClass %q not found", *name))
	}
	if rc == nil || rc.Overhead == nil {
		if pod.Spec.Overhead != nil {
			return forbidPod(pod, fmt.Errorf("pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead"))
		}
	} else {
		if len(pod.Spec.Overhead) > 0 && !apiequality.Semantic.DeepEqual(rc.Overhead.PodFixed, pod.Spec.Overhead) {
			return forbidPod(pod, fmt.Errorf("pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead"))
		}
		pod.Spec.Overhead = rc.Overhead.PodFixed.DeepCopy()
	}
	if rc == nil || rc.Scheduling == nil {
		return nil
	}
	if pod.Spec.NodeSelector == nil {
		pod.Spec.NodeSelector = maps.Clone(rc.Scheduling.NodeSelector)
	} else {
		for _, key := range slices.Sorted(maps.Keys(rc.Scheduling.NodeSelector)) {
			value := rc.Scheduling.NodeSelector[key]
			if podValue, ok := pod.Spec.NodeSelector[key]; ok && podValue != value {
				return forbidPod(pod, fmt.Errorf("conflict: runtimeClass.scheduling.nodeSelector[%s] = %s; pod.spec.nodeSelector[%s] = %s",
					key, value, key, podValue))
			}
			pod.Spec.NodeSelector[key] = value
		}
	}
	pod.Spec.Tolerations = MergeTolerations(pod.Spec.Tolerations, rc.Scheduling.Tolerations)
	return nil
}

// forbidPod is an admission's 403 refusal of a new pod.
func forbidPod(pod *corev1.Pod, err error) error {
	// NOTE: kube-apiserver admits a pod before it draws its name from
	// generateName, so its refusal names the prefix; skiff's writers draw
	// the name first.
	refused := pod.GenerateName
	if refused == "" {
		refused = pod.Name
	}
	return apierrors.NewForbidden(corev1.Resource("pods"), refused, err)
}

// MergeTolerations is kube's tolerations merge (pkg/util/tolerations):
// first then second, less those another one in the list already covers
// (of two equal ones, the first stays).
func MergeTolerations(first, second []corev1.Toleration) []corev1.Toleration {
	all := append(append([]corev1.Toleration(nil), first...), second...)
	var merged []corev1.Toleration
next:
	for i, t := range all {
		for _, kept := range merged {
			if toleratesAll(kept, t) {
				continue next
			}
		}
		for _, later := range all[i+1:] {
			if !apiequality.Semantic.DeepEqual(&t, &later) && toleratesAll(later, t) {
				continue next
			}
		}
		merged = append(merged, t)
	}
	return merged
}

// toleratesAll reports whether ss tolerates every taint t tolerates
// (kube's isSuperset).
func toleratesAll(ss, t corev1.Toleration) bool {
	if apiequality.Semantic.DeepEqual(&t, &ss) {
		return true
	}
	if t.Key != ss.Key && (ss.Key != "" || ss.Operator != corev1.TolerationOpExists) {
		return false
	}
	if t.Effect != ss.Effect && ss.Effect != "" {
		return false
	}
	if ss.Effect == corev1.TaintEffectNoExecute && ss.TolerationSeconds != nil &&
		(t.TolerationSeconds == nil || *t.TolerationSeconds > *ss.TolerationSeconds) {
		return false
	}
	switch ss.Operator {
	case corev1.TolerationOpEqual, "":
		return t.Operator == corev1.TolerationOpEqual && t.Value == ss.Value
	case corev1.TolerationOpExists:
		return true
	}
	return false
}
