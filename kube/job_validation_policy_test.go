package kube

import (
	"fmt"
	"strings"
	"testing"
)

// rulesYAML is a podFailurePolicy of n copies of rule.
func rulesYAML(n int, rule string) string {
	return `spec: {podFailurePolicy: {rules: [` + strings.TrimSuffix(strings.Repeat(rule+", ", n), ", ") + `]}}`
}

// intsYAML is the flow list first..last.
func intsYAML(first, last int) string {
	var b strings.Builder
	for i := first; i <= last; i++ {
		if i > first {
			b.WriteString(", ")
		}
		fmt.Fprint(&b, i)
	}
	return "[" + b.String() + "]"
}

const qualifiedNameMsg = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"

func TestValidatePodFailurePolicy(t *testing.T) {
	exitRule := func(values string) string {
		return `spec: {podFailurePolicy: {rules: [{action: FailJob, onExitCodes: {operator: In, values: ` + values + `}}]}}`
	}
	runCreateCases(t, map[string]validationCase{
		"valid": {yaml: `spec: {template: {spec: {initContainers: [{name: init, image: busybox}]}}, podFailurePolicy: {rules: [
			{action: Ignore, onPodConditions: [{type: DisruptionTarget}]},
			{action: FailJob, onPodConditions: [{type: example.com/Custom, status: "False"}]},
			{action: Count, onExitCodes: {containerName: c, operator: In, values: [1, 2, 3]}},
			{action: Ignore, onExitCodes: {containerName: init, operator: In, values: [4]}},
			{action: FailJob, onExitCodes: {operator: NotIn, values: [0, 5, 6, 7]}}]}}`},
		"FailIndex with backoffLimitPerIndex": {
			yaml: `spec: {completionMode: Indexed, completions: 2, backoffLimitPerIndex: 1, podFailurePolicy: {rules: [
				{action: FailIndex, onExitCodes: {operator: In, values: [10]}}]}}`,
		},
		"restartPolicy OnFailure": {
			yaml: `spec: {template: {spec: {restartPolicy: OnFailure}}, podFailurePolicy: {rules: [{action: Ignore, onPodConditions: [{type: DisruptionTarget}]}]}}`,
			want: []string{`FieldValueInvalid spec.template.spec.restartPolicy: Invalid value: "OnFailure": only "Never" is supported when podFailurePolicy is specified`},
		},
		"20 rules": {yaml: rulesYAML(20, `{action: Count, onExitCodes: {operator: In, values: [1]}}`)},
		"21 rules": {
			yaml: rulesYAML(21, `{action: Count, onExitCodes: {operator: In, values: [1]}}`),
			want: []string{"FieldValueTooMany spec.podFailurePolicy.rules: Too many: 21: must have at most 20 items"},
		},
		"no action": {
			yaml: `spec: {podFailurePolicy: {rules: [{onExitCodes: {operator: In, values: [1]}}]}}`,
			want: []string{`FieldValueRequired spec.podFailurePolicy.rules[0].action: Required value: valid values: ["Count" "FailIndex" "FailJob" "Ignore"]`},
		},
		"unknown action": {
			yaml: `spec: {podFailurePolicy: {rules: [{action: Retry, onExitCodes: {operator: In, values: [1]}}]}}`,
			want: []string{`FieldValueNotSupported spec.podFailurePolicy.rules[0].action: Unsupported value: "Retry": supported values: "Count", "FailIndex", "FailJob", "Ignore"`},
		},
		"FailIndex without backoffLimitPerIndex": {
			yaml: `spec: {podFailurePolicy: {rules: [{action: FailIndex, onExitCodes: {operator: In, values: [1]}}]}}`,
			want: []string{`FieldValueInvalid spec.podFailurePolicy.rules[0].action: Invalid value: "FailIndex": requires the backoffLimitPerIndex to be set`},
		},
		"both requirements": {
			yaml: `spec: {podFailurePolicy: {rules: [{action: Ignore, onExitCodes: {operator: In, values: [1]}, onPodConditions: [{type: DisruptionTarget}]}]}}`,
			want: []string{"FieldValueInvalid spec.podFailurePolicy.rules[0]: Invalid value: specifying both OnExitCodes and OnPodConditions is not supported"},
		},
		"no requirement": {
			yaml: `spec: {podFailurePolicy: {rules: [{action: Ignore, onPodConditions: []}]}}`,
			want: []string{"FieldValueInvalid spec.podFailurePolicy.rules[0]: Invalid value: specifying one of OnExitCodes and OnPodConditions is required"},
		},
		"no operator": {
			yaml: `spec: {podFailurePolicy: {rules: [{action: Ignore, onExitCodes: {values: [1]}}]}}`,
			want: []string{`FieldValueRequired spec.podFailurePolicy.rules[0].onExitCodes.operator: Required value: valid values: ["In" "NotIn"]`},
		},
		"unknown operator": {
			yaml: `spec: {podFailurePolicy: {rules: [{action: Ignore, onExitCodes: {operator: Has, values: [1]}}]}}`,
			want: []string{`FieldValueNotSupported spec.podFailurePolicy.rules[0].onExitCodes.operator: Unsupported value: "Has": supported values: "In", "NotIn"`},
		},
		"unknown container": {
			yaml: `spec: {podFailurePolicy: {rules: [{action: Ignore, onExitCodes: {containerName: nope, operator: In, values: [1]}}]}}`,
			want: []string{`FieldValueInvalid spec.podFailurePolicy.rules[0].onExitCodes.containerName: Invalid value: "nope": must be one of the container or initContainer names in the pod template`},
		},
		"no values": {
			yaml: exitRule("[]"),
			want: []string{"FieldValueInvalid spec.podFailurePolicy.rules[0].onExitCodes.values: Invalid value: []: at least one value is required"},
		},
		"values missing": {
			yaml: exitRule("null"),
			want: []string{"FieldValueInvalid spec.podFailurePolicy.rules[0].onExitCodes.values: Invalid value: null: at least one value is required"},
		},
		"255 values": {yaml: exitRule(intsYAML(1, 255))},
		"256 values": {
			yaml: exitRule(intsYAML(1, 256)),
			want: []string{"FieldValueTooMany spec.podFailurePolicy.rules[0].onExitCodes.values: Too many: 256: must have at most 255 items"},
		},
		"0 with In": {
			yaml: exitRule("[0, 1]"),
			want: []string{"FieldValueInvalid spec.podFailurePolicy.rules[0].onExitCodes.values[0]: Invalid value: 0: must not be 0 for the In operator"},
		},
		"duplicate and unordered values": {
			yaml: exitRule("[3, 1, 3]"),
			want: []string{
				"FieldValueDuplicate spec.podFailurePolicy.rules[0].onExitCodes.values[2]: Duplicate value: 3",
				"FieldValueInvalid spec.podFailurePolicy.rules[0].onExitCodes.values: Invalid value: [3,1,3]: must be ordered",
			},
		},
		"20 condition patterns": {yaml: rulesYAML(1, `{action: Ignore, onPodConditions: [`+strings.TrimSuffix(strings.Repeat("{type: DisruptionTarget}, ", 20), ", ")+`]}`)},
		"21 condition patterns": {
			yaml: rulesYAML(1, `{action: Ignore, onPodConditions: [`+strings.TrimSuffix(strings.Repeat("{type: DisruptionTarget}, ", 21), ", ")+`]}`),
			want: []string{"FieldValueTooMany spec.podFailurePolicy.rules[0].onPodConditions: Too many: 21: must have at most 20 items"},
		},
		"bad condition type and status": {
			yaml: `spec: {podFailurePolicy: {rules: [{action: Ignore, onPodConditions: [{type: "Bad Type!", status: Maybe}]}]}}`,
			want: []string{
				`FieldValueInvalid spec.podFailurePolicy.rules[0].onPodConditions[0].type: Invalid value: "Bad Type!": ` + qualifiedNameMsg,
				`FieldValueNotSupported spec.podFailurePolicy.rules[0].onPodConditions[0].status: Unsupported value: "Maybe": supported values: "False", "True", "Unknown"`,
			},
		},
		"podReplacementPolicy Failed with a podFailurePolicy": {
			yaml: `spec: {podReplacementPolicy: Failed, podFailurePolicy: {rules: [{action: Ignore, onPodConditions: [{type: DisruptionTarget}]}]}}`,
		},
		"podReplacementPolicy TerminatingOrFailed with a podFailurePolicy": {
			yaml: `spec: {podReplacementPolicy: TerminatingOrFailed, podFailurePolicy: {rules: [{action: Ignore, onPodConditions: [{type: DisruptionTarget}]}]}}`,
			want: []string{`FieldValueNotSupported spec.podReplacementPolicy: Unsupported value: "TerminatingOrFailed": supported values: "Failed"`},
		},
		"unknown podReplacementPolicy": {
			yaml: `spec: {podReplacementPolicy: Never}`,
			want: []string{`FieldValueNotSupported spec.podReplacementPolicy: Unsupported value: "Never": supported values: "Failed", "TerminatingOrFailed"`},
		},
	})
}

func TestValidateSuccessPolicy(t *testing.T) {
	indexed := func(policy string) string {
		return `spec: {completionMode: Indexed, completions: 5, successPolicy: ` + policy + `}`
	}
	rule := func(r string) string { return indexed(`{rules: [` + r + `]}`) }
	runCreateCases(t, map[string]validationCase{
		"valid": {yaml: indexed(`{rules: [{succeededIndexes: "0,2,4", succeededCount: 1}, {succeededIndexes: "1-3"}, {succeededCount: 5}]}`)},
		"NonIndexed": {
			yaml: `spec: {successPolicy: {rules: [{succeededIndexes: "0"}]}}`,
			want: []string{`FieldValueInvalid spec.successPolicy: Invalid value: {"Rules":[{"SucceededIndexes":"0","SucceededCount":null}]}: requires indexed completion mode`},
		},
		"no rules": {
			yaml: indexed(`{rules: []}`),
			want: []string{"FieldValueRequired spec.successPolicy.rules: Required value: at least one rules must be specified when the successPolicy is specified"},
		},
		"21 rules": {
			yaml: indexed(`{rules: [` + strings.TrimSuffix(strings.Repeat("{succeededCount: 1}, ", 21), ", ") + `]}`),
			want: []string{"FieldValueTooMany spec.successPolicy.rules: Too many: 21: must have at most 20 items"},
		},
		"empty rule": {
			yaml: rule(`{}`),
			want: []string{"FieldValueRequired spec.successPolicy.rules[0]: Required value: at least one of succeededCount or succeededIndexes must be specified"},
		},
		"indexes out of order": {
			yaml: rule(`{succeededIndexes: "3,1"}`),
			want: []string{`FieldValueInvalid spec.successPolicy.rules[0].succeededIndexes: Invalid value: "3,1": error parsing succeededIndexes: non-increasing order, previous: 3, current: 1`},
		},
		"overlapping ranges": {
			yaml: rule(`{succeededIndexes: "1-3,3"}`),
			want: []string{`FieldValueInvalid spec.successPolicy.rules[0].succeededIndexes: Invalid value: "1-3,3": error parsing succeededIndexes: non-increasing order, previous: 3, current: 3`},
		},
		"range of one": {
			yaml: rule(`{succeededIndexes: "2-2"}`),
			want: []string{`FieldValueInvalid spec.successPolicy.rules[0].succeededIndexes: Invalid value: "2-2": error parsing succeededIndexes: non-increasing order, previous: 2, current: 2`},
		},
		"three-part range": {
			yaml: rule(`{succeededIndexes: "1-2-3"}`),
			want: []string{`FieldValueInvalid spec.successPolicy.rules[0].succeededIndexes: Invalid value: "1-2-3": error parsing succeededIndexes: the fragment "1-2-3" violates the requirement that an index interval can have at most two parts separated by '-'`},
		},
		"not a number": {
			yaml: rule(`{succeededIndexes: "a"}`),
			want: []string{`FieldValueInvalid spec.successPolicy.rules[0].succeededIndexes: Invalid value: "a": error parsing succeededIndexes: cannot convert string to integer for index: "a"`},
		},
		"index not below completions": {
			yaml: rule(`{succeededIndexes: "0-5"}`),
			want: []string{`FieldValueInvalid spec.successPolicy.rules[0].succeededIndexes: Invalid value: "0-5": error parsing succeededIndexes: too large index: "5"`},
		},
		"too long": {
			yaml: indexed(`{rules: [{succeededIndexes: "` + strings.Repeat("1", 64*1024+1) + `"}]}`),
			want: []string{
				"FieldValueTooLong spec.successPolicy.rules[0].succeededIndexes: Too long: may not be more than 65536 bytes",
				`FieldValueInvalid spec.successPolicy.rules[0].succeededIndexes: Invalid value: "…": error parsing succeededIndexes: cannot convert string to integer for index: "…"`,
			},
		},
		"count above completions": {
			yaml: rule(`{succeededCount: 6}`),
			want: []string{"FieldValueInvalid spec.successPolicy.rules[0].succeededCount: Invalid value: 6: must be less than or equal to 5 (the number of specified completions)"},
		},
		"negative count": {
			yaml: rule(`{succeededCount: -1}`),
			want: []string{"FieldValueInvalid spec.successPolicy.rules[0].succeededCount: Invalid value: -1: must be greater than or equal to 0"},
		},
		"count above its indexes": {
			yaml: rule(`{succeededIndexes: "0,1", succeededCount: 3}`),
			want: []string{"FieldValueInvalid spec.successPolicy.rules[0].succeededCount: Invalid value: 3: must be less than or equal to 2 (the number of indexes in the specified succeededIndexes field)"},
		},
		"count with unparsable indexes": {
			yaml: rule(`{succeededIndexes: "x", succeededCount: 1}`),
			want: []string{
				`FieldValueInvalid spec.successPolicy.rules[0].succeededIndexes: Invalid value: "x": error parsing succeededIndexes: cannot convert string to integer for index: "x"`,
				"FieldValueInvalid spec.successPolicy.rules[0].succeededCount: Invalid value: 1: must be less than or equal to 0 (the number of indexes in the specified succeededIndexes field)",
			},
		},
		"indexed without completions": {
			yaml: `spec: {completionMode: Indexed, parallelism: 2, successPolicy: {rules: [{succeededIndexes: "0"}]}}`,
			want: []string{"FieldValueRequired spec.completions: Required value: when completion mode is Indexed"},
		},
	})
}

func TestCountIndexes(t *testing.T) {
	tests := map[string]struct {
		set     string
		want    int32
		wantErr string
	}{
		"empty":          {set: "", want: 0},
		"one":            {set: "3", want: 1},
		"ranges":         {set: "0,2-4,7-9", want: 7},
		"plus sign":      {set: "+1", want: 1},
		"negative":       {set: "-1", wantErr: `cannot convert string to integer for index: ""`},
		"trailing comma": {set: "1,", wantErr: `cannot convert string to integer for index: ""`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := countIndexes(tc.set, 10)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if got != tc.want || gotErr != tc.wantErr {
				t.Errorf("countIndexes(%q) = %d, %q; want %d, %q", tc.set, got, gotErr, tc.want, tc.wantErr)
			}
		})
	}
}
