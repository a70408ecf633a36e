package api

import (
	"net/http"
	"strconv"

	"github.com/gorilla/mux"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Workload kinds a skiff node never holds: core/v1 ReplicationControllers
// and apps/v1 DaemonSets, Deployments and ReplicaSets (it runs Jobs,
// CronJobs and bare pods). kube-apiserver always serves them, and some
// clients read them whatever they were asked for: kubectl cluster-info
// dump lists all four in every namespace it dumps, and stops at the first
// 404. skiffd answers a list of any of them as a cluster that holds none
// would: an empty list at the store's resourceVersion.
//
// NOTE: nothing else of these kinds is served (a get, watch or write is
// the 404 of an unknown path) and discovery does not list them: kubectl
// still refuses a manifest holding one as a kind this server does not have
// ("resource mapping not found"), rather than failing at the write.

// absentKind is one such kind's list path and List kind.
type absentKind struct {
	prefix, plural, listKind string
}

var absentKinds = []absentKind{
	{coreV1.prefix(), "replicationcontrollers", "ReplicationControllerList"},
	{"/apis/apps/v1", "daemonsets", "DaemonSetList"},
	{"/apis/apps/v1", "deployments", "DeploymentList"},
	{"/apis/apps/v1", "replicasets", "ReplicaSetList"},
}

// emptyList is the list of a kind without items.
type emptyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`
	Items           []struct{} `json:"items"`
}

// absentKindRoutes registers the lists, across namespaces and in one.
func (s *server) absentKindRoutes(r *mux.Router) {
	for _, k := range absentKinds {
		h := s.listAbsentKind(k)
		r.HandleFunc(k.prefix+"/"+k.plural, h)
		r.HandleFunc(k.prefix+"/namespaces/{namespace}/"+k.plural, h)
	}
}

func (s *server) listAbsentKind(k absentKind) http.HandlerFunc {
	apiVersion := "v1"
	if k.prefix != coreV1.prefix() {
		apiVersion = k.prefix[len("/apis/"):]
	}
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || queryBool(r.URL.Query(), "watch") {
			notFound(w, r)
			return
		}
		writeJSON(w, r, http.StatusOK, &emptyList{
			TypeMeta: metav1.TypeMeta{APIVersion: apiVersion, Kind: k.listKind},
			ListMeta: metav1.ListMeta{ResourceVersion: strconv.FormatUint(s.store.ResourceVersion(), 10)},
			Items:    []struct{}{},
		})
	}
}
