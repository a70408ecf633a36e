package api

import (
	"net"
	"reflect"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/kube"
)

// endpointsDeprecation is kube-apiserver's warning on every request for
// core/v1 Endpoints since 1.33.
const endpointsDeprecation = "v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice"

// endpointsResource is core/v1 endpoints: written by the endpoints
// controller for Services with a selector, by clients for the others.
var endpointsResource = &resource{
	gv:             coreV1,
	kind:           "Endpoints",
	plural:         "endpoints",
	singular:       "endpoints",
	shortNames:     []string{"ep"},
	store:          db.Endpoints,
	goType:         reflect.TypeOf(corev1.Endpoints{}),
	listType:       reflect.TypeOf(corev1.EndpointsList{}),
	newList:        newEndpointsList,
	fields:         objectFields,
	columns:        endpointsColumns,
	cells:          func(obj db.Object, now time.Time) []any { return endpointsCells(obj.(*corev1.Endpoints), now) },
	prepareCreate:  func(_ *server, obj db.Object) { kube.DefaultEndpoints(obj.(*corev1.Endpoints)) },
	validateCreate: func(obj db.Object) field.ErrorList { return kube.ValidateEndpoints(obj.(*corev1.Endpoints), nil) },
	prepareUpdate:  func(n, _ db.Object, _ bool) { kube.DefaultEndpoints(n.(*corev1.Endpoints)) },
	validateUpdate: func(n, o db.Object) field.ErrorList {
		return kube.ValidateEndpoints(n.(*corev1.Endpoints), o.(*corev1.Endpoints))
	},
	spec:               func(db.Object) any { return nil },
	defaultPropagation: metav1.DeletePropagationBackground,
	deleteGrace:        func(db.Object, *int64) int64 { return 0 },
	noStatus:           true,
	warning:            endpointsDeprecation,
}

func newEndpointsList(items []db.Object, meta metav1.ListMeta) runtime.Object {
	return &corev1.EndpointsList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "EndpointsList"}, ListMeta: meta,
		Items: listItems[corev1.Endpoints](items)}
}

var endpointsColumns = []metav1.TableColumnDefinition{
	nameColumn,
	{Name: "Endpoints", Type: "string", Description: corev1.Endpoints{}.SwaggerDoc()["subsets"]},
	ageColumn,
}

func endpointsCells(ep *corev1.Endpoints, now time.Time) []any {
	return []any{ep.Name, formatEndpoints(ep), age(ep.CreationTimestamp, now)}
}

// formatEndpoints is the ENDPOINTS cell as kube's printer makes it: the
// first three ready ip:port pairs (bare IPs for a portless subset), then
// "+ N more...".
func formatEndpoints(ep *corev1.Endpoints) string {
	if len(ep.Subsets) == 0 {
		return "<none>"
	}
	const max = 3
	var list []string
	count := 0
	for _, ss := range ep.Subsets {
		if len(ss.Ports) == 0 {
			count += len(ss.Addresses)
			for _, a := range ss.Addresses {
				if len(list) < max {
					list = append(list, a.IP)
				}
			}
			continue
		}
		for _, port := range ss.Ports {
			count += len(ss.Addresses)
			for _, a := range ss.Addresses {
				if len(list) < max {
					list = append(list, net.JoinHostPort(a.IP, strconv.Itoa(int(port.Port))))
				}
			}
		}
	}
	out := strings.Join(list, ",")
	if count > max {
		out += " + " + strconv.Itoa(count-max) + " more..."
	}
	return out
}
