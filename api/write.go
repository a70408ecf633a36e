package api

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/gorilla/mux"
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/kube"
)

// generateNameAttempts bounds the retries of a generated name that is taken.
const generateNameAttempts = 5

// isDryRun reads ?dryRun= (only "All" is defined).
func isDryRun(r *http.Request) (bool, error) {
	switch v := r.URL.Query()["dryRun"]; {
	case len(v) == 0:
		return false, nil
	case len(v) == 1 && v[0] == metav1.DryRunAll:
		return true, nil
	default:
		return false, apierrors.NewBadRequest(fmt.Sprintf("Invalid dry run value: %v; the only valid value is %q", v, metav1.DryRunAll))
	}
}

// decodeBody decodes the request body as an object of rs, checking its
// apiVersion and kind against the endpoint and applying ?fieldValidation.
func decodeBody(w http.ResponseWriter, r *http.Request, rs *resource) (db.Object, error) {
	directive, err := validationDirective(r)
	if err != nil {
		return nil, err
	}
	return decodeObjectBody(w, r, rs, directive)
}

// decodeObjectBody decodes the request body (JSON, YAML or protobuf) as an
// object of rs, checking its apiVersion and kind against the endpoint;
// unknown and duplicate fields are treated as directive says.
func decodeObjectBody(w http.ResponseWriter, r *http.Request, rs *resource, directive fieldValidation) (db.Object, error) {
	obj := rs.store.New()
	if mediaType(r) == mediaProtobuf {
		data, err := readBody(r)
		if err != nil {
			return nil, err
		}
		gvk, err := decodeProtobuf(data, obj, decodePrefix(rs))
		if err != nil {
			return nil, err
		}
		obj.GetObjectKind().SetGroupVersionKind(gvk)
	} else {
		data, strict, err := bodyJSON(r)
		if err != nil {
			return nil, err
		}
		if err := decodeJSON(w, data, obj, directive, strict, decodePrefix(rs)); err != nil {
			return nil, err
		}
	}
	if err := checkTypeMeta(rs, obj); err != nil {
		return nil, err
	}
	return obj, nil
}

// checkTypeMeta: a body's apiVersion and kind, when present, must be the
// endpoint's.
func checkTypeMeta(rs *resource, obj db.Object) error {
	gvk := obj.GetObjectKind().GroupVersionKind()
	want := rs.gvk()
	if gvk.Version != "" && gvk.GroupVersion() != want.GroupVersion() {
		return apierrors.NewBadRequest(fmt.Sprintf("the API version in the data (%s) does not match the expected API version (%s)",
			gvk.GroupVersion(), want.GroupVersion()))
	}
	if gvk.Kind != "" && gvk.Kind != want.Kind {
		return apierrors.NewBadRequest(fmt.Sprintf("the kind in the data (%s) does not match the expected kind (%s)", gvk.Kind, want.Kind))
	}
	return nil
}

// checkNamespace puts the URL's namespace on obj, or refuses a different
// one. A cluster-scoped object (no namespace in the URL) has none.
func checkNamespace(obj db.Object, ns string) error {
	if ns == "" {
		// NOTE: kube-apiserver clears the namespace of cluster-scoped objects.
		obj.SetNamespace("")
		return nil
	}
	switch obj.GetNamespace() {
	case "":
		obj.SetNamespace(ns)
	case ns:
	default:
		return apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	return nil
}

// create serves POST on a collection.
func (s *server) create(rs *resource) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		opts, err := parseWriteOptions(r, createOptionsKind, "")
		var obj db.Object
		if err == nil {
			obj, err = decodeObjectBody(w, r, rs, opts.validation)
		}
		if err == nil {
			err = checkNamespace(obj, mux.Vars(r)["namespace"])
		}
		if err != nil {
			writeError(w, r, err)
			return
		}
		created, err := s.createObject(rs, obj, opts)
		if err != nil {
			writeError(w, r, statusFor(err, rs.groupResource(), obj.GetName()))
			return
		}
		s.respond(w, r, rs, http.StatusCreated, created)
	}
}

// createObject defaults, validates and stores a new object, choosing its
// name from generateName (retrying a taken one) and its UID first, since
// defaulting may use both. The creator (opts.manager) owns the fields of
// the new object in its managedFields, unless an apply already set them.
func (s *server) createObject(rs *resource, in db.Object, opts writeOptions) (db.Object, error) {
	clearSystemMeta(in)
	lookups := 0
	for attempt := 1; ; attempt++ {
		obj := in.DeepCopyObject().(db.Object)
		generated := obj.GetName() == "" && obj.GetGenerateName() != ""
		if generated {
			obj.SetName(db.GeneratedName(obj.GetGenerateName()))
		}
		obj.SetUID(uuid.NewUUID())
		rs.prepareCreate(s, obj)
		if !opts.applied {
			trackUpdate(rs, false, rs.store.New(), obj, opts.manager)
		}
		errs := validateObjectMeta(rs, obj)
		errs = append(errs, rs.validateCreate(obj)...)
		if len(errs) > 0 {
			return nil, apierrors.NewInvalid(rs.groupKind(), obj.GetName(), errs)
		}
		if opts.dryRun {
			if err := s.store.Read(func(tx *db.Tx) error { return s.admitCreate(tx, rs, obj, opts.user) }); err != nil {
				return nil, err
			}
			obj.SetCreationTimestamp(metav1.Now())
			if !rs.store.NoGeneration {
				obj.SetGeneration(1)
			}
			return obj, nil
		}
		err := s.store.Write(func(tx *db.Tx) error {
			if err := s.admitCreate(tx, rs, obj, opts.user); err != nil {
				return err
			}
			return tx.Create(rs.store, obj)
		})
		if generated && errors.Is(err, db.ErrAlreadyExists) && attempt < generateNameAttempts {
			continue
		}
		if kube.IsMissingDefaultServiceAccount(err) && lookups < defaultServiceAccountLookups {
			// NOTE: kube-apiserver's ServiceAccount admission looks the
			// default account up again for a while: in a namespace just
			// created, the service account controller is about to make it.
			lookups++
			time.Sleep(time.Duration(100+rand.IntN(100)) * time.Millisecond)
			continue
		}
		if err != nil {
			return nil, statusFor(err, rs.groupResource(), obj.GetName())
		}
		return obj, nil
	}
}

// admitCreate checks, in the transaction that stores it, that obj may be
// created where it is and by user, and gives it what it takes from shared
// pools.
func (s *server) admitCreate(tx *db.Tx, rs *resource, obj db.Object, user authenticationv1.UserInfo) error {
	if err := s.admitNamespace(tx, rs, obj.GetNamespace(), obj.GetName()); err != nil {
		return err
	}
	if rs.admitWrite != nil {
		if err := rs.admitWrite(s, tx, user, obj, nil); err != nil {
			return err
		}
	}
	if rs.allocate != nil {
		return rs.allocate(s, tx, obj)
	}
	return nil
}

// defaultServiceAccountLookups is how many times a pod's creation looks
// for its namespace's default ServiceAccount again before it is refused
// (kube-apiserver's ServiceAccount admission: 10, 100–200 ms apart).
const defaultServiceAccountLookups = 10

// clearSystemMeta drops the metadata a client may not set on create.
func clearSystemMeta(obj db.Object) {
	obj.SetResourceVersion("")
	obj.SetUID("")
	obj.SetCreationTimestamp(metav1.Time{})
	obj.SetDeletionTimestamp(nil)
	obj.SetDeletionGracePeriodSeconds(nil)
	obj.SetGeneration(0)
	obj.SetSelfLink("")
}

// validateObjectMeta validates a new object's metadata.
func validateObjectMeta(rs *resource, obj db.Object) field.ErrorList {
	validateName := rs.validateName
	if validateName == nil {
		validateName = apivalidation.NameIsDNSSubdomain
	}
	return kube.ValidateObjectMeta(obj, rs.store.Namespaced, validateName)
}

// update serves PUT of an object or of its status.
func (s *server) update(rs *resource, status bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v := mux.Vars(r)
		opts, err := parseWriteOptions(r, updateOptionsKind, "")
		var obj db.Object
		if err == nil {
			obj, err = decodeObjectBody(w, r, rs, opts.validation)
		}
		if err == nil {
			err = checkNamespace(obj, v["namespace"])
		}
		if err == nil && obj.GetName() != v["name"] {
			err = apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", obj.GetName(), v["name"]))
		}
		if err != nil {
			writeError(w, r, err)
			return
		}
		out, err := s.updateObject(rs, v["namespace"], v["name"], status, opts, func(db.Object) (db.Object, error) {
			return obj, nil
		})
		if err != nil {
			writeError(w, r, statusFor(err, rs.groupResource(), v["name"]))
			return
		}
		s.respond(w, r, rs, http.StatusOK, out)
	}
}

// updateObject replaces the stored object with what change makes of it, in
// one transaction: kube's update rules (status only through /status, which
// keeps the rest; generation bumped on a spec change; metadata the client
// may not change kept), managedFields and validation apply.
func (s *server) updateObject(rs *resource, ns, name string, status bool, opts writeOptions,
	change func(old db.Object) (db.Object, error)) (db.Object, error) {
	var out db.Object
	err := s.store.Write(func(tx *db.Tx) error {
		old, err := tx.Get(rs.store, ns, name)
		if err != nil {
			return err
		}
		obj, err := change(old.DeepCopyObject().(db.Object))
		if err != nil {
			return err
		}
		if err := checkObjectName(obj, ns, name); err != nil {
			return err
		}
		switch rv := obj.GetResourceVersion(); rv {
		case old.GetResourceVersion():
		case "":
			// NOTE: jobs and pods allow unconditional updates
			// (AllowUnconditionalUpdate): no resourceVersion means the stored one.
			obj.SetResourceVersion(old.GetResourceVersion())
		default:
			return db.ErrConflict
		}
		if uid := obj.GetUID(); uid != "" && uid != old.GetUID() {
			return apierrors.NewConflict(rs.groupResource(), name, fmt.Errorf(
				"Precondition failed: UID in precondition: %v, UID in object meta: %v", uid, old.GetUID()))
		}
		rs.prepareUpdate(obj, old, status)
		keepSystemMeta(obj, old)
		if !opts.applied {
			trackUpdate(rs, status, old, obj, opts.manager)
		}
		if !equality.Semantic.DeepEqual(rs.spec(obj), rs.spec(old)) {
			obj.SetGeneration(old.GetGeneration() + 1)
		}
		errs := apivalidation.ValidateObjectMetaAccessorUpdate(obj, old, field.NewPath("metadata"))
		errs = append(errs, validateObjectMeta(rs, obj)...)
		switch {
		case !status:
			errs = append(errs, rs.validateUpdate(obj, old)...)
		case rs.validateStatusUpdate != nil:
			errs = append(errs, rs.validateStatusUpdate(obj, old)...)
		}
		if len(errs) > 0 {
			return apierrors.NewInvalid(rs.groupKind(), name, errs)
		}
		if rs.admitWrite != nil && !status {
			if err := rs.admitWrite(s, tx, opts.user, obj, old); err != nil {
				return err
			}
		}
		out = obj
		if opts.dryRun {
			return nil
		}
		return tx.Update(rs.store, obj)
	})
	return out, err
}

// keepSystemMeta keeps the metadata only the server sets.
func keepSystemMeta(obj, old db.Object) {
	obj.SetUID(old.GetUID())
	obj.SetCreationTimestamp(old.GetCreationTimestamp())
	obj.SetDeletionTimestamp(old.GetDeletionTimestamp())
	obj.SetDeletionGracePeriodSeconds(old.GetDeletionGracePeriodSeconds())
	obj.SetGeneration(old.GetGeneration())
	obj.SetSelfLink("")
}

// checkObjectName: what a patch made of an object must keep its name and
// namespace (an empty namespace takes the URL's).
// NOTE: kube-apiserver's patcher checks the same, with these messages.
func checkObjectName(obj db.Object, ns, name string) error {
	if obj.GetName() != name {
		return apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", obj.GetName(), name))
	}
	switch obj.GetNamespace() {
	case ns:
	case "":
		obj.SetNamespace(ns)
	default:
		return apierrors.NewBadRequest(fmt.Sprintf("the namespace of the object (%s) does not match the namespace on the request (%s)", obj.GetNamespace(), ns))
	}
	return nil
}
