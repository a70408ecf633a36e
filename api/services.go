package api

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/kube"
)

// serviceResource is core/v1 services: ClusterIP and headless Services,
// with ClusterIPs allocated from the service CIDR when they are created.
var serviceResource = &resource{
	gv:             coreV1,
	kind:           "Service",
	plural:         "services",
	singular:       "service",
	shortNames:     []string{"svc"},
	categories:     []string{"all"},
	store:          db.Services,
	goType:         reflect.TypeOf(corev1.Service{}),
	listType:       reflect.TypeOf(corev1.ServiceList{}),
	newList:        newServiceList,
	fields:         serviceFields,
	columns:        serviceColumns,
	cells:          func(obj db.Object, now time.Time) []any { return serviceCells(obj.(*corev1.Service), now) },
	prepareCreate:  func(_ *server, obj db.Object) { kube.PrepareServiceForCreate(obj.(*corev1.Service)) },
	validateCreate: validateAs(kube.ValidateServiceCreate),
	prepareUpdate:  prepareUpdateAs(kube.PrepareServiceForUpdate, kube.PrepareServiceForStatusUpdate),
	validateUpdate: validateUpdateAs(kube.ValidateServiceUpdate),
	allocate: func(s *server, tx *db.Tx, obj db.Object) error {
		return s.allocateClusterIP(tx, obj.(*corev1.Service))
	},
	// NOTE: kube's Service strategy keeps no metadata.generation.
	spec:               func(db.Object) any { return nil },
	defaultPropagation: metav1.DeletePropagationBackground,
	deleteGrace:        func(db.Object, *int64) int64 { return 0 },
	// NOTE: a Service name is a DNS-1035 label (kube's ValidateServiceName;
	// RelaxedServiceNameValidation is off in 1.34).
	validateName: apivalidation.NameIsDNS1035Label,
}

func newServiceList(items []db.Object, meta metav1.ListMeta) runtime.Object {
	return &corev1.ServiceList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceList"}, ListMeta: meta,
		Items: listItems[corev1.Service](items)}
}

// serviceFields are the service fields usable in field selectors.
func serviceFields(obj db.Object) fields.Set {
	svc := obj.(*corev1.Service)
	f := objectFields(obj)
	f["spec.clusterIP"] = svc.Spec.ClusterIP
	f["spec.type"] = string(svc.Spec.Type)
	return f
}

// serviceColumns are kube's service columns (priority 1 = kubectl -o wide).
var serviceColumns = []metav1.TableColumnDefinition{
	nameColumn,
	{Name: "Type", Type: "string", Description: corev1.ServiceSpec{}.SwaggerDoc()["type"]},
	{Name: "Cluster-IP", Type: "string", Description: corev1.ServiceSpec{}.SwaggerDoc()["clusterIP"]},
	{Name: "External-IP", Type: "string", Description: corev1.ServiceSpec{}.SwaggerDoc()["externalIPs"]},
	{Name: "Port(s)", Type: "string", Description: corev1.ServiceSpec{}.SwaggerDoc()["ports"]},
	ageColumn,
	{Name: "Selector", Type: "string", Priority: 1, Description: corev1.ServiceSpec{}.SwaggerDoc()["selector"]},
}

// serviceCells is one service's row, as kube's printer makes it.
func serviceCells(svc *corev1.Service, now time.Time) []any {
	clusterIP := "<none>"
	if len(svc.Spec.ClusterIPs) > 0 {
		clusterIP = svc.Spec.ClusterIPs[0]
	}
	return []any{svc.Name, string(svc.Spec.Type), clusterIP, serviceExternalIP(svc),
		noneIfEmpty(servicePorts(svc.Spec.Ports)), age(svc.CreationTimestamp, now),
		labels.FormatLabels(svc.Spec.Selector)}
}

// serviceExternalIP is the EXTERNAL-IP cell.
func serviceExternalIP(svc *corev1.Service) string {
	switch svc.Spec.Type {
	case corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort:
		return noneIfEmpty(strings.Join(svc.Spec.ExternalIPs, ","))
	case corev1.ServiceTypeExternalName:
		return svc.Spec.ExternalName
	}
	return "<unknown>"
}

// servicePorts is the PORT(S) cell: "80/TCP,53/UDP".
func servicePorts(ports []corev1.ServicePort) string {
	pieces := make([]string, len(ports))
	for i, p := range ports {
		pieces[i] = fmt.Sprintf("%d/%s", p.Port, p.Protocol)
		if p.NodePort > 0 {
			pieces[i] = fmt.Sprintf("%d:%d/%s", p.Port, p.NodePort, p.Protocol)
		}
	}
	return strings.Join(pieces, ",")
}
