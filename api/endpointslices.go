package api

import (
	"reflect"
	"strconv"
	"strings"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/kube"
)

// discoveryV1 is the discovery.k8s.io/v1 group version.
var discoveryV1 = groupVersion{group: "discovery.k8s.io", version: "v1"}

// endpointSliceResource is discovery.k8s.io/v1 endpointslices: written by
// the endpoints controller for Services with a selector (what kube-proxy,
// cluster DNS and `kubectl describe service` read), by clients for others.
var endpointSliceResource = &resource{
	gv:       discoveryV1,
	kind:     "EndpointSlice",
	plural:   "endpointslices",
	singular: "endpointslice",
	store:    db.EndpointSlices,
	goType:   reflect.TypeOf(discoveryv1.EndpointSlice{}),
	listType: reflect.TypeOf(discoveryv1.EndpointSliceList{}),
	newList:  newEndpointSliceList,
	fields:   objectFields,
	columns:  endpointSliceColumns,
	cells: func(obj db.Object, now time.Time) []any {
		return endpointSliceCells(obj.(*discoveryv1.EndpointSlice), now)
	},
	prepareCreate: func(_ *server, obj db.Object) { kube.DefaultEndpointSlice(obj.(*discoveryv1.EndpointSlice)) },
	validateCreate: func(obj db.Object) field.ErrorList {
		return kube.ValidateEndpointSlice(obj.(*discoveryv1.EndpointSlice), nil)
	},
	prepareUpdate: func(n, _ db.Object, _ bool) { kube.DefaultEndpointSlice(n.(*discoveryv1.EndpointSlice)) },
	validateUpdate: func(n, o db.Object) field.ErrorList {
		return kube.ValidateEndpointSlice(n.(*discoveryv1.EndpointSlice), o.(*discoveryv1.EndpointSlice))
	},
	// NOTE: kube's EndpointSlice strategy bumps the generation on any
	// change beyond the metadata.
	spec: func(obj db.Object) any {
		s := obj.(*discoveryv1.EndpointSlice)
		return []any{s.AddressType, s.Endpoints, s.Ports}
	},
	defaultPropagation: metav1.DeletePropagationBackground,
	deleteGrace:        func(db.Object, *int64) int64 { return 0 },
	noStatus:           true,
}

func newEndpointSliceList(items []db.Object, meta metav1.ListMeta) runtime.Object {
	return &discoveryv1.EndpointSliceList{TypeMeta: metav1.TypeMeta{APIVersion: discoveryV1.String(), Kind: "EndpointSliceList"},
		ListMeta: meta, Items: listItems[discoveryv1.EndpointSlice](items)}
}

var endpointSliceColumns = []metav1.TableColumnDefinition{
	nameColumn,
	{Name: "AddressType", Type: "string", Description: discoveryv1.EndpointSlice{}.SwaggerDoc()["addressType"]},
	{Name: "Ports", Type: "string", Description: discoveryv1.EndpointSlice{}.SwaggerDoc()["ports"]},
	{Name: "Endpoints", Type: "string", Description: discoveryv1.EndpointSlice{}.SwaggerDoc()["endpoints"]},
	ageColumn,
}

// endpointSliceCells is one slice's row, as kube's printer makes it.
func endpointSliceCells(s *discoveryv1.EndpointSlice, now time.Time) []any {
	var ports, addrs []string
	for _, p := range s.Ports {
		switch {
		case p.Port != nil:
			ports = append(ports, strconv.Itoa(int(*p.Port)))
		case p.Name != nil:
			ports = append(ports, *p.Name)
		default:
			ports = append(ports, "*")
		}
	}
	for _, ep := range s.Endpoints {
		addrs = append(addrs, ep.Addresses...)
	}
	return []any{s.Name, string(s.AddressType), listWithMore(ports), listWithMore(addrs), age(s.CreationTimestamp, now)}
}

// listWithMore is kube's printer's list cell: the first three, then
// "+ N more...", "<unset>" for none.
func listWithMore(list []string) string {
	const max = 3
	switch {
	case len(list) == 0:
		return "<unset>"
	case len(list) > max:
		return strings.Join(list[:max], ",") + " + " + strconv.Itoa(len(list)-max) + " more..."
	}
	return strings.Join(list, ",")
}
