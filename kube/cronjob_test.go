package kube

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// baseCronJobYAML is the manifest every CronJob case starts from.
const baseCronJobYAML = `
metadata: {name: cj, namespace: default, uid: uid}
spec:
  schedule: "*/5 * * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers: [{name: c, image: "busybox:1.35"}]
`

// cronJobFromYAML is baseCronJobYAML with the fragments merged over it.
func cronJobFromYAML(t *testing.T, fragments ...string) *batchv1.CronJob {
	t.Helper()
	doc := map[string]any{}
	for _, f := range append([]string{baseCronJobYAML}, fragments...) {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(f), &m); err != nil {
			t.Fatalf("fragment %q: %v", f, err)
		}
		mergeInto(doc, m)
	}
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	var cj batchv1.CronJob
	if err := json.Unmarshal(data, &cj); err != nil {
		t.Fatalf("decoding %s: %v", data, err)
	}
	return &cj
}

func TestCronJobDefaults(t *testing.T) {
	cj := cronJobFromYAML(t, `status: {lastScheduleTime: "2026-01-01T00:00:00Z"}`)
	PrepareCronJobForCreate(cj)
	want := batchv1.CronJobSpec{
		Schedule:                   "*/5 * * * *",
		ConcurrencyPolicy:          batchv1.AllowConcurrent,
		Suspend:                    ptr.To(false),
		SuccessfulJobsHistoryLimit: ptr.To(int32(3)),
		FailedJobsHistoryLimit:     ptr.To(int32(1)),
	}
	got := cj.Spec
	got.JobTemplate = batchv1.JobTemplateSpec{}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("spec (-want,+got):\n%s", diff)
	}
	if cj.Status.LastScheduleTime != nil {
		t.Error("a created CronJob keeps the status it was sent with")
	}
	tmpl := cj.Spec.JobTemplate.Spec
	if tmpl.BackoffLimit != nil || tmpl.Completions != nil || tmpl.Selector != nil {
		t.Errorf("the template's Job spec is defaulted: %+v", tmpl)
	}
	if ps := tmpl.Template.Spec; ps.DNSPolicy != corev1.DNSClusterFirst || ps.Containers[0].ImagePullPolicy != corev1.PullIfNotPresent {
		t.Errorf("the template's pod spec is not defaulted: %+v", ps)
	}
}

func TestValidateCronJob(t *testing.T) {
	long := "a123456789b123456789c123456789d123456789e123456789f12"
	tests := map[string]validationCase{
		"valid":         {yaml: ``},
		"a macro":       {yaml: `spec: {schedule: "@daily"}`},
		"a time zone":   {yaml: `spec: {timeZone: "America/New_York"}`},
		"no schedule":   {yaml: `spec: {schedule: ""}`, want: []string{"FieldValueRequired spec.schedule: Required value"}},
		"bad minute":    {yaml: `spec: {schedule: "61 * * * *"}`, want: []string{`FieldValueInvalid spec.schedule: Invalid value: "61 * * * *": end of range (61) above maximum (59): 61`}},
		"three fields":  {yaml: `spec: {schedule: "* * *"}`, want: []string{`FieldValueInvalid spec.schedule: Invalid value: "* * *": expected exactly 5 fields, found 3: [* * *]`}},
		"unknown macro": {yaml: `spec: {schedule: "@fortnightly"}`, want: []string{`FieldValueInvalid spec.schedule: Invalid value: "@fortnightly": unrecognized descriptor: @fortnightly`}},
		"TZ in the schedule": {yaml: `spec: {schedule: "CRON_TZ=UTC * * * * *"}`,
			want: []string{`FieldValueInvalid spec.schedule: Invalid value: "CRON_TZ=UTC * * * * *": cannot use TZ or CRON_TZ in schedule, use timeZone field instead`}},
		"empty time zone":   {yaml: `spec: {timeZone: ""}`, want: []string{`FieldValueInvalid spec.timeZone: Invalid value: "": timeZone must be nil or non-empty string`}},
		"unknown time zone": {yaml: `spec: {timeZone: "Mars/Olympus"}`, want: []string{`FieldValueInvalid spec.timeZone: Invalid value: "Mars/Olympus": unknown time zone Mars/Olympus`}},
		"a path":            {yaml: `spec: {timeZone: "../etc/passwd"}`, want: []string{`FieldValueInvalid spec.timeZone: Invalid value: "../etc/passwd": unknown time zone ../etc/passwd`}},
		"Local": {yaml: `spec: {timeZone: "Local"}`,
			want: []string{`FieldValueInvalid spec.timeZone: Invalid value: "Local": timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones`}},
		"negative deadline": {yaml: `spec: {startingDeadlineSeconds: -5}`,
			want: []string{`FieldValueInvalid spec.startingDeadlineSeconds: Invalid value: -5: must be greater than or equal to 0`}},
		"zero history is fine": {yaml: `spec: {successfulJobsHistoryLimit: 0, failedJobsHistoryLimit: 0}`},
		"negative history": {yaml: `spec: {successfulJobsHistoryLimit: -1, failedJobsHistoryLimit: -1}`,
			want: []string{`FieldValueInvalid spec.successfulJobsHistoryLimit: Invalid value: -1: must be greater than or equal to 0`,
				`FieldValueInvalid spec.failedJobsHistoryLimit: Invalid value: -1: must be greater than or equal to 0`}},
		"bad policy": {yaml: `spec: {concurrencyPolicy: Never}`,
			want: []string{`FieldValueNotSupported spec.concurrencyPolicy: Unsupported value: "Never": supported values: "Allow", "Forbid", "Replace"`}},
		"a selector": {yaml: `spec: {jobTemplate: {spec: {selector: {matchLabels: {a: b}}}}}`,
			want: []string{"FieldValueInvalid spec.jobTemplate.spec.selector: Invalid value: …: `selector` will be auto-generated"}},
		"manualSelector": {yaml: `spec: {jobTemplate: {spec: {manualSelector: true}}}`,
			want: []string{`FieldValueNotSupported spec.jobTemplate.spec.manualSelector: Unsupported value: true: supported values: "nil", "false"`}},
		"the Job's rules": {yaml: `spec: {jobTemplate: {spec: {backoffLimitPerIndex: 1, template: {spec: {restartPolicy: Always}}}}}`,
			want: []string{`FieldValueInvalid spec.jobTemplate.spec.backoffLimitPerIndex: Invalid value: 1: requires indexed completion mode`,
				`FieldValueRequired spec.jobTemplate.spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"`}},
		"a name too long for its Jobs": {yaml: `metadata: {name: ` + long + `}`,
			want: []string{`FieldValueInvalid metadata.name: Invalid value: "` + long + `": must be no more than 52 characters`}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cj := cronJobFromYAML(t, tc.yaml)
			PrepareCronJobForCreate(cj)
			matchLines(t, tc.want, causeLines(ValidateCronJob(cj)))
		})
	}
}

func TestValidateCronJobUpdate(t *testing.T) {
	tests := map[string]struct {
		old, update string
		want        []string
	}{
		"a stored TZ may stay": {old: `spec: {schedule: "TZ=UTC 0 * * * *"}`, update: `spec: {schedule: "TZ=UTC 5 * * * *"}`},
		"but not with timeZone": {old: `spec: {schedule: "TZ=UTC 0 * * * *"}`, update: `spec: {timeZone: UTC}`,
			want: []string{`FieldValueInvalid spec.schedule: Invalid value: "TZ=UTC 0 * * * *": cannot use both timeZone field and TZ or CRON_TZ in schedule`}},
		"TZ added": {update: `spec: {schedule: "TZ=UTC 0 * * * *"}`,
			want: []string{`FieldValueInvalid spec.schedule: Invalid value: "TZ=UTC 0 * * * *": cannot use TZ or CRON_TZ in schedule, use timeZone field instead`}},
		"an unchanged zone is not checked again": {old: `spec: {timeZone: "Gone/Zone"}`, update: `spec: {suspend: true}`},
		"a changed zone is":                      {old: `spec: {timeZone: "UTC"}`, update: `spec: {timeZone: "Gone/Zone"}`, want: []string{`FieldValueInvalid spec.timeZone: Invalid value: "Gone/Zone": unknown time zone Gone/Zone`}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			old := cronJobFromYAML(t, tc.old)
			PrepareCronJobForCreate(old)
			cj := cronJobFromYAML(t, tc.old, tc.update)
			PrepareCronJobForUpdate(cj, old)
			matchLines(t, tc.want, causeLines(ValidateCronJobUpdate(cj, old)))
		})
	}
}

func TestCronJobSchedule(t *testing.T) {
	cj := cronJobFromYAML(t, `spec: {schedule: "0 9 * * *", timeZone: "Asia/Kolkata"}`)
	sched, err := CronJobSchedule(cj)
	if err != nil {
		t.Fatal(err)
	}
	from := mustTime(t, "2026-11-25T00:00:00Z")
	if got, want := sched.Next(from).UTC(), mustTime(t, "2026-11-25T03:30:00Z"); !got.Equal(want) {
		t.Errorf("next %v, want %v (09:00 in Kolkata)", got, want)
	}
	if got := CronJobJobName(cj, mustTime(t, "2026-11-25T03:30:00Z")); got != "cj-29926290" {
		t.Errorf("job name %s", got)
	}
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
