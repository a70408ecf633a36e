package api

import (
	"fmt"
	"net/http"
	"slices"

	"github.com/gorilla/mux"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/skiff-sh/skiff/db"
)

// deleteResult is what a DELETE did.
type deleteResult struct {
	obj     db.Object
	deleted bool // gone from the store now (else: deletion pending)
}

// delete serves DELETE of an object: graceful deletion, preconditions and
// propagation (Orphan, Background, Foreground), as kube-apiserver does.
func (s *server) delete(rs *resource) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v := mux.Vars(r)
		opts, err := deleteOptions(w, r)
		if err != nil {
			writeError(w, r, err)
			return
		}
		res, err := s.deleteObject(rs, v["namespace"], v["name"], opts)
		if err != nil {
			writeError(w, r, statusFor(err, rs.groupResource(), v["name"]))
			return
		}
		// NOTE: kube-apiserver answers a finished deletion with the deleted
		// object for pods (ReturnDeletedObject) and a Success Status for
		// jobs; a pending one (grace period, finalizers) with the object.
		if res.deleted && rs != podResource {
			writeStatus(w, r, &metav1.Status{
				Status: metav1.StatusSuccess,
				Code:   http.StatusOK,
				Details: &metav1.StatusDetails{Name: res.obj.GetName(), Group: rs.gv.group,
					Kind: rs.plural, UID: res.obj.GetUID()},
			})
			return
		}
		code := http.StatusOK
		// NOTE: kube-apiserver answers 202 for a deletion left pending
		// after the client asked for cascading with orphanDependents=false.
		if !res.deleted && opts.OrphanDependents != nil && !*opts.OrphanDependents { //nolint:staticcheck // as kube
			code = http.StatusAccepted
		}
		s.respond(w, r, rs, code, res.obj)
	}
}

// deleteOptions reads DeleteOptions from the body (JSON, YAML or
// protobuf), else from the query, and validates them.
// NOTE: as kube-apiserver: an undecodable body or query is 400; options
// that validation refuses (an unknown propagationPolicy, orphanDependents
// with propagationPolicy, dryRun other than All) are 422.
func deleteOptions(w http.ResponseWriter, r *http.Request) (metav1.DeleteOptions, error) {
	opts, err := decodeDeleteOptions(w, r)
	if err != nil {
		return opts, err
	}
	if errs := metav1validation.ValidateDeleteOptions(&opts); len(errs) > 0 {
		return opts, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "DeleteOptions"}, "", errs)
	}
	return opts, nil
}

func decodeDeleteOptions(w http.ResponseWriter, r *http.Request) (metav1.DeleteOptions, error) {
	var opts metav1.DeleteOptions
	if mediaType(r) == mediaProtobuf {
		data, err := readBody(r)
		if err == nil && len(data) > 0 {
			_, err = decodeProtobuf(data, &opts, "error decoding DeleteOptions: ")
		}
		return opts, err
	}
	data, strict, err := bodyJSON(r)
	if err != nil {
		return opts, err
	}
	if len(data) > 0 {
		err = decodeJSON(w, data, &opts, validationIgnore, strict, "error decoding DeleteOptions: ")
		return opts, err
	}
	if err := metainternalversionscheme.ParameterCodec.DecodeParameters(r.URL.Query(), metav1.SchemeGroupVersion, &opts); err != nil {
		return opts, apierrors.NewBadRequest(err.Error())
	}
	return opts, nil
}

// propagation is the effective propagation policy of a deletion.
func propagation(rs *resource, opts metav1.DeleteOptions) metav1.DeletionPropagation {
	switch {
	case opts.PropagationPolicy != nil:
		return *opts.PropagationPolicy
	case opts.OrphanDependents != nil && *opts.OrphanDependents:
		return metav1.DeletePropagationOrphan
	case opts.OrphanDependents != nil:
		return metav1.DeletePropagationBackground
	}
	return rs.defaultPropagation
}

// deleteObject deletes an object in one transaction.
func (s *server) deleteObject(rs *resource, ns, name string, opts metav1.DeleteOptions) (deleteResult, error) {
	var res deleteResult
	err := s.store.Write(func(tx *db.Tx) error {
		obj, err := tx.Get(rs.store, ns, name)
		if err != nil {
			return err
		}
		res, err = deleteInTx(tx, rs, obj, opts)
		return err
	})
	return res, err
}

// deleteInTx deletes obj (as stored) in tx: preconditions, dry run,
// propagation and graceful deletion.
func deleteInTx(tx *db.Tx, rs *resource, obj db.Object, opts metav1.DeleteOptions) (deleteResult, error) {
	if err := checkPreconditions(rs, obj, opts.Preconditions); err != nil {
		return deleteResult{}, err
	}
	if len(opts.DryRun) > 0 {
		return deleteResult{obj: obj}, nil
	}
	switch propagation(rs, opts) {
	case metav1.DeletePropagationForeground:
		return deleteForeground(tx, rs, obj)
	case metav1.DeletePropagationOrphan:
		if err := orphanDependents(tx, obj); err != nil {
			return deleteResult{}, err
		}
	}
	grace := rs.deleteGrace(obj, opts.GracePeriodSeconds)
	deleted, gone, err := tx.DeleteGracefully(rs.store, obj.GetNamespace(), obj.GetName(), grace)
	return deleteResult{obj: deleted, deleted: gone}, err
}

// checkPreconditions enforces DeleteOptions.preconditions (409 on mismatch).
func checkPreconditions(rs *resource, obj db.Object, p *metav1.Preconditions) error {
	if p == nil {
		return nil
	}
	if p.UID != nil && *p.UID != obj.GetUID() {
		return apierrors.NewConflict(rs.groupResource(), obj.GetName(), fmt.Errorf(
			"Precondition failed: UID in precondition: %v, UID in object meta: %v", *p.UID, obj.GetUID()))
	}
	if p.ResourceVersion != nil && *p.ResourceVersion != obj.GetResourceVersion() {
		return apierrors.NewConflict(rs.groupResource(), obj.GetName(), fmt.Errorf(
			"Precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v",
			*p.ResourceVersion, obj.GetResourceVersion()))
	}
	return nil
}

// deleteForeground marks obj for foreground deletion: deletionTimestamp and
// the foregroundDeletion finalizer; the garbage collector deletes the
// dependents, then removes the finalizer (and so the object).
func deleteForeground(tx *db.Tx, rs *resource, obj db.Object) (deleteResult, error) {
	if !slices.Contains(obj.GetFinalizers(), metav1.FinalizerDeleteDependents) {
		obj.SetFinalizers(append(obj.GetFinalizers(), metav1.FinalizerDeleteDependents))
	}
	if obj.GetDeletionTimestamp() == nil {
		now := metav1.Now()
		obj.SetDeletionTimestamp(&now)
		obj.SetDeletionGracePeriodSeconds(ptrTo(int64(0)))
	}
	if err := tx.Update(rs.store, obj); err != nil {
		return deleteResult{}, err
	}
	return deleteResult{obj: obj}, nil
}

// orphanDependents removes obj's ownerReference from the objects it owns
// (a Job's pods, a CronJob's Jobs), in the deleting transaction (kube does
// it later through the orphan finalizer; one transaction makes it atomic).
func orphanDependents(tx *db.Tx, owner db.Object) error {
	for _, r := range []db.Resource{db.Pods, db.Jobs} {
		deps, err := tx.List(r, owner.GetNamespace(), nil)
		if err != nil {
			return err
		}
		for _, dep := range deps {
			refs := dep.GetOwnerReferences()
			kept := slices.DeleteFunc(slices.Clone(refs), func(ref metav1.OwnerReference) bool {
				return ref.UID == owner.GetUID()
			})
			if len(kept) == len(refs) {
				continue
			}
			dep.SetOwnerReferences(kept)
			if err := tx.Update(r, dep); err != nil {
				return fmt.Errorf("orphaning %s %s: %w", r.Name, dep.GetName(), err)
			}
		}
	}
	return nil
}
