package kube

import (
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
)

// PodStrategy is kube-apiserver's pod registry strategy
// (pkg/registry/core/pod) on skiff's node: what every writer of a Pod does
// before storing it. The API's POST /pods and the Job controller both create
// pods through it, so a Job's pod and a bare pod from the same template are
// defaulted, validated and admitted by the same code.
type PodStrategy struct {
	// NodeName is this node: a pod created without spec.nodeName is bound
	// to it, as the scheduler would bind it to the only node.
	NodeName string
	// NamespaceLifecycle admits new pods only into a namespace that exists
	// and is not terminating (kube-apiserver's admission plugin of that
	// name). Off only where a store holds no namespaces (unit tests).
	NamespaceLifecycle bool
	// ServiceAccounts admits new pods as kube-apiserver's ServiceAccount
	// admission plugin does (admitServiceAccount): their ServiceAccount
	// must exist, they get its token volume and imagePullSecrets. Off only
	// where a store holds no ServiceAccounts (unit tests).
	ServiceAccounts bool
}

// PrepareForCreate is the strategy's PrepareForCreate with the defaulting
// kube-apiserver applies on decode: the fields of gates off by default
// dropped, the pod defaults (defaultPod), the
// binding to this node, and phase Pending and the QoS class as the only
// status.
func (s PodStrategy) PrepareForCreate(pod *corev1.Pod) {
	dropGatedPodSpecFields(&pod.Spec, nil)
	defaultPod(pod)
	// NOTE: skiff has no scheduler: a Pod created without a node is bound to
	// this one, as the scheduler would bind it to the only node.
	if pod.Spec.NodeName == "" {
		pod.Spec.NodeName = s.NodeName
	}
	pod.Status = corev1.PodStatus{Phase: corev1.PodPending, QOSClass: QOSClass(&pod.Spec)}
}

// Create runs a new pod through the whole create path a writer that holds a
// store transaction takes (the Job controller): PrepareForCreate, the
// validation of its metadata and spec, and the admission (Admit) against
// ns, the pod's namespace, and refs, as stored in the same transaction (nil
// when they do not exist). The error is kube-apiserver's Status error (422
// Invalid, 404, 403 with the NamespaceTerminating cause, 403 for a missing
// ServiceAccount or RuntimeClass).
func (s PodStrategy) Create(pod *corev1.Pod, ns *corev1.Namespace, refs PodRefs) error {
	s.PrepareForCreate(pod)
	errs := ValidateObjectMeta(pod, true, apivalidation.NameIsDNSSubdomain)
	if errs = append(errs, ValidatePodCreate(pod)...); len(errs) > 0 {
		return apierrors.NewInvalid(corev1.SchemeGroupVersion.WithKind("Pod").GroupKind(), podName(pod), errs)
	}
	if s.NamespaceLifecycle {
		if err := AdmitNamespace(ns, pod.Namespace, corev1.Resource("pods"), podName(pod)); err != nil {
			return err
		}
	}
	return s.Admit(pod, refs)
}

// PodRefs are the objects the admission of a new pod reads besides its
// namespace, as the writer's transaction reads them (nil when missing).
type PodRefs struct {
	// ServiceAccount is the pod's (PodServiceAccount).
	ServiceAccount *corev1.ServiceAccount
	// RuntimeClass is the one spec.runtimeClassName names; nil also when
	// the pod names none.
	RuntimeClass *nodev1.RuntimeClass
}

// Admit is the admission of a valid new pod that reads other objects
// besides its namespace, in kube-apiserver's order of plugins: the
// ServiceAccount admission (when s.ServiceAccounts), DefaultTolerationSeconds
// (the tolerations of not-ready and unreachable nodes), then the
// RuntimeClass one (admitRuntimeClass), whose tolerations merge with those.
//
// NOTE: kube-apiserver admits before it validates; what the admissions
// add (a token volume and its mounts, tolerations, a class's overhead and
// scheduling) is valid by construction, so validating first only changes
// which error a pod that is both invalid and refused gets.
func (s PodStrategy) Admit(pod *corev1.Pod, refs PodRefs) error {
	if s.ServiceAccounts {
		if err := admitServiceAccount(pod, refs.ServiceAccount); err != nil {
			return err
		}
	}
	admitDefaultTolerationSeconds(pod)
	return admitRuntimeClass(pod, refs.RuntimeClass)
}

// podName is the name a pod's errors name: its generateName before a name
// is chosen, as kube-apiserver's messages do.
func podName(pod *corev1.Pod) string {
	if pod.Name == "" {
		return pod.GenerateName
	}
	return pod.Name
}

// PreparePodForUpdate keeps the stored status on an update of a Pod and
// defaults the pod again, so that what defaulting filled in on create is
// no change. The stored pod old is defaulted too, as kube-apiserver
// defaults what it reads from storage: a pod stored before a default was
// added compares as it would be stored now.
func PreparePodForUpdate(pod, old *corev1.Pod) {
	defaultPod(old)
	pod.Status = old.Status
	dropGatedPodSpecFields(&pod.Spec, &old.Spec)
	defaultPod(pod)
	admitDefaultTolerationSeconds(pod)
}

// PreparePodForStatusUpdate keeps the stored spec on an update of a Pod's
// status.
func PreparePodForStatusUpdate(pod, old *corev1.Pod) { pod.Spec = old.Spec }

// PrepareEphemeralContainers drops the gated fields of the ephemeral
// containers of a pod whose ephemeralcontainers subresource is written
// (old is the stored spec) and defaults them.
func PrepareEphemeralContainers(spec, old *corev1.PodSpec) {
	dropGatedPodSpecFields(spec, old)
	for i := range spec.EphemeralContainers {
		defaultContainer((*corev1.Container)(&spec.EphemeralContainers[i].EphemeralContainerCommon))
	}
}
