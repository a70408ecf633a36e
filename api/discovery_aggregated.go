package api

import (
	"mime"
	"net/http"
	"strings"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Aggregated discovery: /api and /apis answer, to a client that asks for
// it, every group version with its resources in one document, which saves
// kubectl a request per group version.

// mediaAggregatedDiscovery is the media type of aggregated discovery v2.
const mediaAggregatedDiscovery = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

// wantsAggregatedDiscovery reports whether the Accept header asks for
// aggregated discovery v2 before any plain JSON.
func wantsAggregatedDiscovery(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil || (mt != mediaJSON && mt != "*/*" && mt != "application/*") {
			continue
		}
		if params["as"] == "" {
			return false
		}
		if params["g"] == "apidiscovery.k8s.io" && params["v"] == "v2" && params["as"] == "APIGroupDiscoveryList" {
			return true
		}
	}
	return false
}

// aggregatedDiscovery answers the aggregated discovery of the core group
// (/api) or of the named groups (/apis) if the client asks for it, and
// reports whether it did.
func (s *server) aggregatedDiscovery(w http.ResponseWriter, r *http.Request, core bool) bool {
	if !wantsAggregatedDiscovery(r) {
		return false
	}
	list := &apidiscoveryv2.APIGroupDiscoveryList{
		TypeMeta: metav1.TypeMeta{APIVersion: "apidiscovery.k8s.io/v2", Kind: "APIGroupDiscoveryList"},
		Items:    []apidiscoveryv2.APIGroupDiscovery{},
	}
	for _, gv := range groupVersions {
		if (gv.group == "") != core {
			continue
		}
		i := len(list.Items) - 1
		if i < 0 || list.Items[i].Name != gv.group {
			list.Items = append(list.Items, apidiscoveryv2.APIGroupDiscovery{ObjectMeta: metav1.ObjectMeta{Name: gv.group}})
			i++
		}
		list.Items[i].Versions = append(list.Items[i].Versions, versionDiscovery(gv))
	}
	if !core {
		list.Items = append(list.Items, apidiscoveryv2.APIGroupDiscovery{ObjectMeta: metav1.ObjectMeta{Name: metricsV1beta1.group},
			Versions: []apidiscoveryv2.APIVersionDiscovery{versionDiscovery(metricsV1beta1)}})
	}
	w.Header().Set("Vary", "Accept")
	writeJSONAs(w, r, http.StatusOK, mediaAggregatedDiscovery, list)
	return true
}

// versionDiscovery is the aggregated form of gv's resource list: each
// resource with its subresources.
func versionDiscovery(gv groupVersion) apidiscoveryv2.APIVersionDiscovery {
	v := apidiscoveryv2.APIVersionDiscovery{Version: gv.version, Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent}
	index := map[string]int{}
	for _, res := range apiResourceList(gv).APIResources {
		kind := &metav1.GroupVersionKind{Group: gv.group, Version: gv.version, Kind: res.Kind}
		if res.Version != "" { // a subresource of another group's kind (pods/eviction)
			kind.Group, kind.Version = res.Group, res.Version
		}
		name, sub, isSub := strings.Cut(res.Name, "/")
		if i, ok := index[name]; ok && isSub {
			v.Resources[i].Subresources = append(v.Resources[i].Subresources,
				apidiscoveryv2.APISubresourceDiscovery{Subresource: sub, ResponseKind: kind, Verbs: res.Verbs})
			continue
		}
		scope := apidiscoveryv2.ScopeCluster
		if res.Namespaced {
			scope = apidiscoveryv2.ScopeNamespace
		}
		index[name] = len(v.Resources)
		v.Resources = append(v.Resources, apidiscoveryv2.APIResourceDiscovery{
			Resource: name, ResponseKind: kind, Scope: scope, SingularResource: res.SingularName,
			Verbs: res.Verbs, ShortNames: res.ShortNames, Categories: res.Categories,
		})
	}
	return v
}
