//go:build integration

package daemon_test

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/keyutil"

	"github.com/skiff-sh/skiff/kube"
	"github.com/skiff-sh/skiff/serviceaccount"
)

// saDir is where a pod finds its token, ca.crt and namespace.
const saDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// tokenClient is a client-go client of skiffd that trusts its CA and
// sends token.
func (s *skiffd) tokenClient(token string) *kubernetes.Clientset {
	return kubernetes.NewForConfigOrDie(&rest.Config{Host: s.url(""), BearerToken: token,
		TLSClientConfig: rest.TLSClientConfig{CAData: s.caPEM}, ContentConfig: rest.ContentConfig{ContentType: "application/json"}})
}

// TestServiceAccountsInPods drives a Job whose pod finds its ServiceAccount
// token, the CA and its namespace where kube's admission mounts them, the
// kubernetes Service's variables, and reaches skiffd's API through
// kubernetes.default.svc; the token it read is skiffd's, bound to the pod,
// and stops being valid once the pod is deleted.
func TestServiceAccountsInPods(t *testing.T) {
	bin := testdataProgram(t, "incluster")
	s := newSkiffd(t)
	s.start()
	ctx := context.Background()
	c := s.client

	// The controller's objects of the default namespace.
	waitFor(t, time.Minute, "the default ServiceAccount", func() (bool, error) {
		_, err := c.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err == nil, ignoreNotFound(err)
	})
	caPEM := waitRootCA(t, c, "default")
	if want := string(s.caPEM); caPEM != want {
		t.Fatalf("kube-root-ca.crt ca.crt is not the CA of skiffd's kubeconfig:\n%s\nwant:\n%s", caPEM, want)
	}

	// The pod's client is client-go's in-cluster configuration (the
	// kubernetes Service's variables, the mounted token and ca.crt, TLS
	// verified), in a static program mounted from the host: busybox's wget
	// sends no signature_algorithms, which Go's TLS 1.2 server requires.
	// Its token authenticates it (a token refused would be a 401 even for
	// /version); listing pods waits for a RoleBinding.
	script := `d=` + saDir + `
echo "files=$(ls $d | tr '\n' ' ')"
echo "namespace=$(cat $d/namespace)"
echo "token=$(cat $d/token)"
echo "env=$KUBERNETES_SERVICE_HOST port=$KUBERNETES_SERVICE_PORT https=$KUBERNETES_SERVICE_PORT_HTTPS link=$KUBERNETES_PORT_443_TCP"
exec /opt/incluster/incluster`
	job := shJob("caller", script, 1, 1, 0, corev1.RestartPolicyNever)
	spec := &job.Spec.Template.Spec
	spec.Volumes = []corev1.Volume{{Name: "bin", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: bin}}}}
	spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "bin", MountPath: "/opt/incluster", ReadOnly: true}}
	if _, err := c.BatchV1().Jobs("default").Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var pod corev1.Pod
	podLog := func(what, key string) map[string]string {
		t.Helper()
		var out string
		waitFor(t, 2*time.Minute, what, func() (bool, error) {
			pods, err := c.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "job-name=caller"})
			if err != nil || len(pods.Items) == 0 {
				return false, err
			}
			pod = pods.Items[0]
			if pod.Status.Phase != corev1.PodRunning {
				return false, nil
			}
			out = readLog(t, s, pod.Name, &corev1.PodLogOptions{})
			return strings.Contains(out, key+"="), nil
		})
		return logValues(out)
	}
	got := podLog("the pod to try listing pods", "first")
	svc, err := c.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	clusterIP := svc.Spec.ClusterIP
	if first := strings.TrimSuffix(s.serviceCIDR, "0/24") + "1"; clusterIP != first {
		t.Errorf("kubernetes Service clusterIP %s, want the range's first address %s", clusterIP, first)
	}
	wantEnv := clusterIP + " port=443 https=443 link=tcp://" + clusterIP + ":443"
	if got["env"] != wantEnv {
		t.Errorf("pod env: %q, want %q", got["env"], wantEnv)
	}
	if got["host"] != "https://"+clusterIP+":443" {
		t.Errorf("in-cluster host %q, want the kubernetes Service's", got["host"])
	}
	if got["files"] != "ca.crt namespace token " || got["namespace"] != "default" {
		t.Errorf("volume files %q, namespace %q", got["files"], got["namespace"])
	}
	if !strings.HasPrefix(got["version"], "v1.34") || got["byname"] != got["version"] {
		t.Errorf("/version in the pod: %q, through kubernetes.default.svc: %q", got["version"], got["byname"])
	}
	// What the pod's ca.crt verifies: the API's certificate for the names
	// and address pods use.
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM([]byte(caPEM))
	for _, name := range []string{"kubernetes.default.svc", "kubernetes.default.svc.cluster.local", clusterIP} {
		conn, err := tls.Dial("tcp", s.addr, &tls.Config{RootCAs: roots, ServerName: name})
		if err != nil {
			t.Errorf("ca.crt does not verify the API as %s: %v", name, err)
			continue
		}
		conn.Close()
	}
	if got["first"] != "403" {
		t.Errorf("the pod's first list of pods: %q, want a 403 before any RoleBinding", got["first"])
	}

	// A RoleBinding lets the pod's account list pods.
	if _, err := c.RbacV1().Roles("default").Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "pod-reader"},
		Rules: []rbacv1.PolicyRule{{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"pods"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.RbacV1().RoleBindings("default").Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "caller-reads-pods"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "default", Namespace: "default"}},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "pod-reader"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := podLog("the pod to list pods", "listed"); got["listed"] != "200" {
		t.Errorf("the pod's list of pods after the RoleBinding: %q", got["listed"])
	}

	// skiffd takes the token for the pod's account, bound to the pod.
	podClient := s.tokenClient(got["token"])
	user, err := whoami(podClient)
	if err != nil {
		t.Fatalf("whoami with the pod's token: %v", err)
	}
	sa, err := c.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantUser := authenticationv1.UserInfo{
		Username: "system:serviceaccount:default:default", UID: string(sa.UID),
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"},
		Extra: map[string]authenticationv1.ExtraValue{
			serviceaccount.ExtraPodName: {pod.Name}, serviceaccount.ExtraPodUID: {string(pod.UID)},
			serviceaccount.ExtraNodeName: {pod.Spec.NodeName}, serviceaccount.ExtraCredentialID: user.Extra[serviceaccount.ExtraCredentialID],
		},
	}
	if node, err := c.CoreV1().Nodes().Get(ctx, pod.Spec.NodeName, metav1.GetOptions{}); err == nil {
		wantUser.Extra[serviceaccount.ExtraNodeUID] = authenticationv1.ExtraValue{string(node.UID)}
	}
	if cred := user.Extra[serviceaccount.ExtraCredentialID]; len(cred) != 1 || !strings.HasPrefix(cred[0], "JTI=") {
		t.Errorf("credential-id %v", cred)
	}
	if diff := cmp.Diff(wantUser, user); diff != "" {
		t.Errorf("the pod token's user (-want,+got):\n%s", diff)
	}

	// A deleted pod's token is refused with a 401.
	if err := c.CoreV1().Pods("default").Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(0))}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "the pod to go", func() (bool, error) {
		_, err := c.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), ignoreNotFound(err)
	})
	if _, err := podClient.CoreV1().Pods("default").List(ctx, metav1.ListOptions{}); !apierrors.IsUnauthorized(err) {
		t.Errorf("the deleted pod's token: %v, want 401", err)
	}
}

// TestServiceAccountAdmission checks, through skiffd, what kube's
// ServiceAccount admission and controllers do around pods: the default
// account and the root CA come back when deleted, bare and Job pods get the
// same token volume, automount false leaves it out, a missing account is
// refused, the account's imagePullSecrets reach the pod, and kubectl
// creates tokens.
func TestServiceAccountAdmission(t *testing.T) {
	s := newSkiffd(t)
	s.start()
	ctx := context.Background()
	c := s.client
	createNamespace(t, c, "team")
	// A pod created at once in a new namespace waits for its default
	// account, as kube-apiserver's admission does.
	bare, err := c.CoreV1().Pods("team").Create(ctx, shPod("bare", corev1.RestartPolicyNever, "true"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("a pod in a new namespace: %v", err)
	}
	if bare.Spec.ServiceAccountName != "default" || bare.Spec.DeprecatedServiceAccount != "default" {
		t.Errorf("serviceAccountName %q, serviceAccount %q", bare.Spec.ServiceAccountName, bare.Spec.DeprecatedServiceAccount)
	}

	// The default account comes back, with a new UID.
	old, err := c.CoreV1().ServiceAccounts("team").Get(ctx, "default", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CoreV1().ServiceAccounts("team").Delete(ctx, "default", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "the default ServiceAccount to come back", func() (bool, error) {
		sa, err := c.CoreV1().ServiceAccounts("team").Get(ctx, "default", metav1.GetOptions{})
		return err == nil && sa.UID != old.UID, ignoreNotFound(err)
	})
	// kube-root-ca.crt comes back when deleted, and when changed.
	want := waitRootCA(t, c, "team")
	if err := c.CoreV1().ConfigMaps("team").Delete(ctx, kube.RootCAConfigMap, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := waitRootCA(t, c, "team"); got != want {
		t.Errorf("recreated ca.crt differs")
	}
	cm, err := c.CoreV1().ConfigMaps("team").Get(ctx, kube.RootCAConfigMap, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["ca.crt"] = "tampered"
	if _, err := c.CoreV1().ConfigMaps("team").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "kube-root-ca.crt to be put back", func() (bool, error) {
		cm, err := c.CoreV1().ConfigMaps("team").Get(ctx, kube.RootCAConfigMap, metav1.GetOptions{})
		return err == nil && cm.Data["ca.crt"] == want, err
	})

	// A Job's pod gets the volume a bare pod gets.
	job := shJob("j", "true", 1, 1, 0, corev1.RestartPolicyNever)
	if _, err := c.BatchV1().Jobs("team").Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var jobPod corev1.Pod
	waitFor(t, time.Minute, "the Job's pod", func() (bool, error) {
		pods, err := c.CoreV1().Pods("team").List(ctx, metav1.ListOptions{LabelSelector: "job-name=j"})
		if err != nil || len(pods.Items) == 0 {
			return false, err
		}
		jobPod = pods.Items[0]
		return true, nil
	})
	bareVol, jobVol := tokenVolume(t, bare), tokenVolume(t, &jobPod)
	if diff := cmp.Diff(kube.ServiceAccountTokenVolume(), bareVol.Projected); diff != "" {
		t.Errorf("bare pod's token volume (-kube's,+got):\n%s", diff)
	}
	if diff := cmp.Diff(bareVol.Projected, jobVol.Projected); diff != "" {
		t.Errorf("Job pod's token volume differs from a bare pod's (-bare,+job):\n%s", diff)
	}
	for _, p := range []*corev1.Pod{bare, &jobPod} {
		vol := tokenVolume(t, p)
		wantMount := []corev1.VolumeMount{{Name: vol.Name, ReadOnly: true, MountPath: saDir}}
		if diff := cmp.Diff(wantMount, p.Spec.Containers[0].VolumeMounts[len(p.Spec.Containers[0].VolumeMounts)-1:]); diff != "" {
			t.Errorf("pod %s's mount (-want,+got):\n%s", p.Name, diff)
		}
	}

	// automountServiceAccountToken: false on the pod, or on the account.
	quiet := shPod("quiet", corev1.RestartPolicyNever, "true")
	quiet.Spec.AutomountServiceAccountToken = ptr(false)
	quiet, err = c.CoreV1().Pods("team").Create(ctx, quiet, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CoreV1().ServiceAccounts("team").Create(ctx, &corev1.ServiceAccount{
		ObjectMeta:                   metav1.ObjectMeta{Name: "builder"},
		AutomountServiceAccountToken: ptr(false),
		ImagePullSecrets:             []corev1.LocalObjectReference{{Name: "registry"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	built := shPod("built", corev1.RestartPolicyNever, "true")
	built.Spec.ServiceAccountName = "builder"
	built, err = c.CoreV1().Pods("team").Create(ctx, built, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []*corev1.Pod{quiet, built} {
		for _, v := range p.Spec.Volumes {
			if strings.HasPrefix(v.Name, kube.ServiceAccountVolumePrefix) {
				t.Errorf("pod %s has the token volume %s although automount is off", p.Name, v.Name)
			}
		}
	}
	if diff := cmp.Diff([]corev1.LocalObjectReference{{Name: "registry"}}, built.Spec.ImagePullSecrets); diff != "" {
		t.Errorf("the account's imagePullSecrets on its pod (-want,+got):\n%s", diff)
	}

	// A pod of a missing account is refused with kube's 403.
	ghost := shPod("ghost", corev1.RestartPolicyNever, "true")
	ghost.Spec.ServiceAccountName = "ghost"
	_, err = c.CoreV1().Pods("team").Create(ctx, ghost, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || err.Error() != `pods "ghost" is forbidden: error looking up service account team/ghost: serviceaccount "ghost" not found` {
		t.Errorf("a pod of a missing account: %v", err)
	}

	// A Job of a missing account: its pods are refused, with kube's event,
	// until the account is created.
	robotJob := shJob("robot", "true", 1, 1, 0, corev1.RestartPolicyNever)
	robotJob.Spec.Template.Spec.ServiceAccountName = "robot"
	if _, err := c.BatchV1().Jobs("team").Create(ctx, robotJob, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const refused = `Error creating: pods "robot-" is forbidden: error looking up service account team/robot: serviceaccount "robot" not found`
	waitFor(t, time.Minute, "the Job's FailedCreate event", func() (bool, error) {
		evs, err := c.CoreV1().Events("team").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=robot"})
		if err != nil {
			return false, err
		}
		for _, ev := range evs.Items {
			if ev.Reason == "FailedCreate" && ev.Type == corev1.EventTypeWarning && ev.Message == refused {
				return true, nil
			}
		}
		return false, nil
	})
	if _, err := c.CoreV1().ServiceAccounts("team").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "robot"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "the Job of the new account to complete", func() (bool, error) {
		j, err := c.BatchV1().Jobs("team").Get(ctx, "robot", metav1.GetOptions{})
		return err == nil && j.Status.Succeeded == 1, err
	})

	// kubectl create token, the bounds of a TokenRequest, kubectl get sa.
	tok := strings.TrimSpace(s.kubectl(t, "-n", "team", "create", "token", "default", "--duration=20m"))
	user, err := whoami(s.tokenClient(tok))
	if err != nil || user.Username != "system:serviceaccount:team:default" {
		t.Errorf("whoami with a requested token: user %+v, %v", user, err)
	}
	claims, _, err := s.tokenAuthenticator(t).Verify(tok)
	if err != nil {
		t.Fatal(err)
	}
	if life := claims.Expiry.Time().Sub(claims.IssuedAt.Time()); life != 20*time.Minute {
		t.Errorf("token lifetime %v, want 20m", life)
	}
	_, err = c.CoreV1().ServiceAccounts("team").CreateToken(ctx, "default", &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr(int64(60))}}, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes") {
		t.Errorf("a one-minute token: %v", err)
	}
	_, err = c.CoreV1().ServiceAccounts("team").CreateToken(ctx, "default", &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "built"}}},
		metav1.CreateOptions{})
	if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), `cannot bind token for serviceaccount "default" to pod running with different serviceaccount name.`) {
		t.Errorf("a token bound to another account's pod: %v", err)
	}
	table := s.kubectl(t, "-n", "team", "get", "sa")
	if lines := strings.Split(strings.TrimSpace(table), "\n"); len(lines) != 4 || strings.Join(strings.Fields(lines[0]), " ") != "NAME SECRETS AGE" ||
		!strings.HasPrefix(strings.Join(strings.Fields(lines[2]), " "), "default 0 ") {
		t.Errorf("kubectl get sa:\n%s", table)
	}

	// The kubernetes Service and its endpoints come back, as kube-apiserver
	// reconciles them.
	if err := c.CoreV1().Services("default").Delete(ctx, "kubernetes", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.DiscoveryV1().EndpointSlices("default").Delete(ctx, "kubernetes", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "the kubernetes Service and its slice to come back", func() (bool, error) {
		svc, err := c.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		if err != nil {
			return false, ignoreNotFound(err)
		}
		slice, err := c.DiscoveryV1().EndpointSlices("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		if err != nil {
			return false, ignoreNotFound(err)
		}
		return svc.Spec.Ports[0].Port == 443 && len(slice.Endpoints) == 1 && *slice.Ports[0].Port == int32(mustAtoi(t, s.port())), nil
	})

	// A restart keeps the signing key: the token is still good.
	s.stop()
	s.start()
	if user, err := whoami(s.tokenClient(tok)); err != nil || user.Username != "system:serviceaccount:team:default" {
		t.Errorf("whoami with the token after a restart: user %+v, %v", user, err)
	}
}

// TestServiceAccountTokenRefresh: the node asks for a pod's token again
// at 80 % of its life, and the new one replaces the file in place.
func TestServiceAccountTokenRefresh(t *testing.T) {
	s := newSkiffd(t, "--service-account-max-token-expiration", "10s")
	s.start()
	ctx := context.Background()
	script := `t0=$(cat ` + saDir + `/token)
while [ "$(cat ` + saDir + `/token)" = "$t0" ]; do sleep 0.2; done
echo "old=$t0"
echo "new=$(cat ` + saDir + `/token)"`
	if _, err := s.client.CoreV1().Pods("default").Create(ctx, shPod("refresh", corev1.RestartPolicyNever, script), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "the token to be refreshed", func() (bool, error) {
		p, err := s.client.CoreV1().Pods("default").Get(ctx, "refresh", metav1.GetOptions{})
		if err != nil || p.Status.Phase == corev1.PodFailed {
			return false, err
		}
		return p.Status.Phase == corev1.PodSucceeded, nil
	})
	got := logValues(readLog(t, s, "refresh", &corev1.PodLogOptions{}))
	authn := s.tokenAuthenticator(t)
	for _, which := range []string{"old", "new"} {
		c, _, err := authn.Verify(got[which])
		if err != nil {
			t.Fatalf("%s token: %v", which, err)
		}
		// NOTE: the 3607 s a pod's token asks for, shortened to the maximum.
		if life := c.Expiry.Time().Sub(c.IssuedAt.Time()); life != 10*time.Second {
			t.Errorf("%s token's lifetime %v, want 10s", which, life)
		}
	}
}

// waitRootCA waits for the kube-root-ca.crt ConfigMap of ns and returns its
// ca.crt.
func waitRootCA(t *testing.T, c kubernetes.Interface, ns string) string {
	t.Helper()
	var ca string
	waitFor(t, time.Minute, "kube-root-ca.crt in "+ns, func() (bool, error) {
		cm, err := c.CoreV1().ConfigMaps(ns).Get(context.Background(), kube.RootCAConfigMap, metav1.GetOptions{})
		if err != nil {
			return false, ignoreNotFound(err)
		}
		ca = cm.Data["ca.crt"]
		return true, nil
	})
	return ca
}

// testdataProgram builds the program testdata/<name>, statically, and
// returns the directory holding it (removed after the test, and after the
// skiffds it started before), for a pod to mount.
func testdataProgram(t *testing.T, name string) string {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("go", "build", "-o", filepath.Join(dir, name), "./testdata/"+name)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building testdata/%s: %v\n%s", name, err, out)
	}
	return dir
}

// tokenAuthenticator verifies tokens with skiffd's ServiceAccount key, its
// objects read through its API.
func (s *skiffd) tokenAuthenticator(t *testing.T) *serviceaccount.Authenticator {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(s.dataDir, "pki", "service-account-ecdsa.key"))
	if err != nil {
		t.Fatal(err)
	}
	key, err := keyutil.ParsePrivateKeyPEM(b)
	if err != nil {
		t.Fatal(err)
	}
	a, err := serviceaccount.NewAuthenticator(serviceaccount.DefaultIssuer, []crypto.PublicKey{key.(crypto.Signer).Public()},
		[]string{serviceaccount.DefaultIssuer}, apiGetter{s.client})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// apiGetter reads the objects a token names through the API.
type apiGetter struct{ c kubernetes.Interface }

func (g apiGetter) ServiceAccount(ns, name string) (*corev1.ServiceAccount, error) {
	return g.c.CoreV1().ServiceAccounts(ns).Get(context.Background(), name, metav1.GetOptions{})
}

func (g apiGetter) Pod(ns, name string) (*corev1.Pod, error) {
	return g.c.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
}

func (g apiGetter) Secret(ns, name string) (*corev1.Secret, error) {
	return g.c.CoreV1().Secrets(ns).Get(context.Background(), name, metav1.GetOptions{})
}

// tokenVolume is the pod's kube-api-access volume.
func tokenVolume(t *testing.T, p *corev1.Pod) corev1.Volume {
	t.Helper()
	for _, v := range p.Spec.Volumes {
		if strings.HasPrefix(v.Name, kube.ServiceAccountVolumePrefix) && len(v.Name) == len(kube.ServiceAccountVolumePrefix)+5 {
			return v
		}
	}
	t.Fatalf("pod %s has no token volume: %+v", p.Name, p.Spec.Volumes)
	return corev1.Volume{}
}

// logValues reads "key=value" lines.
func logValues(out string) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			m[k] = v
		}
	}
	return m
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// TestServiceAccountTokensAcrossTheKeyChange: skiffd signs tokens ES256;
// a token an earlier skiffd signed RS256 with the key it left in the data
// dir is still the ServiceAccount's, one of any other RSA key is refused.
func TestServiceAccountTokensAcrossTheKeyChange(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	earlier, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pem, err := keyutil.MarshalPrivateKeyToPEM(earlier)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(s.dataDir, "pki"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.dataDir, "pki", "service-account.key"), pem, 0o600); err != nil {
		t.Fatal(err)
	}
	s.start()
	ctx := context.Background()
	var sa *corev1.ServiceAccount
	waitFor(t, time.Minute, "the default ServiceAccount", func() (bool, error) {
		got, err := s.client.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		sa = got
		return err == nil, nil
	})

	tr, err := s.client.CoreV1().ServiceAccounts("default").CreateToken(ctx, "default", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	header, err := base64.RawURLEncoding.DecodeString(strings.Split(tr.Status.Token, ".")[0])
	if err != nil || !strings.Contains(string(header), `"alg":"ES256"`) {
		t.Errorf("a new token's header %s (%v), want ES256", header, err)
	}

	sign := func(key *rsa.PrivateKey) string {
		is, err := serviceaccount.NewIssuer(serviceaccount.DefaultIssuer, key)
		if err != nil {
			t.Fatal(err)
		}
		tok, _, err := is.Issue(serviceaccount.Binding{ServiceAccount: sa}, []string{serviceaccount.DefaultIssuer}, time.Hour, 0)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	review, err := s.tokenClient(sign(earlier)).AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("a token of the earlier key: %v", err)
	}
	if got := review.Status.UserInfo.Username; got != "system:serviceaccount:default:default" {
		t.Errorf("a token of the earlier key is %q's", got)
	}
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.tokenClient(sign(other)).AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{}); !apierrors.IsUnauthorized(err) {
		t.Errorf("a token of another key: %v, want 401", err)
	}
}
