package api

import (
	"net/http"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Legacy (unaggregated) discovery. kubectl asks /api and /apis for
// aggregated discovery first (discovery_aggregated.go) and reads these
// documents when the answer is plain JSON.

// coreVersions serves /api.
func (s *server) coreVersions(w http.ResponseWriter, r *http.Request) {
	if s.aggregatedDiscovery(w, r, true) {
		return
	}
	writeJSON(w, r, http.StatusOK, &metav1.APIVersions{
		TypeMeta: metav1.TypeMeta{Kind: "APIVersions"},
		Versions: []string{coreV1.version},
		ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{
			{ClientCIDR: "0.0.0.0/0", ServerAddress: r.Host},
		},
	})
}

// groupList serves /apis: every named group.
func (s *server) groupList(w http.ResponseWriter, r *http.Request) {
	if s.aggregatedDiscovery(w, r, false) {
		return
	}
	list := &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "APIGroupList"},
		Groups: []metav1.APIGroup{}}
	for _, gv := range groupVersions {
		if gv.group != "" {
			list.Groups = append(list.Groups, apiGroup(gv))
		}
	}
	list.Groups = append(list.Groups, apiGroup(metricsV1beta1))
	writeJSON(w, r, http.StatusOK, list)
}

// group serves /apis/<group>.
func (s *server) group(gv groupVersion) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		g := apiGroup(gv)
		g.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "APIGroup"}
		writeJSON(w, r, http.StatusOK, &g)
	}
}

func apiGroup(gv groupVersion) metav1.APIGroup {
	v := metav1.GroupVersionForDiscovery{GroupVersion: gv.String(), Version: gv.version}
	return metav1.APIGroup{Name: gv.group, Versions: []metav1.GroupVersionForDiscovery{v}, PreferredVersion: v}
}

// resourceList serves /api/v1 and /apis/<group>/<version>.
func (s *server) resourceList(gv groupVersion) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, r, http.StatusOK, apiResourceList(gv))
	}
}

// apiResourceList lists the resources of gv with their subresources, as
// kube-apiserver does.
func apiResourceList(gv groupVersion) *metav1.APIResourceList {
	list := &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "APIResourceList"},
		GroupVersion: gv.String(), APIResources: []metav1.APIResource{}}
	if gv == metricsV1beta1 {
		list.APIResources = metricsAPIResources()
	}
	list.APIResources = append(list.APIResources, reviewAPIResources(gv)...)
	for _, rs := range resources {
		if rs.gv != gv {
			continue
		}
		ns := rs.namespaced()
		list.APIResources = append(list.APIResources, metav1.APIResource{
			Name: rs.plural, SingularName: rs.singular, Namespaced: ns, Kind: rs.kind,
			Verbs: rs.servedVerbs(), ShortNames: rs.shortNames, Categories: rs.categories,
		})
		if !rs.noStatus {
			list.APIResources = append(list.APIResources, metav1.APIResource{Name: rs.plural + "/status",
				Namespaced: ns, Kind: rs.kind, Verbs: metav1.Verbs{"get", "patch", "update"}})
		}
		if rs.hasLog {
			list.APIResources = append(list.APIResources, metav1.APIResource{Name: rs.plural + "/log",
				Namespaced: ns, Kind: rs.kind, Verbs: metav1.Verbs{"get"}})
		}
		if rs == podResource {
			subs := append(podSubresources(), evictionSubresource())
			slices.SortFunc(subs, func(a, b metav1.APIResource) int { return strings.Compare(a.Name, b.Name) })
			list.APIResources = append(list.APIResources, subs...)
		}
		if rs == serviceAccountResource {
			list.APIResources = append(list.APIResources, tokenSubresource())
		}
		if rs == nodeResource {
			list.APIResources = append(list.APIResources, nodeProxySubresource())
		}
	}
	return list
}
