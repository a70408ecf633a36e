package api

import (
	"fmt"
	"net/http"
	"slices"

	"github.com/gorilla/mux"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	policyv1beta1 "k8s.io/api/policy/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/kube"
)

// The eviction subresource of a Pod: POST a policy/v1 (or v1beta1)
// Eviction and the pod is marked as disrupted (condition DisruptionTarget)
// and deleted gracefully, as kube-apiserver's EvictionREST does.
//
// NOTE: skiff has no PodDisruptionBudgets, so every eviction is allowed:
// there is no 429 TooManyRequests path (kube answers 429 only when a PDB
// forbids the disruption).

// The DisruptionTarget condition an eviction adds (kube-apiserver's words).
const (
	reasonEvictionByEvictionAPI  = "EvictionByEvictionAPI"
	messageEvictionByEvictionAPI = "Eviction API: evicting"
)

// evictionGVK is the kind discovery gives pods/eviction.
var evictionGVK = policyv1.SchemeGroupVersion.WithKind("Eviction")

// evictionSubresource is pods/eviction as discovery lists it.
func evictionSubresource() metav1.APIResource {
	return metav1.APIResource{Name: "pods/eviction", Namespaced: true, Group: evictionGVK.Group,
		Version: evictionGVK.Version, Kind: evictionGVK.Kind, Verbs: metav1.Verbs{"create"}}
}

// podEvictionRoute registers POST .../pods/{name}/eviction.
func (s *server) podEvictionRoute(r *mux.Router) {
	object := podResource.gv.prefix() + "/namespaces/{namespace}/" + podResource.plural + "/{name}"
	r.HandleFunc(object+"/eviction", s.methods(podResource, "eviction", map[string]http.HandlerFunc{
		http.MethodPost: s.podEviction,
	}))
}

// podEviction serves POST .../pods/{name}/eviction: 201 and a Success
// Status once the pod is marked and its deletion started.
func (s *server) podEviction(w http.ResponseWriter, r *http.Request) {
	v := mux.Vars(r)
	opts, err := evictionRequest(w, r, v["namespace"], v["name"])
	if err != nil {
		writeError(w, r, err)
		return
	}
	if err := s.evict(v["namespace"], v["name"], opts); err != nil {
		writeError(w, r, statusFor(err, podResource.groupResource(), v["name"]))
		return
	}
	// NOTE: kube-apiserver's create handler gives the Status its 201.
	writeStatus(w, r, &metav1.Status{Status: metav1.StatusSuccess, Code: http.StatusCreated})
}

// evictionRequest reads the CreateOptions and the Eviction of a request and
// returns the DeleteOptions to delete the pod with.
func evictionRequest(w http.ResponseWriter, r *http.Request, ns, name string) (metav1.DeleteOptions, error) {
	wopts, err := parseWriteOptions(r, createOptionsKind, "")
	if err != nil {
		return metav1.DeleteOptions{}, err
	}
	ev, err := decodeEviction(w, r, wopts.validation)
	if err != nil {
		return metav1.DeleteOptions{}, err
	}
	if err := checkNamespace(ev, ns); err != nil {
		return metav1.DeleteOptions{}, err
	}
	if ev.Name != name {
		return metav1.DeleteOptions{}, apierrors.NewBadRequest("name in URL does not match name in Eviction object")
	}
	var dryRun []string
	if wopts.dryRun {
		dryRun = []string{metav1.DryRunAll}
	}
	return evictionDeleteOptions(ev, dryRun)
}

// evictionDeleteOptions are the Eviction's deleteOptions with the request's
// dryRun.
// NOTE: kube-apiserver's propagateDryRun: the query's dryRun fills the
// body's when that has none; two different ones are an error (a plain one
// there, so a 500 with reason Unknown).
func evictionDeleteOptions(ev *policyv1.Eviction, dryRun []string) (metav1.DeleteOptions, error) {
	if ev.DeleteOptions == nil {
		return metav1.DeleteOptions{DryRun: dryRun}, nil
	}
	opts := *ev.DeleteOptions
	switch {
	case len(opts.DryRun) == 0:
		opts.DryRun = dryRun
	case len(dryRun) > 0 && !slices.Equal(dryRun, opts.DryRun):
		return opts, &apierrors.StatusError{ErrStatus: metav1.Status{
			Status: metav1.StatusFailure, Code: http.StatusInternalServerError, Reason: metav1.StatusReasonUnknown,
			Message: fmt.Sprintf("Non-matching dry-run options in request and content: %v and %v", dryRun, opts.DryRun),
		}}
	}
	return opts, nil
}

// decodeEviction decodes the request body (JSON, YAML or protobuf) as a
// policy/v1 or policy/v1beta1 Eviction (the two have the same fields).
func decodeEviction(w http.ResponseWriter, r *http.Request, directive fieldValidation) (*policyv1.Eviction, error) {
	ev := &policyv1.Eviction{}
	prefix := fmt.Sprintf("%s in version %q cannot be handled as a %s: ", evictionGVK.Kind, evictionGVK.Version, evictionGVK.Kind)
	if mediaType(r) == mediaProtobuf {
		data, err := readBody(r)
		if err != nil {
			return nil, err
		}
		gvk, err := decodeProtobuf(data, ev, prefix)
		if err != nil {
			return nil, err
		}
		ev.SetGroupVersionKind(gvk)
	} else {
		data, strict, err := bodyJSON(r)
		if err != nil {
			return nil, err
		}
		if err := decodeJSON(w, data, ev, directive, strict, prefix); err != nil {
			return nil, err
		}
	}
	return ev, checkEvictionTypeMeta(ev.GroupVersionKind())
}

// checkEvictionTypeMeta: a body's apiVersion and kind, when present, must
// be policy/v1 or policy/v1beta1 Eviction.
// NOTE: kube-apiserver's EvictionREST accepts both versions
// (AcceptsGroupVersion).
func checkEvictionTypeMeta(gvk schema.GroupVersionKind) error {
	gv := gvk.GroupVersion()
	if gvk.Version != "" && gv != policyv1.SchemeGroupVersion && gv != policyv1beta1.SchemeGroupVersion {
		return apierrors.NewBadRequest(fmt.Sprintf("the API version in the data (%s) does not match the expected API version (%s)",
			gv, evictionGVK.GroupVersion()))
	}
	if gvk.Kind != "" && gvk.Kind != evictionGVK.Kind {
		return apierrors.NewBadRequest(fmt.Sprintf("the kind in the data (%s) does not match the expected kind (%s)", gvk.Kind, evictionGVK.Kind))
	}
	return nil
}

// evict marks the pod with the DisruptionTarget condition and deletes it
// gracefully with opts, in one transaction. A dry run only checks.
// NOTE: kube-apiserver's addConditionAndDeletePod adds the condition to
// every pod it evicts, terminal ones included (they skip only the PDB
// check); the preconditions are checked on the pod before the condition
// is added, and the deletion then applies to the marked pod.
func (s *server) evict(ns, name string, opts metav1.DeleteOptions) error {
	return s.store.Write(func(tx *db.Tx) error {
		obj, err := tx.Get(db.Pods, ns, name)
		if err != nil {
			return err
		}
		if len(opts.DryRun) > 0 {
			_, err = deleteInTx(tx, podResource, obj, opts)
			return err
		}
		pod := obj.(*corev1.Pod)
		if err := checkEvictionPreconditions(pod, opts.Preconditions); err != nil {
			return err
		}
		if addDisruptionTarget(&pod.Status, metav1.Now()) {
			if err := tx.Update(db.Pods, pod); err != nil {
				return fmt.Errorf("marking pod %s disrupted: %w", name, err)
			}
		}
		opts.Preconditions = nil
		_, err = deleteInTx(tx, podResource, pod, opts)
		return err
	})
}

// checkEvictionPreconditions enforces the Eviction's preconditions (409 on
// a mismatch) with the words of kube-apiserver's eviction handler.
func checkEvictionPreconditions(pod *corev1.Pod, p *metav1.Preconditions) error {
	if p == nil {
		return nil
	}
	// NOTE: kube names the resource "Pod" in these conflicts.
	gr := schema.GroupResource{Resource: "Pod"}
	if p.UID != nil && *p.UID != "" && *p.UID != pod.UID {
		return apierrors.NewConflict(gr, pod.Name, fmt.Errorf(
			"the UID in the precondition (%s) does not match the UID in record (%s). The object might have been deleted and then recreated",
			*p.UID, pod.UID))
	}
	if p.ResourceVersion != nil && *p.ResourceVersion != "" && *p.ResourceVersion != pod.ResourceVersion {
		return apierrors.NewConflict(gr, pod.Name, fmt.Errorf(
			"the ResourceVersion in the precondition (%s) does not match the ResourceVersion in record (%s). The object might have been modified",
			*p.ResourceVersion, pod.ResourceVersion))
	}
	return nil
}

// addDisruptionTarget sets the eviction's DisruptionTarget condition on
// status and reports whether anything changed.
func addDisruptionTarget(status *corev1.PodStatus, now metav1.Time) bool {
	return kube.SetPodCondition(status, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
		Reason: reasonEvictionByEvictionAPI, Message: messageEvictionByEvictionAPI, LastTransitionTime: now})
}
