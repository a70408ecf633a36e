package api

import (
	"net/http"
	"strconv"

	"github.com/gorilla/mux"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/db"
)

// deleteCollection serves DELETE on a collection (the deletecollection
// verb): every object the label and field selectors select is deleted as
// a DELETE of it would be (DeleteOptions from the body or the query), in
// one transaction. The answer is the list of the selected objects.
// NOTE: kube-apiserver answers with the List of the objects it listed for
// deletion; it deletes them one by one, so a failure may leave some
// deleted, where skiff deletes all or none.
func (s *server) deleteCollection(rs *resource) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ns := mux.Vars(r)["namespace"]
		listOpts, err := parseListOptions(r, rs, false, "")
		if err != nil {
			writeError(w, r, err)
			return
		}
		opts, err := deleteOptions(w, r)
		if err != nil {
			writeError(w, r, err)
			return
		}
		var (
			selected []db.Object
			meta     metav1.ListMeta
		)
		err = s.store.Write(func(tx *db.Tx) error {
			meta.ResourceVersion = strconv.FormatUint(tx.ResourceVersion(), 10)
			items, err := tx.List(rs.store, ns, listOpts.LabelSelector)
			if err != nil {
				return err
			}
			selected = filterFields(rs, items, listOpts.FieldSelector)
			for _, obj := range selected {
				if _, err := deleteInTx(tx, rs, obj.DeepCopyObject().(db.Object), opts); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			writeError(w, r, statusFor(err, rs.groupResource(), ""))
			return
		}
		s.respondList(w, r, rs, selected, meta)
	}
}
