package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestReadReport(t *testing.T) {
	report := `<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="4" disabled="2" errors="0" failures="1" time="30">
  <testsuite name="Kubernetes e2e suite" package="/x" tests="4">
    <testcase name="[SynchronizedBeforeSuite]" classname="Kubernetes e2e suite" status="passed" time="1.2"></testcase>
    <testcase name="[SynchronizedAfterSuite]" classname="Kubernetes e2e suite" status="failed" time="1"><failure type="failed">[FAILED] namespaces left</failure></testcase>
    <testcase name="[It] [sig-apps] Job should run a job to completion" classname="Kubernetes e2e suite" status="passed" time="12.5"></testcase>
    <testcase name="[It] [sig-apps] Job should fail | badly" classname="Kubernetes e2e suite" status="failed" time="3">
      <failure type="failed">
[FAILED] failed to create job: the server could not find the requested resource
In [It] at: job.go:10 @ 11/25/26 07:00:00.000
      </failure>
    </testcase>
    <testcase name="[It] [sig-node] Pods should be out of focus" classname="Kubernetes e2e suite" status="skipped" time="0"><skipped message="skipped"></skipped></testcase>
    <testcase name="[It] [sig-node] Pods should need two nodes" classname="Kubernetes e2e suite" status="skipped" time="0.1"><skipped message="skipped - Requires at least 2 nodes (not 1)"></skipped></testcase>
  </testsuite>
</testsuites>`
	got, err := readReport(strings.NewReader(report))
	if err != nil {
		t.Fatal(err)
	}
	want := []spec{
		{Name: "[SynchronizedAfterSuite]", Result: "failed", Seconds: 1, Detail: "namespaces left"},
		{Name: "[sig-apps] Job should run a job to completion", Result: "passed", Seconds: 12.5},
		{Name: "[sig-apps] Job should fail | badly", Result: "failed", Seconds: 3, Detail: "failed to create job: the server could not find the requested resource"},
		{Name: "[sig-node] Pods should need two nodes", Result: "skipped", Seconds: 0.1, Detail: "Requires at least 2 nodes (not 1)"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("readReport (-want,+got):\n%s", diff)
	}

	var out strings.Builder
	writeSummary(&out, got)
	for _, line := range []string{
		"4 specs ran: 1 passed, 2 failed, 1 skipped at run time",
		`| [sig-apps] Job should fail \| badly | failed | 3 | failed to create job: the server could not find the requested resource |`,
	} {
		if !strings.Contains(out.String(), line+"\n") {
			t.Errorf("summary lacks %q:\n%s", line, out.String())
		}
	}
	if strings.Index(out.String(), "should fail") > strings.Index(out.String(), "run a job to completion") {
		t.Errorf("failures are not listed first:\n%s", out.String())
	}
}
