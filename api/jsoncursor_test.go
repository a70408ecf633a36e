package api

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// cellsBothWays is rs's cells of the object stored as data, decoded whole
// by encoding/json (want) and read by rs.decodeCells (got).
func cellsBothWays(t *testing.T, rs *resource, data []byte, now time.Time) (want, got []any) {
	t.Helper()
	whole := rs.store.New()
	if err := json.Unmarshal(data, whole); err != nil {
		t.Fatalf("decoding %s: %v", data, err)
	}
	read := rs.store.New()
	c := jsonCursor{data: data}
	rs.decodeCells(&c, read)
	if err := c.end(); err != nil {
		t.Fatalf("reading %s: %v", data, err)
	}
	return rs.cells(whole, now), rs.cells(read, now)
}

func ptr[T any](v T) *T { return &v }

// TestDecodeJobCells: the cells of a Job read by decodeJobCells are the
// cells of the Job decoded whole, for Jobs in every state, selectors of
// every shape (expressions, invalid ones), indexed and work-queue Jobs,
// unicode and escaped strings, and stored JSON as encoding/json writes it
// or not quite (spaces, times with offsets and fractions, escaped keys).
func TestDecodeJobCells(t *testing.T) {
	now := time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)
	at := func(min int) *metav1.Time { return ptr(metav1.NewTime(now.Add(time.Duration(-min) * time.Minute))) }
	cond := func(typ batchv1.JobConditionType, status corev1.ConditionStatus) batchv1.JobCondition {
		return batchv1.JobCondition{Type: typ, Status: status, LastTransitionTime: *at(1), Reason: "R", Message: "m"}
	}
	jobs := map[string]batchv1.Job{
		"empty": {},
		"complete": {ObjectMeta: metav1.ObjectMeta{Name: "a", CreationTimestamp: *at(90)},
			Spec: batchv1.JobSpec{Completions: ptr(int32(3)), Parallelism: ptr(int32(2)),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"batch.kubernetes.io/controller-uid": "0f3c", "job-name": "a"}}},
			Status: batchv1.JobStatus{Succeeded: 3, StartTime: at(80), CompletionTime: at(70),
				Conditions: []batchv1.JobCondition{cond(batchv1.JobSuccessCriteriaMet, corev1.ConditionTrue), cond(batchv1.JobComplete, corev1.ConditionTrue)}}},
		"failed": {ObjectMeta: metav1.ObjectMeta{Name: "f", CreationTimestamp: *at(5)},
			Status: batchv1.JobStatus{Failed: 2, StartTime: at(4),
				Conditions: []batchv1.JobCondition{cond(batchv1.JobFailureTarget, corev1.ConditionTrue), cond(batchv1.JobFailed, corev1.ConditionTrue)}}},
		"failure target": {Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{cond(batchv1.JobFailureTarget, corev1.ConditionTrue)}}},
		"suspended":      {Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{cond(batchv1.JobSuspended, corev1.ConditionTrue)}}},
		"resumed":        {Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{cond(batchv1.JobSuspended, corev1.ConditionFalse)}}},
		"terminating": {ObjectMeta: metav1.ObjectMeta{Name: "t", DeletionTimestamp: at(0), CreationTimestamp: *at(3000)},
			Status: batchv1.JobStatus{Active: 1, StartTime: at(2000)}},
		"terminating and complete": {ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: at(0)},
			Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{cond(batchv1.JobComplete, corev1.ConditionTrue)}}},
		"indexed": {Spec: batchv1.JobSpec{Completions: ptr(int32(5)), Parallelism: ptr(int32(5)), CompletionMode: ptr(batchv1.IndexedCompletion),
			BackoffLimitPerIndex: ptr(int32(1))}, Status: batchv1.JobStatus{Succeeded: 2, CompletedIndexes: "0,2", FailedIndexes: ptr("1")}},
		"work queue":    {Spec: batchv1.JobSpec{Parallelism: ptr(int32(4))}, Status: batchv1.JobStatus{Succeeded: 1}},
		"parallelism 0": {Spec: batchv1.JobSpec{Parallelism: ptr(int32(0)), Completions: ptr(int32(0))}},
		"selector with expressions": {Spec: batchv1.JobSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"},
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"b", "a"}},
				{Key: "env", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"prod"}},
				{Key: "gpu", Operator: metav1.LabelSelectorOpExists}, {Key: "spot", Operator: metav1.LabelSelectorOpDoesNotExist}}}}},
		"selector empty":            {Spec: batchv1.JobSpec{Selector: &metav1.LabelSelector{}}},
		"selector invalid key":      {Spec: batchv1.JobSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"bad key": "x"}}}},
		"selector invalid value":    {Spec: batchv1.JobSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"k": "-x-"}}}},
		"selector invalid operator": {Spec: batchv1.JobSpec{Selector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k", Operator: "Near"}}}}},
		"containers": {Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "init", Image: "init:1"}},
			Containers: []corev1.Container{{Name: "main", Image: "busybox:1.35", Command: []string{"sh", "-c", `echo "{[}]"`}},
				{Name: "side", Image: "registry.example/ünï/cødé:<1>&\"2\"\\\t\u2028"}}}}}},
	}
	for name, job := range jobs {
		t.Run(name, func(t *testing.T) {
			data, err := json.Marshal(&job)
			if err != nil {
				t.Fatal(err)
			}
			want, got := cellsBothWays(t, jobResource, data, now)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s\n(-decoded whole +read):\n%s", data, diff)
			}
		})
	}
	raw := map[string]string{
		"spaces": " {\n \"metadata\" : { \"name\" : \"a\" , \"creationTimestamp\" : \"2026-11-25T08:00:00Z\" } ,\n" +
			" \"spec\" : { \"completions\" : 2 , \"selector\" : { \"matchLabels\" : { \"k\" : \"v\" } } } , \"status\" : { \"succeeded\" : 1 } } \n",
		"times not as metav1 writes them": `{"metadata":{"creationTimestamp":"2026-11-25T10:00:00+02:00"},` +
			`"status":{"startTime":"2026-11-25T08:00:00.5Z","completionTime":"2026-01-31T08:59:59.999999999Z"}}`,
		"a leap day":     `{"status":{"startTime":"2024-02-29T08:00:00Z","completionTime":"2024-03-31T23:59:59Z"}}`,
		"nulls":          `{"metadata":{"name":null,"creationTimestamp":null,"deletionTimestamp":null},"spec":{"completions":null,"selector":null,"template":null},"status":{"conditions":null,"startTime":null}}`,
		"escaped":        `{"metadata":{"name":"a\u0062\"c\\"},"spec":{"selector":{"matchLabels":{"k\u002fx":"v\u0031"}},"template":{"spec":{"containers":[{"name":"\u00fc","image":"i\n"}]}}}}`,
		"negative":       `{"spec":{"completions":-1},"status":{"succeeded":-2147483648}}`,
		"unknown fields": `{"apiVersion":"batch/v1","metadata":{"x":[{"y":"}"}]},"spec":{"z":{"completions":9}},"extra":[1,"]",{"a":null}]}`,
	}
	for name, data := range raw {
		t.Run(name, func(t *testing.T) {
			want, got := cellsBothWays(t, jobResource, []byte(data), now)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-decoded whole +read):\n%s", diff)
			}
		})
	}
}

// TestDecodePodCells: as TestDecodeJobCells, for pods in every phase, with
// init containers (failing, waiting, sidecars), readiness gates,
// scheduling gates, deletion, restarts and unicode strings.
func TestDecodePodCells(t *testing.T) {
	now := time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)
	at := func(min int) metav1.Time { return metav1.NewTime(now.Add(time.Duration(-min) * time.Minute)) }
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: at(3)}}
	waiting := func(reason string) corev1.ContainerState {
		return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: "m"}}
	}
	terminated := func(code, signal int32, reason string) corev1.ContainerState {
		return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Signal: signal, Reason: reason,
			StartedAt: at(20), FinishedAt: at(10)}}
	}
	spec := corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{{Name: "a", Image: "busybox:1.35"}, {Name: "b", Image: "busybox:1.35"}}}
	withInit := spec
	withInit.InitContainers = []corev1.Container{{Name: "i", Image: "busybox:1.35"},
		{Name: "side", Image: "busybox:1.35", RestartPolicy: ptr(corev1.ContainerRestartPolicyAlways)}, {Name: "j", Image: "busybox:1.35"}}
	ready := corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue}
	pods := map[string]corev1.Pod{
		"empty":   {},
		"pending": {ObjectMeta: metav1.ObjectMeta{Name: "p", CreationTimestamp: at(1)}, Spec: spec, Status: corev1.PodStatus{Phase: corev1.PodPending}},
		"scheduling gated": {Spec: spec, Status: corev1.PodStatus{Phase: corev1.PodPending,
			Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonSchedulingGated}}}},
		"running with restarts": {ObjectMeta: metav1.ObjectMeta{Name: "r", CreationTimestamp: at(600)}, Spec: spec,
			Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.88.0.5", NominatedNodeName: "other", Conditions: []corev1.PodCondition{ready},
				ContainerStatuses: []corev1.ContainerStatus{{Name: "a", Ready: true, RestartCount: 3, State: running, LastTerminationState: terminated(1, 0, "Error")},
					{Name: "b", Ready: true, Started: ptr(true), State: running}}}},
		"running, one crashing": {Spec: spec, Status: corev1.PodStatus{Phase: corev1.PodRunning,
			ContainerStatuses: []corev1.ContainerStatus{{Name: "a", Ready: true, State: running},
				{Name: "b", RestartCount: 7, State: waiting("CrashLoopBackOff"), LastTerminationState: terminated(2, 0, "")}}}},
		"completed, one still running": {Spec: spec, Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{ready},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "a", State: terminated(0, 0, "Completed")}, {Name: "b", Ready: true, State: running}}}},
		"not ready": {Spec: spec, Status: corev1.PodStatus{Phase: corev1.PodRunning,
			ContainerStatuses: []corev1.ContainerStatus{{Name: "a", State: terminated(0, 0, "Completed")}, {Name: "b", Ready: true, State: running}}}},
		"succeeded": {Spec: spec, Status: corev1.PodStatus{Phase: corev1.PodSucceeded,
			ContainerStatuses: []corev1.ContainerStatus{{Name: "a", State: terminated(0, 0, "Completed")}, {Name: "b", State: terminated(0, 0, "Completed")}}}},
		"failed by signal": {Spec: spec, Status: corev1.PodStatus{Phase: corev1.PodFailed,
			ContainerStatuses: []corev1.ContainerStatus{{Name: "a", State: terminated(137, 9, "")}, {Name: "b", State: terminated(3, 0, "")}}}},
		"evicted": {Spec: spec, Status: corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted"}},
		"unknown": {Spec: spec, Status: corev1.PodStatus{Phase: corev1.PodUnknown}},
		"init running": {Spec: withInit, Status: corev1.PodStatus{Phase: corev1.PodPending,
			InitContainerStatuses: []corev1.ContainerStatus{{Name: "i", RestartCount: 1, State: terminated(0, 0, "Completed"), LastTerminationState: terminated(1, 0, "Error")},
				{Name: "side", Started: ptr(true), State: running}, {Name: "j", State: running}}}},
		"init failed": {Spec: withInit, Status: corev1.PodStatus{Phase: corev1.PodPending,
			InitContainerStatuses: []corev1.ContainerStatus{{Name: "i", RestartCount: 2, State: terminated(1, 0, "Error")}}}},
		"init by signal": {Spec: withInit, Status: corev1.PodStatus{Phase: corev1.PodFailed,
			InitContainerStatuses: []corev1.ContainerStatus{{Name: "i", State: terminated(137, 9, "")}}}},
		"init waiting": {Spec: withInit, Status: corev1.PodStatus{Phase: corev1.PodPending,
			InitContainerStatuses: []corev1.ContainerStatus{{Name: "i", State: waiting("ImagePullBackOff")}}}},
		"init pod initializing": {Spec: withInit, Status: corev1.PodStatus{Phase: corev1.PodPending,
			InitContainerStatuses: []corev1.ContainerStatus{{Name: "i", State: waiting("PodInitializing")}}}},
		"sidecar not started": {Spec: withInit, Status: corev1.PodStatus{Phase: corev1.PodPending,
			InitContainerStatuses: []corev1.ContainerStatus{{Name: "i", State: terminated(0, 0, "Completed")}, {Name: "side", Started: ptr(false), State: running}}}},
		"readiness gates": {Spec: corev1.PodSpec{Containers: spec.Containers,
			ReadinessGates: []corev1.PodReadinessGate{{ConditionType: "example.com/a"}, {ConditionType: "example.com/b"}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{ready,
				{Type: "example.com/a", Status: corev1.ConditionTrue}, {Type: "example.com/b", Status: corev1.ConditionFalse}}}},
		"terminating": {ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: ptr(at(0))}, Spec: spec,
			Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "a", Ready: true, State: running}}}},
		"terminating, node lost": {ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: ptr(at(0))}, Spec: spec, Status: corev1.PodStatus{Phase: corev1.PodRunning, Reason: "NodeLost"}},
		"deleted, finished":      {ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: ptr(at(0))}, Spec: spec, Status: corev1.PodStatus{Phase: corev1.PodSucceeded}},
		"ephemeral containers": {Spec: corev1.PodSpec{Containers: spec.Containers,
			EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox:1.35"}}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, EphemeralContainerStatuses: []corev1.ContainerStatus{{Name: "debug", State: running}}}},
		"unicode": {ObjectMeta: metav1.ObjectMeta{Name: "pöd-\"x\"<&>\u2028"}, Spec: corev1.PodSpec{NodeName: "nœud\t1"},
			Status: corev1.PodStatus{Phase: "Phäse", Reason: "<reason>", PodIP: "fe80::1%eth0"}},
	}
	for name, pod := range pods {
		t.Run(name, func(t *testing.T) {
			data, err := json.Marshal(&pod)
			if err != nil {
				t.Fatal(err)
			}
			want, got := cellsBothWays(t, podResource, data, now)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s\n(-decoded whole +read):\n%s", data, diff)
			}
		})
	}
}

// TestJSONCursorErrors: stored JSON that encoding/json would not decode
// into the object is an error, not a row of zero values.
func TestJSONCursorErrors(t *testing.T) {
	for _, bad := range []string{
		``, `[]`, `{`, `{"metadata":`, `{"metadata":{"name":"a"}`, `{"metadata":{"name":"a}}`, `{"metadata" {}}`,
		`{"metadata":{"name":1}}`, `{"metadata":{"creationTimestamp":"yesterday"}}`, `{"spec":{"completions":"1"}}`,
		`{"spec":{"completions":1.5}}`, `{"spec":{"completions":2147483648}}`, `{"spec":{"completions":-}}`,
		`{"status":{"conditions":{}}}`, `{"status":{"conditions":[{"type":"Complete"}}}`, `{"metadata":{}} x`,
		`{"spec":{"selector":{"matchLabels":{"k":1}}}}`, `{"status":{"startTime":"2026-02-29T08:00:00Z"}}`,
		`{"status":{"startTime":"2026-11-25T08:59:60Z"}}`, `{"status":{"startTime":"2026-13-25T08:00:00Z"}}`, `{"spec":{"selector":{"matchExpressions":[{"values":"x"}]}}}`,
	} {
		job := &batchv1.Job{}
		c := jsonCursor{data: []byte(bad)}
		decodeJobCells(&c, job)
		if err := c.end(); err == nil {
			t.Errorf("%s: read as %+v", bad, job)
		}
		if json.Unmarshal([]byte(bad), &batchv1.Job{}) == nil {
			t.Errorf("%s: encoding/json decodes it", bad)
		}
	}
	for _, bad := range []string{`{"status":{"containerStatuses":[{"ready":"yes"}]}}`, `{"status":{"containerStatuses":[{"started":1}]}}`,
		`{"spec":{"initContainers":[{"restartPolicy":true}]}}`, `{"status":{"initContainerStatuses":[{"state":{"terminated":{"exitCode":"1"}}}]}}`} {
		pod := &corev1.Pod{}
		c := jsonCursor{data: []byte(bad)}
		decodePodCells(&c, pod)
		if err := c.end(); err == nil {
			t.Errorf("%s: read as %+v", bad, pod)
		}
	}
}

// TestWriteCells: the cells are written as encoding/json writes them.
func TestWriteCells(t *testing.T) {
	for name, cells := range map[string][]any{
		"plain":   {"a", "1/1", "", "<none>", "batch.kubernetes.io/controller-uid=0f3c"},
		"escaped": {"\"q\"", `back\slash`, "<&>", "tab\t", "nl\n", "\x01", "\x7f", "ünï", "\u2028\u2029", "bad \xff utf-8"},
		"others":  {1, int64(-2), 1.5, true, nil, []string{"x"}},
		"none":    {},
		"nil":     nil,
	} {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := writeCells(&buf, cells); err != nil {
				t.Fatal(err)
			}
			want, err := json.Marshal(metav1.TableRow{Cells: cells})
			if err != nil {
				t.Fatal(err)
			}
			want, _ = bytes.CutSuffix(want, []byte(`,"object":null}`))
			if diff := cmp.Diff(string(want), buf.String()); diff != "" {
				t.Errorf("(-encoding/json +written):\n%s", diff)
			}
		})
	}
}

// TestFormatLabelSelector: formatLabelSelector is metav1's.
func TestFormatLabelSelector(t *testing.T) {
	for _, v := range []string{"", "x", "0", "x-y", "x_y", "x.y", "-x", "x-", ".x", "x.", "_x", "x_", "x y", "x/y", "ü", "x\x00",
		strings.Repeat("x", 63), strings.Repeat("x", 64), "a" + strings.Repeat("-", 61) + "b"} {
		if want := len(validation.IsValidLabelValue(v)) == 0; isLabelValue(v) != want {
			t.Errorf("isLabelValue(%q) = %v, want %v", v, !want, want)
		}
	}
	for name, sel := range map[string]*metav1.LabelSelector{
		"nil":           nil,
		"empty":         {},
		"empty labels":  {MatchLabels: map[string]string{}},
		"one":           {MatchLabels: map[string]string{"batch.kubernetes.io/controller-uid": "0f3c-11"}},
		"sorted":        {MatchLabels: map[string]string{"z": "1", "a": "2", "m.example/x": "", "B": "3"}},
		"invalid key":   {MatchLabels: map[string]string{"a": "1", "not a key": "2"}},
		"invalid value": {MatchLabels: map[string]string{"a": "1", "b": "not a value"}},
		"long value":    {MatchLabels: map[string]string{"a": strings.Repeat("x", 64)}},
		"longest value": {MatchLabels: map[string]string{"a": strings.Repeat("x", 63)}},
		"values":        {MatchLabels: map[string]string{"a": "", "b": "x", "c": "a-b_c.d", "d": "0f3c-11e4"}},
		"value edges":   {MatchLabels: map[string]string{"a": "-x", "b": "x-", "c": "_x", "d": "x.", "e": "x y", "f": "ü"}},
		"expressions": {MatchLabels: map[string]string{"a": "1"}, MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "b", Operator: metav1.LabelSelectorOpIn, Values: []string{"y", "x"}}}},
	} {
		for range 2 { // the second time with the keys remembered
			if want, got := metav1.FormatLabelSelector(sel), formatLabelSelector(sel); got != want {
				t.Errorf("%s: %q, want %q", name, got, want)
			}
		}
	}
}

// TestDecodeCellsReadsEveryRow: every kind with decodeCells reads into the
// type its store holds.
func TestDecodeCellsReadsEveryRow(t *testing.T) {
	for _, rs := range []*resource{jobResource, podResource} {
		obj := rs.store.New()
		c := jsonCursor{data: []byte(`{"metadata":{"name":"x"}}`)}
		rs.decodeCells(&c, obj)
		if err := c.end(); err != nil || obj.GetName() != "x" || reflect.TypeOf(obj).Elem() != rs.goType {
			t.Errorf("%s: %v %q %T", rs.kind, err, obj.GetName(), obj)
		}
	}
}

// BenchmarkJobRow is one row of a Job Table from a Job as the API and the
// Job controller leave it (managedFields, labels, status): the cursor's
// walk, the cells and the row's JSON.
func BenchmarkJobRow(b *testing.B) {
	ts := newTestServer(b)
	if resp := ts.do(b, "POST", "/apis/batch/v1/namespaces/default/jobs", `{"metadata":{"name":"a","labels":{"app":"bench"}},
		"spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox:1.35","command":["true"]}]}}}}`); resp.code != 201 {
		b.Fatal(resp.body)
	}
	if resp := ts.do(b, "PATCH", "/apis/batch/v1/namespaces/default/jobs/a/status", `{"status":{"startTime":"2026-11-25T08:00:00Z",
		"completionTime":"2026-11-25T08:00:05Z","succeeded":1,"conditions":[{"type":"SuccessCriteriaMet","status":"True","lastProbeTime":"2026-11-25T08:00:05Z",
		"lastTransitionTime":"2026-11-25T08:00:05Z","reason":"CompletionsReached","message":"Reached expected number of succeeded pods"},
		{"type":"Complete","status":"True","lastProbeTime":"2026-11-25T08:00:05Z","lastTransitionTime":"2026-11-25T08:00:05Z",
		"reason":"CompletionsReached","message":"Reached expected number of succeeded pods"}]}}`,
		"Content-Type: application/merge-patch+json"); resp.code != 200 {
		b.Fatal(resp.body)
	}
	stored, _, err := ts.store.ListStoredAt(jobResource.store, "", nil, 0)
	if err != nil || len(stored) != 1 {
		b.Fatal(err)
	}
	it := listed{Stored: stored[0]}
	var buf bytes.Buffer
	var c jsonCursor
	obj := jobResource.store.New()
	now := time.Now()
	b.SetBytes(int64(len(it.JSON)))
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		if err := writeStoredRow(&buf, &c, jobResource, obj, "v1", "", &it, now); err != nil {
			b.Fatal(err)
		}
	}
}

// TestSkipString: the end of every string is found, escaped quotes and
// backslashes anywhere in it.
func TestSkipString(t *testing.T) {
	for n := range 70 {
		for _, fill := range []string{`\`, `"`, `\"`, `\\`, "é", "x"} {
			for at := 0; at <= n; at++ {
				s := strings.Repeat("a", at) + fill + strings.Repeat("b", n-at)
				quoted, err := json.Marshal(s)
				if err != nil {
					t.Fatal(err)
				}
				data := append(append([]byte{}, quoted...), `,"x":"y"}`...)
				if end, err := skipString(data, 0); err != nil || end != len(quoted) {
					t.Fatalf("%s: end %d (%v), want %d", quoted, end, err, len(quoted))
				}
				if _, err := skipString(quoted[:len(quoted)-1], 0); err == nil {
					t.Fatalf("%s: unterminated, no error", quoted[:len(quoted)-1])
				}
			}
		}
	}
}
