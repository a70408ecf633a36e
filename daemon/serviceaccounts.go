package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/daemon/controller"
	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/kube"
	"github.com/skiff-sh/skiff/kubelet"
	"github.com/skiff-sh/skiff/pki"
	"github.com/skiff-sh/skiff/serviceaccount"
)

// identity is what skiffd signs and verifies with: its PKI and the
// ServiceAccount tokens made with its key.
type identity struct {
	pki    *pki.PKI
	tokens *serviceaccount.Requester
	// authenticator verifies the tokens, for the API's authentication
	// chain.
	authenticator *serviceaccount.Authenticator
}

// newIdentity builds the ServiceAccount token issuer on the PKI's key,
// with the issuer and audiences configured (kube-apiserver's
// --service-account-issuer and --api-audiences; the audiences default to
// the issuer).
func newIdentity(cfg Config, store *db.Store, p *pki.PKI) (*identity, error) {
	issuerName := cfg.ServiceAccountIssuer
	if issuerName == "" {
		issuerName = serviceaccount.DefaultIssuer
	}
	audiences := cfg.APIAudiences
	if len(audiences) == 0 {
		audiences = []string{issuerName}
	}
	issuer, err := serviceaccount.NewIssuer(issuerName, p.ServiceAccountKey())
	if err != nil {
		return nil, err
	}
	get := serviceaccount.StoreGetter{Store: store}
	authenticator, err := serviceaccount.NewAuthenticator(issuerName, p.ServiceAccountPublicKeys(), audiences, get)
	if err != nil {
		return nil, err
	}
	return &identity{
		pki: p,
		tokens: &serviceaccount.Requester{Issuer: issuer, Audiences: audiences, Get: get, Node: get.Node,
			MaxExpiration: cfg.ServiceAccountMaxTokenExpiration},
		authenticator: authenticator,
	}, nil
}

// apiServiceIP is the kubernetes Service's clusterIP: the first address of
// the Service range, which the API's allocator keeps for it.
func apiServiceIP(cidr netip.Prefix) netip.Addr { return cidr.Masked().Addr().Next() }

// apiServicePort is the port of the kubernetes Service, kube's.
const apiServicePort = 443

// ensureAPIService writes the kubernetes Service of the default namespace
// and its Endpoints and EndpointSlice, as kube-apiserver's endpoint
// reconciler keeps them: port 443 (https) of the first Service address,
// forwarded to the API's port on address, the node's address pods reach.
func ensureAPIService(store *db.Store, cidr netip.Prefix, address string, port int) error {
	ip := apiServiceIP(cidr).String()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: kube.APIServiceName,
			Labels: map[string]string{"component": "apiserver", "provider": "kubernetes"}},
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeClusterIP, ClusterIP: ip, ClusterIPs: []string{ip},
			IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol}, IPFamilyPolicy: ptr.To(corev1.IPFamilyPolicySingleStack),
			SessionAffinity: corev1.ServiceAffinityNone, InternalTrafficPolicy: ptr.To(corev1.ServiceInternalTrafficPolicyCluster),
			Ports: []corev1.ServicePort{{Name: "https", Protocol: corev1.ProtocolTCP, Port: apiServicePort,
				TargetPort: intstr.FromInt32(int32(port))}},
		},
	}
	eps := &corev1.Endpoints{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: kube.APIServiceName,
			Labels: map[string]string{discoveryv1.LabelSkipMirror: "true"}},
		Subsets: []corev1.EndpointSubset{{
			Addresses: []corev1.EndpointAddress{{IP: address}},
			Ports:     []corev1.EndpointPort{{Name: "https", Port: int32(port), Protocol: corev1.ProtocolTCP}},
		}},
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: kube.APIServiceName,
			Labels: map[string]string{discoveryv1.LabelServiceName: kube.APIServiceName}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{address},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To(int32(port)), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	return store.Write(func(tx *db.Tx) error {
		for _, w := range []struct {
			r   db.Resource
			obj db.Object
			set func(stored db.Object)
		}{
			{db.Services, svc, func(o db.Object) { s := o.(*corev1.Service); s.Spec = svc.Spec; s.Labels = svc.Labels }},
			{db.Endpoints, eps, func(o db.Object) { o.(*corev1.Endpoints).Subsets = eps.Subsets }},
			{db.EndpointSlices, slice, func(o db.Object) {
				s := o.(*discoveryv1.EndpointSlice)
				s.Labels, s.AddressType, s.Endpoints, s.Ports = slice.Labels, slice.AddressType, slice.Endpoints, slice.Ports
			}},
		} {
			stored, err := tx.Get(w.r, metav1.NamespaceDefault, kube.APIServiceName)
			switch {
			case errors.Is(err, db.ErrNotFound):
				if err := tx.Create(w.r, w.obj); err != nil {
					return fmt.Errorf("creating %s %s: %w", w.r.Name, kube.APIServiceName, err)
				}
				continue
			case err != nil:
				return err
			}
			want := stored.DeepCopyObject().(db.Object)
			w.set(want)
			if apiequality.Semantic.DeepEqual(want, stored) {
				continue
			}
			if err := tx.Update(w.r, want); err != nil {
				return fmt.Errorf("updating %s %s: %w", w.r.Name, kube.APIServiceName, err)
			}
		}
		return nil
	})
}

// listenPort is the port of a listener's address ("[::]:6443").
func listenPort(addr string) (int, error) {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(p)
}

// publishAPIService points the kubernetes Service at the API's TCP
// listener on the advertised address, and returns the loop that keeps it
// so, as kube-apiserver's endpoint reconciler does: the Service, its
// Endpoints and EndpointSlice are written back when deleted or changed.
func publishAPIService(cfg Config, store *db.Store, services serviceNetwork, n kubelet.Node, listen string) (func(context.Context) error, error) {
	port, err := listenPort(listen)
	if err != nil {
		return nil, fmt.Errorf("the API's port: %w", err)
	}
	address := cfg.AdvertiseAddress
	if address == "" {
		address = n.HostIP
	}
	ensure := func(context.Context, struct{}) error {
		if err := ensureAPIService(store, services.cidr, address, port); err != nil {
			return fmt.Errorf("publishing the kubernetes Service: %w", err)
		}
		return nil
	}
	if err := ensure(context.Background(), struct{}{}); err != nil {
		return nil, err
	}
	var loop *controller.Loop[struct{}]
	onEvent := func(ev db.Event) {
		if ev.Object.GetNamespace() == metav1.NamespaceDefault && ev.Object.GetName() == kube.APIServiceName {
			loop.Add(struct{}{})
		}
	}
	var watches []controller.Watch
	for _, r := range []db.Resource{db.Services, db.Endpoints, db.EndpointSlices} {
		watches = append(watches, controller.Watch{Resource: r, OnEvent: onEvent})
	}
	loop = controller.New(controller.Config[struct{}]{Name: "kubernetes service", Store: store, Watches: watches, Sync: ensure})
	return loop.Run, nil
}
