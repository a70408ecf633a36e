package api

import (
	"strings"
	"testing"
)

const serviceYAML = `apiVersion: v1
kind: Service
metadata:
  name: web
  labels:
    app: web
spec:
  selector:
    app: web
  ports:
  - name: http
    port: 80
    targetPort: http
`

// TestKubectlServices drives Services with kubectl: create with
// client-side validation (OpenAPI), get, explain, edit by apply (client-
// and server-side), the typed create command, and refusals.
func TestKubectlServices(t *testing.T) {
	requireKubectl(t)
	ts := newTestServer(t)

	wantLines(t, ts.mustKubectl(t, serviceYAML, "create", "-f", "-"), "service/web created")
	wantLines(t, ts.mustKubectl(t, "", "get", "svc"), "NAME TYPE CLUSTER-IP EXTERNAL-IP PORT(S) AGE", "web ClusterIP 10.43.")
	wantLines(t, ts.mustKubectl(t, "", "get", "services", "-o", "wide"), "PORT(S) AGE SELECTOR", "80/TCP", "app=web")
	wantLines(t, ts.mustKubectl(t, "", "explain", "service.spec.ports.targetPort"),
		"KIND: Service", "FIELD: targetPort <IntOrString>")
	wantLines(t, ts.mustKubectl(t, "", "explain", "endpointslices.endpoints.conditions"),
		"GROUP: discovery.k8s.io", "KIND: EndpointSlice", "serving <boolean>")

	// Client-side validation knows the schema: an unknown field is refused.
	out, err := ts.kubectl(t, strings.Replace(serviceYAML, "port: 80", "port: 80\n    prot: 1", 1), "create", "--validate=true", "-f", "-")
	if err == nil || !strings.Contains(out, `unknown field "spec.ports[0].prot"`) {
		t.Errorf("create with an unknown field: %v\n%s", err, out)
	}

	// Applying the same manifest again keeps the allocated clusterIP.
	ip := ts.mustKubectl(t, "", "get", "svc", "web", "-o", "jsonpath={.spec.clusterIP}")
	wantLines(t, ts.mustKubectl(t, strings.Replace(serviceYAML, "app: web\nspec", "app: web\n    tier: front\nspec", 1), "apply", "-f", "-"),
		"service/web configured")
	if got := ts.mustKubectl(t, "", "get", "svc", "web", "-o", "jsonpath={.spec.clusterIP} {.metadata.labels.tier}"); got != ip+" front" {
		t.Errorf("after apply: %q, want %q", got, ip+" front")
	}
	wantLines(t, ts.mustKubectl(t, strings.Replace(serviceYAML, "name: web\n  labels", "name: api\n  labels", 1),
		"apply", "--server-side", "-f", "-"), "service/api serverside-applied")
	wantLines(t, ts.mustKubectl(t, strings.Replace(serviceYAML, "name: web\n  labels", "name: api\n  labels", 1)+"  sessionAffinity: ClientIP\n",
		"apply", "--server-side", "-f", "-"), "service/api serverside-applied")
	wantLines(t, ts.mustKubectl(t, "", "get", "svc", "api", "-o", "jsonpath={.spec.sessionAffinityConfig.clientIP.timeoutSeconds}"), "10800")

	// kubectl's own generators (its typed client), a headless Service too.
	wantLines(t, ts.mustKubectl(t, "", "create", "service", "clusterip", "db", "--tcp=5432:5432"), "service/db created")
	wantLines(t, ts.mustKubectl(t, "", "create", "service", "clusterip", "peers", "--clusterip=None"), "service/peers created")
	wantLines(t, ts.mustKubectl(t, "", "get", "svc", "peers"), "peers ClusterIP None <none> <none>")

	out, err = ts.kubectl(t, "", "create", "service", "nodeport", "np", "--tcp=80:80")
	if err == nil || !strings.Contains(out, `Service "np" is invalid: spec.type: Invalid value: "NodePort": skiff serves ClusterIP and headless Services only`) {
		t.Errorf("create nodeport: %v\n%s", err, out)
	}
	out, err = ts.kubectl(t, "", "patch", "svc", "web", "-p", `{"spec":{"clusterIP":"10.43.200.200"}}`)
	if err == nil || !strings.Contains(out, "may not change once set") {
		t.Errorf("patching the clusterIP: %v\n%s", err, out)
	}
	wantLines(t, ts.mustKubectl(t, "", "delete", "svc", "web", "db"), `service "web" deleted`, `service "db" deleted`)
}
