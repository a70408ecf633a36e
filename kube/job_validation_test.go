package kube

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// baseJobYAML is the manifest every validation case starts from.
const baseJobYAML = `
metadata: {name: j, namespace: default, uid: uid}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: "busybox:1.35"}]
`

// jobFromYAML is baseJobYAML with the manifest fragments merged over it in
// order (maps merge, other values replace, null deletes), not defaulted.
func jobFromYAML(t *testing.T, fragments ...string) *batchv1.Job {
	t.Helper()
	doc := map[string]any{}
	for _, f := range append([]string{baseJobYAML}, fragments...) {
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
	var job batchv1.Job
	if err := json.Unmarshal(data, &job); err != nil {
		t.Fatalf("decoding %s: %v", data, err)
	}
	return &job
}

// mergeInto merges src into dst as a JSON merge patch does.
func mergeInto(dst, src map[string]any) {
	for k, v := range src {
		sub, isMap := v.(map[string]any)
		old, wasMap := dst[k].(map[string]any)
		switch {
		case v == nil:
			delete(dst, k)
		case isMap && wasMap:
			mergeInto(old, sub)
		default:
			dst[k] = v
		}
	}
}

// causeLines renders errs as the causes of kube's 422 Status, one line each:
// "<reason> <field>: <message>".
func causeLines(errs field.ErrorList) []string {
	st := apierrors.NewInvalid(schema.GroupKind{Group: "batch", Kind: "Job"}, "j", errs).ErrStatus
	var out []string
	for _, c := range st.Details.Causes {
		out = append(out, fmt.Sprintf("%s %s: %s", c.Type, c.Field, c.Message))
	}
	return out
}

// createCauses defaults job and validates it as a create does.
func createCauses(job *batchv1.Job) []string {
	defaultJob(job)
	return causeLines(append(ValidateObjectMeta(job, true, apivalidation.NameIsDNSSubdomain), ValidateJob(job)...))
}

// matchLines compares got with want, where "…" in a wanted line stands for
// any text (for the long renderings of a whole pod template).
func matchLines(t *testing.T, want, got []string) {
	t.Helper()
	ok := len(want) == len(got)
	for i := 0; ok && i < len(want); i++ {
		ok = matchEllipsis(want[i], got[i])
	}
	if !ok {
		t.Errorf("causes (-want,+got):\n%s", cmp.Diff(want, got))
	}
}

func matchEllipsis(pattern, s string) bool {
	parts := strings.Split(pattern, "…")
	if !strings.HasPrefix(s, parts[0]) || !strings.HasSuffix(s, parts[len(parts)-1]) {
		return false
	}
	s = s[len(parts[0]):]
	for _, p := range parts[1:] {
		i := strings.Index(s, p)
		if i < 0 {
			return false
		}
		s = s[i+len(p):]
	}
	return true
}

// validationCase is a manifest fragment and the causes kube-apiserver
// gives for it.
type validationCase struct {
	yaml string
	want []string
}

func runCreateCases(t *testing.T, tests map[string]validationCase) {
	t.Helper()
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			matchLines(t, tc.want, createCauses(jobFromYAML(t, tc.yaml)))
		})
	}
}

func TestValidateJobSpec(t *testing.T) {
	name62 := strings.Repeat("a", 62)
	runCreateCases(t, map[string]validationCase{
		"valid":                         {},
		"activeDeadlineSeconds 0 is ok": {yaml: `spec: {activeDeadlineSeconds: 0}`},
		"negative counts": {
			yaml: `spec: {parallelism: -1, completions: -1, activeDeadlineSeconds: -1, backoffLimit: -1, ttlSecondsAfterFinished: -1}`,
			want: []string{
				"FieldValueInvalid spec.parallelism: Invalid value: -1: must be greater than or equal to 0",
				"FieldValueInvalid spec.completions: Invalid value: -1: must be greater than or equal to 0",
				"FieldValueInvalid spec.activeDeadlineSeconds: Invalid value: -1: must be greater than or equal to 0",
				"FieldValueInvalid spec.backoffLimit: Invalid value: -1: must be greater than or equal to 0",
				"FieldValueInvalid spec.ttlSecondsAfterFinished: Invalid value: -1: must be greater than or equal to 0",
			},
		},
		"uppercase name": {
			yaml: `metadata: {name: Job-Upper}`,
			want: []string{
				`FieldValueInvalid metadata.name: Invalid value: "Job-Upper": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
			},
		},
		"unknown completion mode": {
			yaml: `spec: {completionMode: Sometimes}`,
			want: []string{`FieldValueNotSupported spec.completionMode: Unsupported value: "Sometimes": supported values: "NonIndexed", "Indexed"`},
		},
		"indexed defaults both counts to 1": {yaml: `spec: {completionMode: Indexed}`},
		"indexed with parallelism but no completions": {
			yaml: `spec: {completionMode: Indexed, parallelism: 2}`,
			want: []string{"FieldValueRequired spec.completions: Required value: when completion mode is Indexed"},
		},
		"indexed parallelism 10^5 is ok": {yaml: `spec: {completionMode: Indexed, completions: 2, parallelism: 100000}`},
		"indexed parallelism above 10^5": {
			yaml: `spec: {completionMode: Indexed, completions: 2, parallelism: 100001}`,
			want: []string{"FieldValueInvalid spec.parallelism: Invalid value: 100001: must be less than or equal to 100000 when completion mode is Indexed"},
		},
		"indexed completions have no cap of their own": {
			yaml: `spec: {completionMode: Indexed, completions: 1000000000, parallelism: 10000}`,
		},
		"indexed hostname must be a DNS label": {
			yaml: `{metadata: {name: ` + name62 + `}, spec: {completionMode: Indexed, completions: 10}}`,
			want: []string{"FieldValueInvalid metadata.name: Invalid value: \"" + name62 + "\": will not able to create pod with invalid DNS label: " + name62 + "-9"},
		},
		"backoffLimitPerIndex needs indexed": {
			yaml: `spec: {backoffLimitPerIndex: 1}`,
			want: []string{"FieldValueInvalid spec.backoffLimitPerIndex: Invalid value: 1: requires indexed completion mode"},
		},
		"maxFailedIndexes needs backoffLimitPerIndex and indexed": {
			yaml: `spec: {maxFailedIndexes: 1}`,
			want: []string{
				"FieldValueRequired spec.backoffLimitPerIndex: Required value: when maxFailedIndexes is specified",
				"FieldValueInvalid spec.maxFailedIndexes: Invalid value: 1: requires indexed completion mode",
			},
		},
		"negative per-index limits": {
			yaml: `spec: {completionMode: Indexed, completions: 2, backoffLimitPerIndex: -1, maxFailedIndexes: -1}`,
			want: []string{
				"FieldValueInvalid spec.backoffLimitPerIndex: Invalid value: -1: must be greater than or equal to 0",
				"FieldValueInvalid spec.maxFailedIndexes: Invalid value: -1: must be greater than or equal to 0",
			},
		},
		"maxFailedIndexes above completions": {
			yaml: `spec: {completionMode: Indexed, completions: 3, backoffLimitPerIndex: 1, maxFailedIndexes: 4}`,
			want: []string{"FieldValueInvalid spec.maxFailedIndexes: Invalid value: 4: must be less than or equal to completions"},
		},
		"maxFailedIndexes above 10^5": {
			yaml: `spec: {completionMode: Indexed, completions: 200000, backoffLimitPerIndex: 1, maxFailedIndexes: 100001}`,
			want: []string{
				"FieldValueInvalid spec.maxFailedIndexes: Invalid value: 100001: must be less than or equal to 100000",
				"FieldValueInvalid spec.maxFailedIndexes: Invalid value: 100001: must be less than or equal to 10000 when completions are above 100000 and used with backoff limit per index",
			},
		},
		"high completions with per-index backoff": {
			yaml: `spec: {completionMode: Indexed, completions: 100001, parallelism: 10001, backoffLimitPerIndex: 1}`,
			want: []string{
				"FieldValueRequired spec.maxFailedIndexes: Required value: must be specified when completions is above 100000",
				"FieldValueInvalid spec.parallelism: Invalid value: 10001: must be less than or equal to 10000 when completions are above 100000 and used with backoff limit per index",
			},
		},
		"high completions with per-index backoff within the caps": {
			yaml: `spec: {completionMode: Indexed, completions: 1000000000, parallelism: 10000, backoffLimitPerIndex: 1, maxFailedIndexes: 10000}`,
		},
		"managedBy domain-prefixed": {yaml: `spec: {managedBy: example.com/foo}`},
		"managedBy not a path": {
			yaml: `spec: {managedBy: foo}`,
			want: []string{`FieldValueInvalid spec.managedBy: Invalid value: "foo": must be a domain-prefixed path (such as "acme.io/foo")`},
		},
		"managedBy too long": {
			yaml: `spec: {managedBy: example.com/` + strings.Repeat("x", 52) + `}`,
			want: []string{"FieldValueTooLong spec.managedBy: Too long: may not be more than 63 bytes"},
		},
		"restartPolicy Always": {
			yaml: `spec: {template: {spec: {restartPolicy: Always}}}`,
			want: []string{`FieldValueRequired spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"`},
		},
		"restartPolicy unset defaults to Always": {
			yaml: `spec: {template: {spec: {restartPolicy: null}}}`,
			want: []string{`FieldValueRequired spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"`},
		},
		"restartPolicy unknown": {
			yaml: `spec: {template: {spec: {restartPolicy: Sometimes}}}`,
			want: []string{
				`FieldValueNotSupported spec.template.spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"`,
				`FieldValueNotSupported spec.template.spec.restartPolicy: Unsupported value: "Sometimes": supported values: "OnFailure", "Never"`,
			},
		},
		"restartPolicy OnFailure is ok": {yaml: `spec: {template: {spec: {restartPolicy: OnFailure}}}`},
		"template labels and annotations": {
			yaml: `spec: {template: {metadata: {labels: {"a b": "x"}, annotations: {"c d": "y"}}}}`,
			want: []string{
				// the Job takes its template's labels
				`FieldValueInvalid metadata.labels: Invalid value: "a b": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
				`FieldValueInvalid spec.template.labels: Invalid value: "a b": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
				`FieldValueInvalid spec.template.annotations: Invalid value: "c d": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
			},
		},
		"ephemeral containers in the template": {
			yaml: `spec: {template: {spec: {ephemeralContainers: [{name: e, image: busybox}]}}}`,
			want: []string{"FieldValueForbidden spec.template.spec.ephemeralContainers: Forbidden: ephemeral containers not allowed in pod template"},
		},
		"no containers": {
			yaml: `spec: {template: {spec: {containers: []}}}`,
			want: []string{"FieldValueRequired spec.template.spec.containers: Required value"},
		},
	})
}

func TestValidateJobSelector(t *testing.T) {
	runCreateCases(t, map[string]validationCase{
		"manual selector matching the template": {
			yaml: `spec: {manualSelector: true, selector: {matchLabels: {app: x}}, template: {metadata: {labels: {app: x}}}}`,
		},
		"manual selector not matching the template": {
			yaml: `spec: {manualSelector: true, selector: {matchLabels: {app: x}}, template: {metadata: {labels: {app: "y"}}}}`,
			want: []string{"FieldValueInvalid spec.template.metadata.labels: Invalid value: {\"app\":\"y\"}: `selector` does not match template `labels`"},
		},
		"manual selector missing": {
			yaml: `spec: {manualSelector: true}`,
			want: []string{
				"FieldValueRequired spec.selector: Required value",
				"FieldValueInvalid spec.template.metadata.labels: Invalid value: null: `selector` does not match template `labels`",
			},
		},
		"manual selector invalid": {
			yaml: `spec: {manualSelector: true, selector: {matchExpressions: [{key: app, operator: Near}]}}`,
			want: []string{`FieldValueInvalid spec.selector.matchExpressions[0].operator: Invalid value: "Near": not a valid selector operator`},
		},
		"generated selector with a foreign uid": {
			yaml: `spec: {selector: {matchLabels: {batch.kubernetes.io/controller-uid: other}}}`,
			want: []string{
				"FieldValueInvalid spec.selector: Invalid value: {\"matchLabels\":{\"batch.kubernetes.io/controller-uid\":\"other\"}}: `selector` not auto-generated",
				"FieldValueInvalid spec.template.metadata.labels: Invalid value: {\"batch.kubernetes.io/controller-uid\":\"uid\",\"batch.kubernetes.io/job-name\":\"j\",\"controller-uid\":\"uid\",\"job-name\":\"j\"}: `selector` does not match template `labels`",
			},
		},
		"generated selector with a conflicting template label": {
			yaml: `spec: {template: {metadata: {labels: {job-name: other}}}}`,
			want: []string{
				"FieldValueInvalid spec.template.metadata.labels[job-name]: Invalid value: {\"batch.kubernetes.io/controller-uid\":\"uid\",\"batch.kubernetes.io/job-name\":\"j\",\"controller-uid\":\"uid\",\"job-name\":\"other\"}: must be 'j'",
			},
		},
	})
}

func TestValidateJobUpdate(t *testing.T) {
	tests := map[string]struct {
		old     string // fragment of the stored Job
		started bool   // the stored Job has a status.startTime
		change  string // fragment merged over the stored Job
		want    []string
	}{
		"parallelism is mutable":       {change: `spec: {parallelism: 5}`},
		"suspend is mutable":           {change: `spec: {suspend: true}`},
		"backoffLimit is mutable":      {change: `spec: {backoffLimit: 1}`},
		"activeDeadline is mutable":    {change: `spec: {activeDeadlineSeconds: 9}`},
		"ttl is mutable":               {change: `spec: {ttlSecondsAfterFinished: 9}`},
		"maxFailedIndexes is mutable":  {old: `spec: {completionMode: Indexed, completions: 4, backoffLimitPerIndex: 1}`, change: `spec: {maxFailedIndexes: 2}`},
		"job labels dropped come back": {change: `metadata: {labels: null}`},
		"podReplacementPolicy mutable": {change: `spec: {podReplacementPolicy: Failed}`},
		"manualSelector is mutable":    {change: `spec: {manualSelector: true}`},
		"completions are not": {
			change: `spec: {completions: 5}`,
			want:   []string{"FieldValueInvalid spec.completions: Invalid value: 5: field is immutable"},
		},
		"indexed completions change with parallelism": {
			old: `spec: {completionMode: Indexed, completions: 4, parallelism: 4}`, change: `spec: {completions: 6, parallelism: 6}`,
		},
		"indexed completions change alone": {
			old: `spec: {completionMode: Indexed, completions: 4, parallelism: 4}`, change: `spec: {completions: 6}`,
			want: []string{"FieldValueInvalid spec.completions: Invalid value: 6: can only be modified in tandem with spec.parallelism"},
		},
		"invalid spec is reported by both validations": {
			change: `spec: {parallelism: -1}`,
			want: []string{
				"FieldValueInvalid spec.parallelism: Invalid value: -1: must be greater than or equal to 0",
				"FieldValueInvalid spec.parallelism: Invalid value: -1: must be greater than or equal to 0",
			},
		},
		"selector is not": {
			change: `spec: {selector: {matchLabels: {x: "y"}}}`,
			want: []string{
				"FieldValueInvalid spec.selector: Invalid value: {\"matchLabels\":{\"batch.kubernetes.io/controller-uid\":\"uid\",\"x\":\"y\"}}: `selector` not auto-generated",
				"FieldValueInvalid spec.template.metadata.labels: Invalid value: …: `selector` does not match template `labels`",
				"FieldValueInvalid spec.template.metadata.labels: Invalid value: …: `selector` does not match template `labels`",
				"FieldValueInvalid spec.selector: Invalid value: {\"matchLabels\":{\"batch.kubernetes.io/controller-uid\":\"uid\",\"x\":\"y\"}}: field is immutable",
			},
		},
		"template is not": {
			change: `spec: {template: {spec: {containers: [{name: c, image: other}]}}}`,
			want:   []string{`FieldValueInvalid spec.template: Invalid value: {"labels":…"Spec":{"Volumes":null,…"Image":"other",…}}: field is immutable`},
		},
		"completionMode is not": {
			change: `spec: {completionMode: Indexed}`,
			want:   []string{`FieldValueInvalid spec.completionMode: Invalid value: "Indexed": field is immutable`},
		},
		"podFailurePolicy is not": {
			old:    `spec: {podFailurePolicy: {rules: [{action: Ignore, onPodConditions: [{type: DisruptionTarget}]}]}}`,
			change: `spec: {podFailurePolicy: {rules: [{action: FailJob, onExitCodes: {operator: In, values: [1]}}]}}`,
			want: []string{
				`FieldValueInvalid spec.podFailurePolicy: Invalid value: {"Rules":[{"Action":"FailJob","OnExitCodes":{"ContainerName":null,"Operator":"In","Values":[1]},"OnPodConditions":null}]}: field is immutable`,
			},
		},
		"backoffLimitPerIndex is not": {
			old: `spec: {completionMode: Indexed, completions: 4, backoffLimitPerIndex: 1}`, change: `spec: {backoffLimitPerIndex: 2}`,
			want: []string{"FieldValueInvalid spec.backoffLimitPerIndex: Invalid value: 2: field is immutable"},
		},
		"managedBy is not": {
			change: `spec: {managedBy: example.com/foo}`,
			want:   []string{`FieldValueInvalid spec.managedBy: Invalid value: "example.com/foo": field is immutable`},
		},
		"successPolicy is not": {
			old:    `spec: {completionMode: Indexed, completions: 4, successPolicy: {rules: [{succeededCount: 1}]}}`,
			change: `spec: {successPolicy: {rules: [{succeededIndexes: "0-2"}]}}`,
			want: []string{
				`FieldValueInvalid spec.successPolicy: Invalid value: {"Rules":[{"SucceededIndexes":"0-2","SucceededCount":null}]}: field is immutable`,
			},
		},
		"suspended and never started: scheduling directives, labels and annotations": {
			old: `spec: {suspend: true, template: {spec: {affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: k, operator: Exists}]}]}}}}}}`,
			change: `spec: {template: {metadata: {labels: {team: a}, annotations: {note: b}}, spec: {
				nodeSelector: {disk: ssd}, tolerations: [{key: k, operator: Exists}], schedulingGates: [{name: g}],
				affinity: {nodeAffinity: null}}}}`,
		},
		"suspended and never started: other template fields": {
			old:    `spec: {suspend: true}`,
			change: `spec: {template: {spec: {nodeSelector: {disk: ssd}, containers: [{name: c, image: other}]}}}`,
			want:   []string{`FieldValueInvalid spec.template: Invalid value: {…"NodeSelector":{"disk":"ssd"},…}: field is immutable`},
		},
		"suspended and never started: affinity beyond the node's": {
			old:    `spec: {suspend: true, template: {spec: {affinity: {podAffinity: {}}}}}`,
			change: `spec: {template: {spec: {affinity: null}}}`,
			want:   []string{`FieldValueInvalid spec.template: Invalid value: {…"Affinity":null,…}: field is immutable`},
		},
		"suspended after it started": {
			old: `spec: {suspend: true}`, started: true,
			change: `spec: {template: {spec: {nodeSelector: {disk: ssd}}}}`,
			want:   []string{`FieldValueInvalid spec.template: Invalid value: …: field is immutable`},
		},
		"running": {
			change: `spec: {template: {metadata: {annotations: {note: b}}}}`,
			want:   []string{`FieldValueInvalid spec.template: Invalid value: …: field is immutable`},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			old := jobFromYAML(t, tc.old)
			defaultJob(old)
			if got := createCauses(old.DeepCopy()); len(got) > 0 {
				t.Fatalf("stored job is invalid: %v", got)
			}
			if tc.started {
				old.Status.StartTime = ptr.To(metav1.Now())
			}
			n := mergeJob(t, old, tc.change)
			PrepareJobForUpdate(n, old)
			matchLines(t, tc.want, causeLines(ValidateJobUpdate(n, old)))
		})
	}
}

// mergeJob is job with the manifest fragment merged over it.
func mergeJob(t *testing.T, job *batchv1.Job, fragment string) *batchv1.Job {
	t.Helper()
	data, err := json.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	return jobFromYAML(t, string(data), fragment)
}
