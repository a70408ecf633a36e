package api

import (
	"net/http"
	"time"

	"github.com/gorilla/mux"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"

	"github.com/skiff-sh/skiff/db"
)

// The resource metrics API, metrics.k8s.io/v1beta1, as metrics-server
// serves it behind kube-apiserver: PodMetrics and NodeMetrics, read-only
// (get and list), with the pods' or the node's labels for selectors.
// `kubectl top` finds it in discovery and reads it.

var metricsV1beta1 = groupVersion{group: "metrics.k8s.io", version: "v1beta1"}

// ResourceMetrics measures the node and its pods' containers: CPU as a
// rate over a window, memory as the working set (the kubelet's figures).
type ResourceMetrics interface {
	// PodMetrics returns the usage of each running container of the pod
	// uid, measured over window ending at timestamp; ok is false while the
	// pod has no container measured twice yet.
	PodMetrics(uid types.UID) (timestamp time.Time, window time.Duration, containers []metricsv1beta1.ContainerMetrics, ok bool)
	// NodeMetrics returns the node's usage likewise.
	NodeMetrics() (timestamp time.Time, window time.Duration, usage corev1.ResourceList, ok bool)
}

var (
	podMetricsResource  = schema.GroupResource{Group: metricsV1beta1.group, Resource: "pods"}
	nodeMetricsResource = schema.GroupResource{Group: metricsV1beta1.group, Resource: "nodes"}
)

// metricsAPIResources are the resources of metrics.k8s.io/v1beta1 in
// discovery, as metrics-server lists them.
func metricsAPIResources() []metav1.APIResource {
	verbs := metav1.Verbs{"get", "list"}
	return []metav1.APIResource{
		{Name: "nodes", Kind: "NodeMetrics", Verbs: verbs},
		{Name: "pods", Kind: "PodMetrics", Namespaced: true, Verbs: verbs},
	}
}

// resourceMetricsRoutes registers the group's discovery and resources.
func (s *server) resourceMetricsRoutes(r *mux.Router) {
	gv := metricsV1beta1
	r.HandleFunc("/apis/"+gv.group, s.group(gv))
	r.HandleFunc(gv.prefix(), s.resourceList(gv))
	r.HandleFunc(gv.prefix()+"/nodes", s.metricsRead(nodeMetricsResource, s.nodeMetrics))
	r.HandleFunc(gv.prefix()+"/nodes/{name}", s.metricsRead(nodeMetricsResource, s.nodeMetrics))
	r.HandleFunc(gv.prefix()+"/pods", s.metricsRead(podMetricsResource, s.podMetrics))
	r.HandleFunc(gv.prefix()+"/namespaces/{namespace}/pods", s.metricsRead(podMetricsResource, s.podMetrics))
	r.HandleFunc(gv.prefix()+"/namespaces/{namespace}/pods/{name}", s.metricsRead(podMetricsResource, s.podMetrics))
}

// metricsQuery is a get (name set) or list of metrics objects.
type metricsQuery struct {
	namespace, name string
	labels          labels.Selector
	fields          fields.Selector
}

// metricsRead refuses what the read-only group does not serve (other
// methods, watches: 405), reads the selectors (400 when malformed) and
// answers 503 while no measurer is configured, as kube-apiserver does for
// an APIService that is not available.
func (s *server) metricsRead(gr schema.GroupResource, serve func(http.ResponseWriter, *http.Request, metricsQuery)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		info := parseRequestInfo(r)
		if (r.Method != http.MethodGet && r.Method != http.MethodHead) || info.Verb == "watch" {
			writeError(w, r, apierrors.NewMethodNotSupported(gr, info.Verb))
			return
		}
		if s.cfg.ResourceMetrics == nil {
			writeError(w, r, apierrors.NewServiceUnavailable("the resource metrics API is not available"))
			return
		}
		vars := mux.Vars(r)
		q := metricsQuery{namespace: vars["namespace"], name: vars["name"]}
		var err error
		if q.labels, err = labels.Parse(r.URL.Query().Get("labelSelector")); err != nil {
			writeError(w, r, apierrors.NewBadRequest(err.Error()))
			return
		}
		if q.fields, err = fields.ParseSelector(r.URL.Query().Get("fieldSelector")); err != nil {
			writeError(w, r, apierrors.NewBadRequest(err.Error()))
			return
		}
		serve(w, r, q)
	}
}

// podMetrics serves PodMetrics of the pods that have them: a list (pods
// not measured yet are left out, as metrics-server does), or one (404
// when it has none).
func (s *server) podMetrics(w http.ResponseWriter, r *http.Request, q metricsQuery) {
	var pods []*corev1.Pod
	err := s.store.Read(func(tx *db.Tx) error {
		if q.name != "" {
			p, err := db.Find[*corev1.Pod](tx, db.Pods, q.namespace, q.name)
			if p != nil {
				pods = append(pods, p)
			}
			return err
		}
		objs, err := tx.List(db.Pods, q.namespace, q.labels)
		for _, o := range objs {
			pods = append(pods, o.(*corev1.Pod))
		}
		return err
	})
	if err != nil {
		writeError(w, r, statusFor(err, podMetricsResource, q.name))
		return
	}
	list := &metricsv1beta1.PodMetricsList{TypeMeta: metav1.TypeMeta{APIVersion: metricsV1beta1.String(), Kind: "PodMetricsList"},
		Items: []metricsv1beta1.PodMetrics{}}
	for _, p := range pods {
		if !q.fields.Matches(fields.Set{"metadata.name": p.Name, "metadata.namespace": p.Namespace}) {
			continue
		}
		ts, window, containers, ok := s.cfg.ResourceMetrics.PodMetrics(p.UID)
		if !ok {
			continue
		}
		list.Items = append(list.Items, metricsv1beta1.PodMetrics{
			ObjectMeta: metricsMeta(p.ObjectMeta),
			Timestamp:  metav1.NewTime(ts), Window: metav1.Duration{Duration: window}, Containers: containers,
		})
	}
	if q.name == "" {
		writeJSON(w, r, http.StatusOK, list)
		return
	}
	if len(list.Items) == 0 {
		writeError(w, r, apierrors.NewNotFound(podMetricsResource, q.name))
		return
	}
	item := list.Items[0]
	item.TypeMeta = metav1.TypeMeta{APIVersion: metricsV1beta1.String(), Kind: "PodMetrics"}
	writeJSON(w, r, http.StatusOK, &item)
}

// nodeMetrics serves the NodeMetrics of this node.
func (s *server) nodeMetrics(w http.ResponseWriter, r *http.Request, q metricsQuery) {
	var node *corev1.Node
	err := s.store.Read(func(tx *db.Tx) error {
		var err error
		node, err = db.Find[*corev1.Node](tx, db.Nodes, "", s.cfg.NodeName)
		return err
	})
	if err != nil {
		writeError(w, r, statusFor(err, nodeMetricsResource, q.name))
		return
	}
	list := &metricsv1beta1.NodeMetricsList{TypeMeta: metav1.TypeMeta{APIVersion: metricsV1beta1.String(), Kind: "NodeMetricsList"},
		Items: []metricsv1beta1.NodeMetrics{}}
	ts, window, usage, ok := s.cfg.ResourceMetrics.NodeMetrics()
	if node != nil && ok && (q.name == "" || q.name == node.Name) && q.labels.Matches(labels.Set(node.Labels)) &&
		q.fields.Matches(fields.Set{"metadata.name": node.Name}) {
		list.Items = append(list.Items, metricsv1beta1.NodeMetrics{
			ObjectMeta: metricsMeta(node.ObjectMeta),
			Timestamp:  metav1.NewTime(ts), Window: metav1.Duration{Duration: window}, Usage: usage,
		})
	}
	if q.name == "" {
		writeJSON(w, r, http.StatusOK, list)
		return
	}
	if len(list.Items) == 0 {
		writeError(w, r, apierrors.NewNotFound(nodeMetricsResource, q.name))
		return
	}
	item := list.Items[0]
	item.TypeMeta = metav1.TypeMeta{APIVersion: metricsV1beta1.String(), Kind: "NodeMetrics"}
	writeJSON(w, r, http.StatusOK, &item)
}

// metricsMeta is the metadata of a metrics object about an object: its
// name, namespace and labels, created now (metrics are not stored).
func metricsMeta(of metav1.ObjectMeta) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: of.Name, Namespace: of.Namespace, Labels: of.Labels, CreationTimestamp: metav1.Now()}
}
