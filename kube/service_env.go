package kube

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// APIServiceName is the Service of the default namespace that fronts the
// API server, whose variables every container gets.
const APIServiceName = "kubernetes"

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
