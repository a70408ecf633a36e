//go:build integration && helm

package daemon_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// helmEnv names the helm binary the Helm test runs (make helm-test builds
// it from the Go module proxy).
const helmEnv = "SKIFF_HELM"

// TestHelm installs, tests, upgrades, rolls back, lists and uninstalls the
// demo chart (a ConfigMap, a Secret, a Job using both, pre-install and
// post-install hook Jobs and a test Job) with Helm 3 against skiffd, with
// each of Helm's release drivers: Secrets (the default) and ConfigMaps.
func TestHelm(t *testing.T) {
	helm := os.Getenv(helmEnv)
	if helm == "" {
		t.Fatalf("%s must name the helm binary (make helm-test sets it)", helmEnv)
	}
	s := newSkiffd(t)
	s.start()
	home := t.TempDir()
	kubeconfig := s.kubeconfig // as skiffd wrote it
	for _, driver := range []string{"secret", "configmap"} {
		t.Run(driver, func(t *testing.T) {
			rel := "demo-" + driver
			run := func(args ...string) string {
				t.Helper()
				cmd := exec.Command(helm, args...)
				cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "HELM_DRIVER="+driver,
					"HELM_CACHE_HOME="+filepath.Join(home, "cache"), "HELM_CONFIG_HOME="+filepath.Join(home, "config"),
					"HELM_DATA_HOME="+filepath.Join(home, "data"))
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
				}
				return string(out)
			}
			wait := []string{"--wait", "--wait-for-jobs", "--timeout", "2m"}

			out := run(append([]string{"install", rel, "testdata/helm/demo"}, wait...)...)
			if !strings.Contains(out, "STATUS: deployed") || !strings.Contains(out, "REVISION: 1") {
				t.Errorf("helm install said:\n%s", out)
			}
			s.checkHelmJob(t, rel+"-main-r1", "hello s3cret\n")
			s.checkHelmJob(t, rel+"-pre-install", "preparing "+rel+"\n")
			s.checkReleases(t, driver, rel, 1)
			if out := run("test", rel); !strings.Contains(out, "TEST SUITE:     "+rel+"-test") || !strings.Contains(out, "Phase:          Succeeded") {
				t.Errorf("helm test said:\n%s", out)
			}

			out = run(append([]string{"upgrade", rel, "testdata/helm/demo", "--set", "greeting=hi"}, wait...)...)
			if !strings.Contains(out, "has been upgraded") || !strings.Contains(out, "REVISION: 2") {
				t.Errorf("helm upgrade said:\n%s", out)
			}
			s.checkHelmJob(t, rel+"-main-r2", "hi s3cret\n")

			out = run(append([]string{"rollback", rel, "1"}, wait...)...)
			if !strings.Contains(out, "Rollback was a success") {
				t.Errorf("helm rollback said:\n%s", out)
			}
			cm, err := s.client.CoreV1().ConfigMaps("default").Get(context.Background(), rel+"-config", metav1.GetOptions{})
			if err != nil || cm.Data["greeting"] != "hello" {
				t.Errorf("after the rollback the ConfigMap is %v %v, want greeting hello", cm.Data, err)
			}
			s.checkReleases(t, driver, rel, 3)
			if out := run("list"); !regexpMatch(rel+`\s+default\s+3\s+.*\sdeployed\s+demo-0.1.0\s+1.0`, out) {
				t.Errorf("helm list said:\n%s", out)
			}

			if out := run("uninstall", rel); !strings.Contains(out, `release "`+rel+`" uninstalled`) {
				t.Errorf("helm uninstall said:\n%s", out)
			}
			s.checkReleases(t, driver, rel, 0)
			waitFor(t, time.Minute, "the release's objects gone", func() (bool, error) {
				_, cmErr := s.client.CoreV1().ConfigMaps("default").Get(context.Background(), rel+"-config", metav1.GetOptions{})
				_, secErr := s.client.CoreV1().Secrets("default").Get(context.Background(), rel+"-secret", metav1.GetOptions{})
				jobs, err := s.client.BatchV1().Jobs("default").List(context.Background(), metav1.ListOptions{})
				if err != nil {
					return false, err
				}
				for _, j := range jobs.Items {
					if strings.HasPrefix(j.Name, rel+"-main") {
						return false, nil
					}
				}
				return cmErr != nil && secErr != nil, nil
			})
		})
	}
}

// checkHelmJob waits for a Job of the release to complete and compares
// its pod's output.
func (s *skiffd) checkHelmJob(t *testing.T, name, want string) {
	t.Helper()
	job := waitJob(t, s.client, "default", name, batchv1.JobComplete, 90*time.Second)
	if got := podLog(t, s.client, jobPods(t, s.client, job)[0].Name); got != want {
		t.Errorf("job %s printed %q, want %q", name, got, want)
	}
}

// checkReleases checks that Helm keeps n revisions of rel as its driver's
// objects (Secrets of type helm.sh/release.v1, or ConfigMaps), labelled
// as Helm selects them.
func (s *skiffd) checkReleases(t *testing.T, driver, rel string, n int) {
	t.Helper()
	sel := metav1.ListOptions{LabelSelector: "owner=helm,name=" + rel}
	var names []string
	switch driver {
	case "secret":
		list, err := s.client.CoreV1().Secrets("default").List(context.Background(), sel)
		if err != nil {
			t.Fatal(err)
		}
		for _, sec := range list.Items {
			if sec.Type != "helm.sh/release.v1" {
				t.Errorf("release secret %s has type %q", sec.Name, sec.Type)
			}
			names = append(names, sec.Name)
		}
	case "configmap":
		list, err := s.client.CoreV1().ConfigMaps("default").List(context.Background(), sel)
		if err != nil {
			t.Fatal(err)
		}
		for _, cm := range list.Items {
			names = append(names, cm.Name)
		}
	}
	if len(names) != n {
		t.Errorf("%d release records of %s (%v), want %d", len(names), rel, names, n)
	}
	for i := 1; i <= n; i++ {
		if want := fmt.Sprintf("sh.helm.release.v1.%s.v%d", rel, i); !strings.Contains(strings.Join(names, " "), want) {
			t.Errorf("no release record %s among %v", want, names)
		}
	}
}
