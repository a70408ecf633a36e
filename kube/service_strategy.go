package kube

import corev1 "k8s.io/api/core/v1"

// PrepareServiceForCreate is kube's Service strategy on create: no status,
// the Service defaults, and the registry's fix-ups of the linked
// clusterIP, clusterIPs and ipFamilies fields.
func PrepareServiceForCreate(svc *corev1.Service) {
	svc.Status = corev1.ServiceStatus{}
	prepareService(svc, nil)
}

// PrepareServiceForUpdate keeps the stored status on an update of a
// Service; an update that leaves out the allocated ClusterIPs keeps them
// (so that the same manifest can be applied again).
func PrepareServiceForUpdate(svc, old *corev1.Service) {
	svc.Status = old.Status
	prepareService(svc, old)
}

// PrepareServiceForStatusUpdate keeps the stored spec on an update of a
// Service's status.
func PrepareServiceForStatusUpdate(svc, old *corev1.Service) { svc.Spec = old.Spec }
