package api

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/sirupsen/logrus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// BackupPath is skiff's endpoint for an online backup of the store: GET it
// over the root-only socket and keep the body, a bbolt file that replaces
// skiff.db to restore. Only the admin may read it: it holds every object.
const BackupPath = "/skiff/v1/backup"

// BackupResourceVersionHeader carries the resourceVersion the backup holds.
const BackupResourceVersionHeader = "X-Skiff-Resource-Version"

var backupResource = schema.GroupResource{Group: "skiff", Resource: "backup"}

// backup serves BackupPath: the store copied in one read transaction, its
// size in Content-Length so that a client can tell a cut copy.
func (s *server) backup(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		writeError(w, r, methodNotSupported(backupResource, r.Method))
		return
	}
	if user := requestUser(r); !isAdmin(user) {
		writeError(w, r, apierrors.NewForbidden(schema.GroupResource{}, "",
			fmt.Errorf("User %q cannot get path %q", user.Username, r.URL.Path)))
		return
	}
	started := false
	err := s.store.Backup(r.Context(), w, func(size int64, rv uint64) {
		started = true
		h := w.Header()
		h.Set("Content-Type", "application/octet-stream")
		h.Set("Content-Length", strconv.FormatInt(size, 10))
		h.Set("Content-Disposition", fmt.Sprintf(`attachment; filename="skiff-%d.db"`, rv))
		h.Set(BackupResourceVersionHeader, strconv.FormatUint(rv, 10))
		w.WriteHeader(http.StatusOK)
	})
	switch {
	case err == nil:
	case !started:
		writeError(w, r, statusFor(err, backupResource, ""))
	default:
		// NOTE: the answer is under way: cut the connection so that the
		// client sees fewer bytes than Content-Length, never a whole-looking
		// copy.
		logrus.WithError(err).Warn("backup cut short")
		panic(http.ErrAbortHandler)
	}
}
