package api

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"github.com/gorilla/mux"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
		s.respond(w, r, rs, http.StatusOK, res.obj)
	}
}

// deleteOptions reads DeleteOptions from the body (JSON or YAML), else from
// the query.
func deleteOptions(w http.ResponseWriter, r *http.Request) (metav1.DeleteOptions, error) {
	var opts metav1.DeleteOptions
	if mediaType(r) == mediaProtobuf {
		data, err := readBody(r)
		if err == nil && len(data) > 0 {
			_, err = decodeProtobuf(data, &opts, "error decoding DeleteOptions: ")
		}
		if err != nil {
			return opts, err
		}
		return checkDeleteOptions(opts)
	}
	data, strict, err := bodyJSON(r)
	if err != nil {
		return opts, err
	}
	if len(data) > 0 {
		if err := decodeJSON(w, data, &opts, validationIgnore, strict, "error decoding DeleteOptions: "); err != nil {
			return opts, err
		}
	} else if err := queryDeleteOptions(r, &opts); err != nil {
		return opts, err
	}
	return checkDeleteOptions(opts)
}

// checkDeleteOptions refuses unknown dry-run and propagation values.
func checkDeleteOptions(opts metav1.DeleteOptions) (metav1.DeleteOptions, error) {
	if len(opts.DryRun) > 0 && (len(opts.DryRun) > 1 || opts.DryRun[0] != metav1.DryRunAll) {
		return opts, apierrors.NewBadRequest(fmt.Sprintf("Invalid dry run value: %v", opts.DryRun))
	}
	switch p := opts.PropagationPolicy; {
	case p == nil:
	case *p == metav1.DeletePropagationOrphan, *p == metav1.DeletePropagationBackground, *p == metav1.DeletePropagationForeground:
		if opts.OrphanDependents != nil {
			return opts, apierrors.NewBadRequest("orphanDependents and propagationPolicy cannot both be set")
		}
	default:
		return opts, apierrors.NewBadRequest(fmt.Sprintf("propagationPolicy: Unsupported value: %q", *p))
	}
	return opts, nil
}

// queryDeleteOptions reads the DeleteOptions query parameters.
func queryDeleteOptions(r *http.Request, opts *metav1.DeleteOptions) error {
	q := r.URL.Query()
	if g := q.Get("gracePeriodSeconds"); g != "" {
		n, err := strconv.ParseInt(g, 10, 64)
		if err != nil {
			return apierrors.NewBadRequest(fmt.Sprintf("invalid gracePeriodSeconds %q", g))
		}
		opts.GracePeriodSeconds = &n
	}
	if p := q.Get("propagationPolicy"); p != "" {
		opts.PropagationPolicy = ptrTo(metav1.DeletionPropagation(p))
	}
	if o := q.Get("orphanDependents"); o != "" {
		b, err := boolParam(o, "orphanDependents")
		if err != nil {
			return err
		}
		opts.OrphanDependents = &b
	}
	opts.DryRun = q["dryRun"]
	return nil
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
		if err := checkPreconditions(rs, obj, opts.Preconditions); err != nil {
			return err
		}
		if len(opts.DryRun) > 0 {
			res = deleteResult{obj: obj}
			return nil
		}
		switch propagation(rs, opts) {
		case metav1.DeletePropagationForeground:
			res, err = deleteForeground(tx, rs, obj)
			return err
		case metav1.DeletePropagationOrphan:
			if err := orphanDependents(tx, obj); err != nil {
				return err
			}
		}
		grace := rs.deleteGrace(obj, opts.GracePeriodSeconds)
		obj, deleted, err := tx.DeleteGracefully(rs.store, ns, name, grace)
		res = deleteResult{obj: obj, deleted: deleted}
		return err
	})
	return res, err
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

// orphanDependents removes obj's ownerReference from the pods it owns, in
// the deleting transaction (kube does it later through the orphan
// finalizer; one transaction makes it atomic).
func orphanDependents(tx *db.Tx, owner db.Object) error {
	pods, err := tx.List(db.Pods, owner.GetNamespace(), nil)
	if err != nil {
		return err
	}
	for _, pod := range pods {
		refs := pod.GetOwnerReferences()
		kept := slices.DeleteFunc(slices.Clone(refs), func(ref metav1.OwnerReference) bool {
			return ref.UID == owner.GetUID()
		})
		if len(kept) == len(refs) {
			continue
		}
		pod.SetOwnerReferences(kept)
		if err := tx.Update(db.Pods, pod); err != nil {
			return fmt.Errorf("orphaning pod %s: %w", pod.GetName(), err)
		}
	}
	return nil
}
