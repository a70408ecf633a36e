package kube

import (
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// APIServiceName is the Service of the default namespace that fronts the
// API server, whose variables every container gets.
const APIServiceName = "kubernetes"

// ServiceLinkEnv is the kubelet's service environment of a container in
// namespace ns (getServiceEnvVarMap) drawn from services, which hold the
// API's Service of the default namespace and, when enableServiceLinks,
// the Services of ns: the API's Service always (whatever
// enableServiceLinks says), those of ns only with it. A Service of ns
// named like the API's takes its place, as the kubelet's map does. Only
// Services with a cluster IP count (not headless ones, not ExternalName).
func ServiceLinkEnv(ns string, enableServiceLinks bool, services []*corev1.Service) []corev1.EnvVar {
	chosen := map[string]*corev1.Service{}
	for _, svc := range services {
		switch {
		case svc.Spec.ClusterIP == "" || svc.Spec.ClusterIP == corev1.ClusterIPNone:
		case svc.Namespace == ns && enableServiceLinks:
			chosen[svc.Name] = svc
		case svc.Namespace == metav1.NamespaceDefault && svc.Name == APIServiceName:
			if _, taken := chosen[svc.Name]; !taken {
				chosen[svc.Name] = svc
			}
		}
	}
	names := slices.Sorted(maps.Keys(chosen))
	var env []corev1.EnvVar
	for _, name := range names {
		env = append(env, ServiceEnv(chosen[name])...)
	}
	return env
}

// ServiceEnv is the kubelet's environment for a Service (envvars
// FromServices): <NAME>_SERVICE_HOST, _SERVICE_PORT (the first port),
// _SERVICE_PORT_<PORT NAME> for each named port, and the Docker link
// variables <NAME>_PORT and <NAME>_PORT_<port>_<PROTO>{,_PROTO,_PORT,_ADDR}.
// A headless Service or one without ports has none.
func ServiceEnv(svc *corev1.Service) []corev1.EnvVar {
	ip := svc.Spec.ClusterIP
	if ip == "" || ip == corev1.ClusterIPNone || len(svc.Spec.Ports) == 0 {
		return nil
	}
	prefix := envName(svc.Name)
	port := prefix + "_SERVICE_PORT"
	env := []corev1.EnvVar{
		{Name: prefix + "_SERVICE_HOST", Value: ip},
		{Name: port, Value: strconv.Itoa(int(svc.Spec.Ports[0].Port))},
	}
	for _, p := range svc.Spec.Ports {
		if p.Name != "" {
			env = append(env, corev1.EnvVar{Name: port + "_" + envName(p.Name), Value: strconv.Itoa(int(p.Port))})
		}
	}
	for i, p := range svc.Spec.Ports {
		proto := string(p.Protocol)
		if proto == "" {
			proto = string(corev1.ProtocolTCP)
		}
		url := fmt.Sprintf("%s://%s", strings.ToLower(proto), net.JoinHostPort(ip, strconv.Itoa(int(p.Port))))
		if i == 0 {
			env = append(env, corev1.EnvVar{Name: prefix + "_PORT", Value: url})
		}
		link := fmt.Sprintf("%s_PORT_%d_%s", prefix, p.Port, strings.ToUpper(proto))
		env = append(env,
			corev1.EnvVar{Name: link, Value: url},
			corev1.EnvVar{Name: link + "_PROTO", Value: strings.ToLower(proto)},
			corev1.EnvVar{Name: link + "_PORT", Value: strconv.Itoa(int(p.Port))},
			corev1.EnvVar{Name: link + "_ADDR", Value: ip})
	}
	return env
}

// envName is a Service or port name as a variable name: upper case, "-"
// as "_".
func envName(s string) string { return strings.ToUpper(strings.ReplaceAll(s, "-", "_")) }
