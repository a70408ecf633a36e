package api

import (
	"reflect"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// NOTE: kube's OpenAPI carries merge markers that come from comments on the
// k8s.io/api types (+listType, +listMapKey, +mapType, +structType,
// +default), which reflection cannot see. Server-side apply merges by them
// (structured-merge-diff), so they are restated here for the fields of Job
// and Pod that kube marks; both the served documents and the apply typing
// are built from them. A list without a marker falls back to its
// patchStrategy/patchMergeKey tags, as kube-openapi's schemaconv does.

// fieldMarker is how one field of a Go type merges.
type fieldMarker struct {
	listType string   // x-kubernetes-list-type: atomic, set, map
	mapKeys  []string // x-kubernetes-list-map-keys for listType map
	mapType  string   // x-kubernetes-map-type (of a map field)
	dflt     any      // default, needed where a list map key may be omitted
}

// fieldKey names a field by its Go struct type and json name.
type fieldKey struct {
	t     reflect.Type
	field string
}

func typeOf(v any) reflect.Type { return reflect.TypeOf(v) }

var (
	atomicList = fieldMarker{listType: "atomic"}
	setList    = fieldMarker{listType: "set"}
	atomicMap  = fieldMarker{mapType: "atomic"}
)

func mapList(keys ...string) fieldMarker { return fieldMarker{listType: "map", mapKeys: keys} }

// fieldMarkers are kube's markers on the fields of the served types.
var fieldMarkers = map[fieldKey]fieldMarker{
	// meta/v1
	{typeOf(metav1.ObjectMeta{}), "ownerReferences"}:      mapList("uid"),
	{typeOf(metav1.ObjectMeta{}), "finalizers"}:           setList,
	{typeOf(metav1.ObjectMeta{}), "managedFields"}:        atomicList,
	{typeOf(metav1.LabelSelector{}), "matchExpressions"}:  atomicList,
	{typeOf(metav1.LabelSelectorRequirement{}), "values"}: atomicList,
	// batch/v1
	{typeOf(batchv1.JobStatus{}), "conditions"}:                          atomicList,
	{typeOf(batchv1.CronJobStatus{}), "active"}:                          atomicList,
	{typeOf(batchv1.PodFailurePolicy{}), "rules"}:                        atomicList,
	{typeOf(batchv1.PodFailurePolicyRule{}), "onPodConditions"}:          atomicList,
	{typeOf(batchv1.PodFailurePolicyOnExitCodesRequirement{}), "values"}: setList,
	{typeOf(batchv1.SuccessPolicy{}), "rules"}:                           atomicList,
	{typeOf(batchv1.UncountedTerminatedPods{}), "succeeded"}:             setList,
	{typeOf(batchv1.UncountedTerminatedPods{}), "failed"}:                setList,
	// core/v1 PodSpec
	{typeOf(corev1.PodSpec{}), "volumes"}:                       mapList("name"),
	{typeOf(corev1.PodSpec{}), "initContainers"}:                mapList("name"),
	{typeOf(corev1.PodSpec{}), "containers"}:                    mapList("name"),
	{typeOf(corev1.PodSpec{}), "ephemeralContainers"}:           mapList("name"),
	{typeOf(corev1.PodSpec{}), "nodeSelector"}:                  atomicMap,
	{typeOf(corev1.PodSpec{}), "imagePullSecrets"}:              mapList("name"),
	{typeOf(corev1.PodSpec{}), "tolerations"}:                   atomicList,
	{typeOf(corev1.PodSpec{}), "hostAliases"}:                   mapList("ip"),
	{typeOf(corev1.PodSpec{}), "readinessGates"}:                atomicList,
	{typeOf(corev1.PodSpec{}), "topologySpreadConstraints"}:     mapList("topologyKey", "whenUnsatisfiable"),
	{typeOf(corev1.PodSpec{}), "schedulingGates"}:               mapList("name"),
	{typeOf(corev1.PodSpec{}), "resourceClaims"}:                mapList("name"),
	{typeOf(corev1.PodSecurityContext{}), "supplementalGroups"}: atomicList,
	{typeOf(corev1.PodSecurityContext{}), "sysctls"}:            atomicList,
	{typeOf(corev1.PodDNSConfig{}), "nameservers"}:              atomicList,
	{typeOf(corev1.PodDNSConfig{}), "searches"}:                 atomicList,
	{typeOf(corev1.PodDNSConfig{}), "options"}:                  atomicList,
	// core/v1 Container (EphemeralContainerCommon is inlined into EphemeralContainer)
	{typeOf(corev1.Container{}), "command"}:                      atomicList,
	{typeOf(corev1.Container{}), "args"}:                         atomicList,
	{typeOf(corev1.Container{}), "ports"}:                        mapList("containerPort", "protocol"),
	{typeOf(corev1.Container{}), "envFrom"}:                      atomicList,
	{typeOf(corev1.Container{}), "env"}:                          mapList("name"),
	{typeOf(corev1.Container{}), "resizePolicy"}:                 atomicList,
	{typeOf(corev1.Container{}), "volumeMounts"}:                 mapList("mountPath"),
	{typeOf(corev1.Container{}), "volumeDevices"}:                mapList("devicePath"),
	{typeOf(corev1.EphemeralContainerCommon{}), "command"}:       atomicList,
	{typeOf(corev1.EphemeralContainerCommon{}), "args"}:          atomicList,
	{typeOf(corev1.EphemeralContainerCommon{}), "ports"}:         mapList("containerPort", "protocol"),
	{typeOf(corev1.EphemeralContainerCommon{}), "envFrom"}:       atomicList,
	{typeOf(corev1.EphemeralContainerCommon{}), "env"}:           mapList("name"),
	{typeOf(corev1.EphemeralContainerCommon{}), "resizePolicy"}:  atomicList,
	{typeOf(corev1.EphemeralContainerCommon{}), "volumeMounts"}:  mapList("mountPath"),
	{typeOf(corev1.EphemeralContainerCommon{}), "volumeDevices"}: mapList("devicePath"),
	{typeOf(corev1.ContainerPort{}), "protocol"}:                 {dflt: "TCP"},
	{typeOf(corev1.ResourceRequirements{}), "claims"}:            mapList("name"),
	{typeOf(corev1.ExecAction{}), "command"}:                     atomicList,
	{typeOf(corev1.HTTPGetAction{}), "httpHeaders"}:              atomicList,
	{typeOf(corev1.Capabilities{}), "add"}:                       atomicList,
	{typeOf(corev1.Capabilities{}), "drop"}:                      atomicList,
	{typeOf(corev1.NodeSelector{}), "nodeSelectorTerms"}:         atomicList,
	{typeOf(corev1.NodeSelectorTerm{}), "matchExpressions"}:      atomicList,
	{typeOf(corev1.NodeSelectorTerm{}), "matchFields"}:           atomicList,
	{typeOf(corev1.NodeSelectorRequirement{}), "values"}:         atomicList,
	{typeOf(corev1.ConfigMapVolumeSource{}), "items"}:            atomicList,
	{typeOf(corev1.SecretVolumeSource{}), "items"}:               atomicList,
	{typeOf(corev1.ProjectedVolumeSource{}), "sources"}:          atomicList,
	{typeOf(corev1.DownwardAPIVolumeSource{}), "items"}:          atomicList,
	// core/v1 PodStatus
	{typeOf(corev1.PodStatus{}), "conditions"}:                 mapList("type"),
	{typeOf(corev1.PodStatus{}), "hostIPs"}:                    atomicList,
	{typeOf(corev1.PodStatus{}), "podIPs"}:                     mapList("ip"),
	{typeOf(corev1.PodStatus{}), "initContainerStatuses"}:      atomicList,
	{typeOf(corev1.PodStatus{}), "containerStatuses"}:          atomicList,
	{typeOf(corev1.PodStatus{}), "ephemeralContainerStatuses"}: atomicList,
	{typeOf(corev1.PodStatus{}), "resourceClaimStatuses"}:      mapList("name"),
	{typeOf(corev1.ContainerStatus{}), "volumeMounts"}:         mapList("mountPath"),
	// core/v1 Service
	{typeOf(corev1.ServiceSpec{}), "ports"}:                    mapList("port", "protocol"),
	{typeOf(corev1.ServiceSpec{}), "selector"}:                 atomicMap,
	{typeOf(corev1.ServiceSpec{}), "clusterIPs"}:               atomicList,
	{typeOf(corev1.ServiceSpec{}), "externalIPs"}:              atomicList,
	{typeOf(corev1.ServiceSpec{}), "loadBalancerSourceRanges"}: atomicList,
	{typeOf(corev1.ServiceSpec{}), "ipFamilies"}:               atomicList,
	{typeOf(corev1.ServicePort{}), "protocol"}:                 {dflt: "TCP"},
	{typeOf(corev1.ServiceStatus{}), "conditions"}:             mapList("type"),
	{typeOf(corev1.LoadBalancerStatus{}), "ingress"}:           atomicList,
	{typeOf(corev1.LoadBalancerIngress{}), "ports"}:            atomicList,
	// core/v1 Endpoints
	{typeOf(corev1.Endpoints{}), "subsets"}:                atomicList,
	{typeOf(corev1.EndpointSubset{}), "addresses"}:         atomicList,
	{typeOf(corev1.EndpointSubset{}), "notReadyAddresses"}: atomicList,
	{typeOf(corev1.EndpointSubset{}), "ports"}:             atomicList,
	// discovery.k8s.io/v1 EndpointSlice
	{typeOf(discoveryv1.EndpointSlice{}), "endpoints"}: atomicList,
	{typeOf(discoveryv1.EndpointSlice{}), "ports"}:     atomicList,
	{typeOf(discoveryv1.Endpoint{}), "addresses"}:      setList,
	{typeOf(discoveryv1.EndpointHints{}), "forZones"}:  atomicList,
	{typeOf(discoveryv1.EndpointHints{}), "forNodes"}:  atomicList,
}

// atomicStructs are the types kube marks +structType=atomic: applied as a
// whole, never merged field by field.
var atomicStructs = map[reflect.Type]bool{
	typeOf(metav1.LabelSelector{}):         true,
	typeOf(metav1.OwnerReference{}):        true,
	typeOf(corev1.ObjectReference{}):       true,
	typeOf(corev1.LocalObjectReference{}):  true,
	typeOf(corev1.ObjectFieldSelector{}):   true,
	typeOf(corev1.ResourceFieldSelector{}): true,
	typeOf(corev1.ConfigMapKeySelector{}):  true,
	typeOf(corev1.SecretKeySelector{}):     true,
	typeOf(corev1.FileKeySelector{}):       true,
	typeOf(corev1.NodeSelector{}):          true,
	typeOf(corev1.NodeSelectorTerm{}):      true,
	typeOf(corev1.TopologySelectorTerm{}):  true,
	typeOf(corev1.EndpointAddress{}):       true,
	typeOf(corev1.EndpointPort{}):          true,
	typeOf(discoveryv1.EndpointPort{}):     true,
}

// markField adds kube's markers of field name of struct type t to p.
func markField(p *spec.Schema, t reflect.Type, name string) {
	m, ok := fieldMarkers[fieldKey{t, name}]
	if !ok {
		return
	}
	if m.listType != "" {
		p.AddExtension("x-kubernetes-list-type", m.listType)
	}
	if len(m.mapKeys) > 0 {
		keys := make([]any, len(m.mapKeys))
		for i, k := range m.mapKeys {
			keys[i] = k
		}
		p.AddExtension("x-kubernetes-list-map-keys", keys)
	}
	if m.mapType != "" {
		p.AddExtension("x-kubernetes-map-type", m.mapType)
	}
	if m.dflt != nil {
		p.Default = m.dflt
	}
}

// markStruct marks the definition s of type t atomic if kube does.
func markStruct(s *spec.Schema, t reflect.Type) {
	if atomicStructs[t] {
		s.AddExtension("x-kubernetes-map-type", "atomic")
	}
}
