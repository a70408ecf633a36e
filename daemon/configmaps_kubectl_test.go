//go:build integration

package daemon_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// TestKubectlConfigMapsAndSecrets drives kubectl's ConfigMap and Secret
// commands against skiffd: create configmap from files and literals,
// create secret generic, docker-registry and tls, apply -k with generators
// (hash-suffixed names written into the Job that uses them), and refusals
// of bad input with kube's messages.
func TestKubectlConfigMapsAndSecrets(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.start()
	ctx := context.Background()
	c := s.client
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}

	// create configmap: a text file goes to data, a binary one to binaryData.
	text := write("app.properties", []byte("a=1\n"))
	bin := write("logo.bin", []byte{0xff, 0xfe, 0x00, 0x01})
	s.kubectl(t, "create", "configmap", "files", "--from-file="+text, "--from-file="+bin, "--from-literal=level=debug")
	cm, err := c.CoreV1().ConfigMaps("default").Get(ctx, "files", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data["app.properties"] != "a=1\n" || cm.Data["level"] != "debug" || string(cm.BinaryData["logo.bin"]) != "\xff\xfe\x00\x01" {
		t.Errorf("configmap files: data %q binaryData %q", cm.Data, cm.BinaryData)
	}

	// create secret generic, docker-registry, tls; a watch of TLS Secrets
	// (field selector on the type) sees the one among them.
	tlsWatch, err := c.CoreV1().Secrets("default").Watch(ctx, metav1.ListOptions{FieldSelector: "type=kubernetes.io/tls"})
	if err != nil {
		t.Fatal(err)
	}
	defer tlsWatch.Stop()
	s.kubectl(t, "create", "secret", "generic", "plain", "--from-literal=password=pa55")
	s.kubectl(t, "create", "secret", "docker-registry", "regcred", "--docker-server=registry.example:5000",
		"--docker-username=robot", "--docker-password=pw")
	certFile, keyFile := selfSignedCert(t, dir)
	s.kubectl(t, "create", "secret", "tls", "web-tls", "--cert="+certFile, "--key="+keyFile)
	out := s.kubectl(t, "get", "secrets")
	for _, want := range []string{`plain\s+Opaque\s+1\s`, `regcred\s+kubernetes.io/dockerconfigjson\s+1\s`, `web-tls\s+kubernetes.io/tls\s+2\s`} {
		if !regexpMatch(want, out) {
			t.Errorf("kubectl get secrets: no line like %q in\n%s", want, out)
		}
	}
	select {
	case ev := <-tlsWatch.ResultChan():
		if sec, ok := ev.Object.(*corev1.Secret); !ok || ev.Type != watch.Added || sec.Name != "web-tls" || len(sec.Data) != 2 {
			t.Errorf("the TLS watch's first event: %s %#v", ev.Type, ev.Object)
		}
	case <-time.After(30 * time.Second):
		t.Error("the TLS watch saw nothing")
	}
	reg, err := c.CoreV1().Secrets("default").Get(ctx, "regcred", metav1.GetOptions{})
	if err != nil || !strings.Contains(string(reg.Data[corev1.DockerConfigJsonKey]), `"registry.example:5000"`) {
		t.Errorf("regcred: %v %q", err, reg.Data)
	}

	// apply -k: the generators' hash-suffixed names reach the Job.
	out = s.kubectl(t, "apply", "-k", "testdata/kustomize")
	if !regexpMatch(`configmap/app-config-[a-z0-9]{10} created`, out) || !regexpMatch(`secret/app-secret-[a-z0-9]{10} created`, out) {
		t.Errorf("kubectl apply -k said:\n%s", out)
	}
	job := waitJob(t, c, "default", "kustomized", batchv1.JobComplete, 90*time.Second)
	if got, want := podLog(t, c, jobPods(t, c, job)[0].Name), "mode=batch token=kustomized-s3cret\n[run]\nworkers=2\n"; got != want {
		t.Errorf("the kustomized Job printed %q, want %q", got, want)
	}

	// explain reads the OpenAPI documents.
	if out := s.kubectl(t, "explain", "secret.stringData"); !strings.Contains(out, "stringData allows specifying non-binary secret data in string form") {
		t.Errorf("kubectl explain secret.stringData:\n%s", out)
	}
	if out := s.kubectl(t, "explain", "configmap.binaryData"); !strings.Contains(out, "FIELD: binaryData <map[string]string>") {
		t.Errorf("kubectl explain configmap.binaryData:\n%s", out)
	}

	// Bad input: kube's refusals.
	big := write("big", []byte(strings.Repeat("x", 2<<20)))
	cmd := s.kubectlCmd("", "create", "configmap", "big", "--from-file="+big)
	msg, err := cmd.CombinedOutput()
	if want := `failed to create configmap: ConfigMap "big" is invalid: []: Too long: may not be more than 1048576 bytes`; err == nil || !strings.Contains(string(msg), want) {
		t.Errorf("a 2 MiB ConfigMap: %v %s, want %q", err, msg, want)
	}
	resp, err := s.httpClient().Post(s.url("/api/v1/namespaces/default/secrets"), "application/json",
		strings.NewReader(`{"metadata":{"name":"bin"},"data":{"k":"not base64!"}}`))
	if err != nil {
		t.Fatal(err)
	}
	body := readAll(t, resp.Body)
	if want := `Secret in version \"v1\" cannot be handled as a Secret: illegal base64 data at input byte 3`; resp.StatusCode != 400 || !strings.Contains(body, want) {
		t.Errorf("binary data in a Secret's data: %d %s", resp.StatusCode, body)
	}

	// A Job whose pods would reach out of their volume or take a key that
	// climbs out, or give a file a mode beyond 0777, is refused whole.
	badJob := write("bad-job.yaml", []byte(`apiVersion: batch/v1
kind: Job
metadata:
  name: bad-refs
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: c
        image: busybox:1.35
        env:
        - name: K
          valueFrom:
            secretKeyRef: {name: creds, key: ../x}
        volumeMounts:
        - {name: s, mountPath: /s}
      volumes:
      - name: s
        secret:
          secretName: creds
          items:
          - {key: token, path: ../x, mode: 512}
`))
	msg, err = s.kubectlCmd("", "create", "-f", badJob).CombinedOutput()
	for _, want := range []string{
		`The Job "bad-refs" is invalid`,
		`spec.template.spec.volumes[0].secret.items[0].path: Invalid value: "../x": must not contain '..'`,
		`spec.template.spec.volumes[0].secret.items[0].mode: Invalid value: 512: must be a number between 0 and 0777 (octal), both inclusive`,
		`spec.template.spec.containers[0].env[0].valueFrom.secretKeyRef.key: Invalid value: "../x": must not start with '..'`,
	} {
		if err == nil || !strings.Contains(string(msg), want) {
			t.Errorf("a Job with bad Secret references: %v\n%s\nwant %q", err, msg, want)
		}
	}

	// What kube only warns about is created, with kubectl printing the
	// warnings: a pull secret named twice, volume files hiding each other.
	warned := write("warned.yaml", []byte(`apiVersion: batch/v1
kind: Job
metadata:
  name: warned
spec:
  suspend: true
  template:
    spec:
      restartPolicy: Never
      imagePullSecrets: [{name: regcred}, {name: regcred}]
      containers: [{name: c, image: busybox:1.35}]
      volumes:
      - name: cfg
        configMap:
          name: conf
          items: [{key: a, path: a}, {key: b, path: a/b}]
---
apiVersion: v1
kind: Pod
metadata:
  name: warned
spec:
  restartPolicy: Never
  imagePullSecrets: [{name: ""}]
  containers: [{name: c, image: busybox:1.35, command: ["true"]}]
`))
	msg, err = s.kubectlCmd("", "create", "-f", warned).CombinedOutput()
	for _, want := range []string{
		`Warning: spec.template.spec.imagePullSecrets[1].name: duplicate name "regcred"`,
		`Warning: volume "cfg" (ConfigMap "conf"): overlapping paths: "a/b" with "a"`,
		`Warning: spec.imagePullSecrets[0].name: invalid empty name ""`,
		"job.batch/warned created",
		"pod/warned created",
	} {
		if err != nil || !strings.Contains(string(msg), want) {
			t.Errorf("kubectl create of what kube warns about: %v\n%s\nwant %q", err, msg, want)
		}
	}
}

// selfSignedCert writes a certificate and its key, PEM-encoded, in dir.
func selfSignedCert(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "web.example"},
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	for f, block := range map[string]*pem.Block{certFile: {Type: "CERTIFICATE", Bytes: der}, keyFile: {Type: "EC PRIVATE KEY", Bytes: keyDER}} {
		if err := os.WriteFile(f, pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return certFile, keyFile
}
