package endpointscontroller

import (
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/kube"
)

// podState is what the controller remembers of a pod: its labels (which
// Services select it) and what of it shows in endpoints.
type podState struct {
	labels      labels.Set
	fingerprint string
}

// endpointFingerprint is what of a pod its endpoints show: a change of it
// changes the endpoints of the Services that select the pod.
func endpointFingerprint(p *corev1.Pod) string {
	ip, _ := podIPv4(p)
	var ports []string
	for _, list := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for _, c := range list {
			for _, port := range c.Ports {
				ports = append(ports, fmt.Sprintf("%s/%d/%s", port.Name, port.ContainerPort, port.Protocol))
			}
		}
	}
	return fmt.Sprintf("%s|%t|%t|%t|%s|%s|%s|%v", ip, kube.IsPodReady(p), p.DeletionTimestamp != nil, kube.IsPodTerminal(p),
		p.Spec.Hostname, p.Spec.Subdomain, p.Spec.NodeName, ports)
}

func (c *Controller) onServiceEvent(ev db.Event) {
	svc := ev.Object.(*corev1.Service)
	if ev.Type == watch.Deleted {
		c.mu.Lock()
		delete(c.selectors[svc.Namespace], svc.Name)
		c.mu.Unlock()
		c.loop.Add(serviceKey{svc.Namespace, svc.Name})
		return
	}
	c.observeService(svc)
}

func (c *Controller) observeService(svc *corev1.Service) {
	c.mu.Lock()
	if svc.Spec.Selector == nil {
		delete(c.selectors[svc.Namespace], svc.Name)
	} else {
		if c.selectors[svc.Namespace] == nil {
			c.selectors[svc.Namespace] = map[string]labels.Selector{}
		}
		c.selectors[svc.Namespace][svc.Name] = labels.SelectorFromSet(svc.Spec.Selector)
	}
	c.mu.Unlock()
	c.loop.Add(serviceKey{svc.Namespace, svc.Name})
}

// onPodEvent queues the Services that select the pod, before or after the
// change, when the change shows in endpoints.
func (c *Controller) onPodEvent(ev db.Event) {
	p := ev.Object.(*corev1.Pod)
	pk := serviceKey{p.Namespace, p.Name}
	c.mu.Lock()
	old, known := c.pods[pk]
	cur := podState{labels: labels.Set(p.Labels), fingerprint: endpointFingerprint(p)}
	if ev.Type == watch.Deleted {
		delete(c.pods, pk)
	} else {
		c.pods[pk] = cur
	}
	if known && ev.Type != watch.Deleted && old.fingerprint == cur.fingerprint && maps.Equal(old.labels, cur.labels) {
		c.mu.Unlock()
		return
	}
	var keys []serviceKey
	for name, sel := range c.selectors[p.Namespace] {
		if sel.Matches(cur.labels) || (known && sel.Matches(old.labels)) {
			keys = append(keys, serviceKey{p.Namespace, name})
		}
	}
	c.mu.Unlock()
	for _, k := range keys {
		c.loop.Add(k)
	}
}

// onOutputEvent queues the Service of an Endpoints or slice this
// controller manages that someone changed or deleted.
func (c *Controller) onOutputEvent(ev db.Event) {
	if k, ok := outputService(ev.Object); ok {
		c.loop.Add(k)
	}
}

// outputService is the Service of an Endpoints object or EndpointSlice
// this controller manages.
func outputService(obj db.Object) (serviceKey, bool) {
	l := obj.GetLabels()
	switch o := obj.(type) {
	case *corev1.Endpoints:
		return serviceKey{o.Namespace, o.Name}, l[EndpointsManagedBy] == EndpointsController
	case *discoveryv1.EndpointSlice:
		name, ok := l[discoveryv1.LabelServiceName]
		return serviceKey{o.Namespace, name}, ok && l[discoveryv1.LabelManagedBy] == SliceController
	}
	return serviceKey{}, false
}
