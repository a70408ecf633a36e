package kube

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// PreparePodTemplateForCreate is kube's podtemplate strategy on create: the
// fields of gates off by default dropped, then the template's pod spec
// defaulted as kube's SetObjectDefaults_PodTemplate does.
func PreparePodTemplateForCreate(pt *corev1.PodTemplate) {
	dropGatedPodSpecFields(&pt.Template.Spec, nil)
	defaultPodSpec(&pt.Template.Spec)
}

// PreparePodTemplateForUpdate is the same on update, old being the stored
// PodTemplate.
func PreparePodTemplateForUpdate(pt, old *corev1.PodTemplate) {
	dropGatedPodSpecFields(&pt.Template.Spec, &old.Template.Spec)
	defaultPodSpec(&pt.Template.Spec)
}

// ValidatePodTemplate is kube's ValidatePodTemplate (the metadata aside):
// the template as any pod template.
func ValidatePodTemplate(pt *corev1.PodTemplate) field.ErrorList {
	return validatePodTemplateSpec(&pt.Template, field.NewPath("template"))
}

// ValidatePodTemplateUpdate is kube's ValidatePodTemplateUpdate (the
// metadata aside): the whole template may change, and is validated again.
func ValidatePodTemplateUpdate(pt, _ *corev1.PodTemplate) field.ErrorList {
	return ValidatePodTemplate(pt)
}
