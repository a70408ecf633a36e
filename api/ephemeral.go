package api

import (
	"fmt"
	"net/http"

	"github.com/gorilla/mux"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/kube"
)

// The ephemeralcontainers subresource of a Pod: GET returns the Pod; PUT
// and PATCH take a Pod of which only spec.ephemeralContainers counts.

// putEphemeralContainers serves PUT .../pods/{name}/ephemeralcontainers.
func (s *server) putEphemeralContainers(w http.ResponseWriter, r *http.Request) {
	v := mux.Vars(r)
	obj, err := decodeBody(w, r, podResource)
	if err == nil {
		err = checkNamespace(obj, v["namespace"])
	}
	if err == nil && obj.GetName() != v["name"] {
		err = apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", obj.GetName(), v["name"]))
	}
	dryRun, derr := isDryRun(r)
	if err == nil {
		err = derr
	}
	if err != nil {
		writeError(w, r, err)
		return
	}
	out, err := s.updateEphemeralContainers(v["namespace"], v["name"], dryRun, func(db.Object) (db.Object, error) {
		return obj, nil
	})
	if err != nil {
		writeError(w, r, statusFor(err, podResource.groupResource(), v["name"]))
		return
	}
	s.respond(w, r, podResource, http.StatusOK, out)
}

// patchEphemeralContainers serves PATCH .../pods/{name}/ephemeralcontainers
// (kubectl debug sends a strategic merge patch).
func (s *server) patchEphemeralContainers(w http.ResponseWriter, r *http.Request) {
	v := mux.Vars(r)
	pt := types.PatchType(mediaType(r))
	switch pt {
	case types.JSONPatchType, types.MergePatchType, types.StrategicMergePatchType:
	default:
		writeError(w, r, unsupportedPatchType(string(pt)))
		return
	}
	directive, err := validationDirective(r)
	var body []byte
	if err == nil {
		body, err = readBody(r)
	}
	dryRun, derr := isDryRun(r)
	if err == nil {
		err = derr
	}
	if err != nil {
		writeError(w, r, err)
		return
	}
	out, err := s.updateEphemeralContainers(v["namespace"], v["name"], dryRun, func(old db.Object) (db.Object, error) {
		return applyPatch(w, podResource, pt, body, old, directive)
	})
	if err != nil {
		writeError(w, r, statusFor(err, podResource.groupResource(), v["name"]))
		return
	}
	s.respond(w, r, podResource, http.StatusOK, out)
}

// updateEphemeralContainers stores the ephemeral containers of what change
// makes of the stored pod, in one transaction; everything else stays.
// NOTE: kube-apiserver's podEphemeralContainersStrategy: the rest of the
// object is taken from the stored pod, preconditions (resourceVersion, uid)
// apply, the generation moves with the spec.
func (s *server) updateEphemeralContainers(ns, name string, dryRun bool, change func(old db.Object) (db.Object, error)) (db.Object, error) {
	var out db.Object
	err := s.store.Write(func(tx *db.Tx) error {
		stored, err := tx.Get(db.Pods, ns, name)
		if err != nil {
			return err
		}
		changed, err := change(stored.DeepCopyObject().(db.Object))
		if err != nil {
			return err
		}
		old := stored.(*corev1.Pod)
		if err := checkUpdatePreconditions(changed, old); err != nil {
			return err
		}
		pod := old.DeepCopy()
		pod.Spec.EphemeralContainers = changed.(*corev1.Pod).Spec.EphemeralContainers
		kube.PrepareEphemeralContainers(&pod.Spec, &old.Spec)
		if errs := kube.ValidateEphemeralContainersUpdate(&pod.Spec, &old.Spec); len(errs) > 0 {
			return apierrors.NewInvalid(podResource.groupKind(), name, errs)
		}
		out = pod
		if equality.Semantic.DeepEqual(pod.Spec, old.Spec) || dryRun {
			return nil
		}
		pod.Generation = old.Generation + 1
		return tx.Update(db.Pods, pod)
	})
	return out, err
}

// checkUpdatePreconditions: a resourceVersion or uid in the request must be the
// stored object's.
func checkUpdatePreconditions(obj db.Object, old *corev1.Pod) error {
	if rv := obj.GetResourceVersion(); rv != "" && rv != old.ResourceVersion {
		return db.ErrConflict
	}
	if uid := obj.GetUID(); uid != "" && uid != old.UID {
		return apierrors.NewConflict(podResource.groupResource(), old.Name, fmt.Errorf(
			"Precondition failed: UID in precondition: %v, UID in object meta: %v", uid, old.UID))
	}
	return nil
}
