package api

import (
	"net"
	"reflect"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/skiff-sh/skiff/db"
)

// endpointsDeprecation is kube-apiserver's warning on every request for
// core/v1 Endpoints since 1.33.
const endpointsDeprecation = "v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice"

// endpointsResource is core/v1 endpoints: written by the endpoints
// controller for Services with a selector, by clients for the others.
var endpointsResource = &resource{
	gv:         coreV1,
	kind:       "Endpoints",
	plural:     "endpoints",
	singular:   "endpoints",
	shortNames: []string{"ep"},
	store:      db.Endpoints,
	goType:     reflect.TypeOf(corev1.Endpoints{}),
	listType:   reflect.TypeOf(corev1.EndpointsList{}),
	newList:    newEndpointsList,
	fields:     objectFields,
	columns:    endpointsColumns,
	cells:      func(obj db.Object, now time.Time) []any { return endpointsCells(obj.(*corev1.Endpoints), now) },
	prepareCreate: func(_ *server, obj db.Object) {
		defaultEndpoints(obj.(*corev1.Endpoints))
	},
	validateCreate: func(obj db.Object) field.ErrorList { return validateEndpoints(obj.(*corev1.Endpoints), nil) },
	prepareUpdate:  func(n, _ db.Object, _ bool) { defaultEndpoints(n.(*corev1.Endpoints)) },
	validateUpdate: func(n, o db.Object) field.ErrorList {
		return validateEndpoints(n.(*corev1.Endpoints), o.(*corev1.Endpoints))
	},
	spec:               func(db.Object) any { return nil },
	defaultPropagation: metav1.DeletePropagationBackground,
	deleteGrace:        func(db.Object, *int64) int64 { return 0 },
	noStatus:           true,
	warning:            endpointsDeprecation,
}

func newEndpointsList(items []db.Object, meta metav1.ListMeta) runtime.Object {
	l := &corev1.EndpointsList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "EndpointsList"}, ListMeta: meta,
		Items: make([]corev1.Endpoints, len(items))}
	for i, it := range items {
		l.Items[i] = *it.(*corev1.Endpoints)
	}
	return l
}

// defaultEndpoints is kube's SetDefaults_EndpointPort: TCP ports.
func defaultEndpoints(ep *corev1.Endpoints) {
	for i := range ep.Subsets {
		for j := range ep.Subsets[i].Ports {
			if p := &ep.Subsets[i].Ports[j]; p.Protocol == "" {
				p.Protocol = corev1.ProtocolTCP
			}
		}
	}
}

// validateEndpoints is kube's ValidateEndpoints (the metadata aside): each
// subset has addresses, valid IPs and ports. Subsets an update leaves as
// they were are not judged again.
func validateEndpoints(ep, old *corev1.Endpoints) field.ErrorList {
	if old != nil && equality.Semantic.DeepEqual(ep.Subsets, old.Subsets) {
		return nil
	}
	var errs field.ErrorList
	for i := range ep.Subsets {
		ss := &ep.Subsets[i]
		p := field.NewPath("subsets").Index(i)
		if len(ss.Addresses) == 0 && len(ss.NotReadyAddresses) == 0 {
			errs = append(errs, field.Required(p, "must specify `addresses` or `notReadyAddresses`"))
		}
		for j := range ss.Addresses {
			errs = append(errs, validateEndpointAddress(&ss.Addresses[j], p.Child("addresses").Index(j))...)
		}
		for j := range ss.NotReadyAddresses {
			errs = append(errs, validateEndpointAddress(&ss.NotReadyAddresses[j], p.Child("notReadyAddresses").Index(j))...)
		}
		for j := range ss.Ports {
			errs = append(errs, validateEndpointPort(&ss.Ports[j], len(ss.Ports) > 1, p.Child("ports").Index(j))...)
		}
	}
	return errs
}

func validateEndpointAddress(a *corev1.EndpointAddress, fld *field.Path) field.ErrorList {
	errs := validation.IsValidIPForLegacyField(fld.Child("ip"), a.IP, false, nil)
	if a.Hostname != "" {
		for _, msg := range validation.IsDNS1123Label(a.Hostname) {
			errs = append(errs, field.Invalid(fld.Child("hostname"), a.Hostname, msg))
		}
	}
	if a.NodeName != nil {
		for _, msg := range validation.IsDNS1123Subdomain(*a.NodeName) {
			errs = append(errs, field.Invalid(fld.Child("nodeName"), *a.NodeName, msg))
		}
	}
	return append(errs, validateEndpointIP(a.IP, fld.Child("ip"))...)
}

func validateEndpointPort(p *corev1.EndpointPort, requireName bool, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case requireName && p.Name == "":
		errs = append(errs, field.Required(fld.Child("name"), ""))
	case p.Name != "":
		for _, msg := range validation.IsDNS1123Label(p.Name) {
			errs = append(errs, field.Invalid(fld.Child("name"), p.Name, msg))
		}
	}
	for _, msg := range validation.IsValidPortNum(int(p.Port)) {
		errs = append(errs, field.Invalid(fld.Child("port"), p.Port, msg))
	}
	errs = append(errs, supported(fld.Child("protocol"), string(p.Protocol), portProtocols...)...)
	if p.AppProtocol != nil {
		for _, msg := range validation.IsQualifiedName(*p.AppProtocol) {
			errs = append(errs, field.Invalid(fld.Child("appProtocol"), *p.AppProtocol, msg))
		}
	}
	return errs
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
