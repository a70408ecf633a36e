package api

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/kube"
)

func TestPodStatus(t *testing.T) {
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	waiting := func(reason string) corev1.ContainerState {
		return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}
	}
	terminated := func(reason string, code int32) corev1.ContainerState {
		return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: reason, ExitCode: code}}
	}
	now := metav1.Now()
	tests := map[string]struct {
		pod  corev1.Pod
		want string
	}{
		"pending without status": {
			pod: corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending}}, want: "Pending",
		},
		"container creating": {
			pod: corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending,
				ContainerStatuses: []corev1.ContainerStatus{{State: waiting("ContainerCreating")}}}},
			want: "ContainerCreating",
		},
		"running": {
			pod: corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning,
				ContainerStatuses: []corev1.ContainerStatus{{Ready: true, State: running}}}},
			want: "Running",
		},
		"completed": {
			pod: corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodSucceeded,
				ContainerStatuses: []corev1.ContainerStatus{{State: terminated("Completed", 0)}}}},
			want: "Completed",
		},
		"error": {
			pod: corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed,
				ContainerStatuses: []corev1.ContainerStatus{{State: terminated("Error", 1)}}}},
			want: "Error",
		},
		"exit code without reason": {
			pod: corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed,
				ContainerStatuses: []corev1.ContainerStatus{{State: terminated("", 3)}}}},
			want: "ExitCode:3",
		},
		"crash loop": {
			pod: corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning,
				ContainerStatuses: []corev1.ContainerStatus{{State: waiting("CrashLoopBackOff"), RestartCount: 3}}}},
			want: "CrashLoopBackOff",
		},
		"first container wins": {
			pod: corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning,
				ContainerStatuses: []corev1.ContainerStatus{{State: terminated("Error", 1)}, {Ready: true, State: running}}}},
			want: "Error",
		},
		"completed with one still running": {
			pod: corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning,
				Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}},
				ContainerStatuses: []corev1.ContainerStatus{{State: terminated("Completed", 0)}, {Ready: true, State: running}}}},
			want: "NotReady",
		},
		"init waiting": {
			pod: corev1.Pod{Spec: corev1.PodSpec{InitContainers: []corev1.Container{{Name: "i"}, {Name: "j"}}},
				Status: corev1.PodStatus{Phase: corev1.PodPending, InitContainerStatuses: []corev1.ContainerStatus{
					{Name: "i", State: terminated("Completed", 0)}, {Name: "j", State: running}}}},
			want: "Init:1/2",
		},
		"init failed": {
			pod: corev1.Pod{Spec: corev1.PodSpec{InitContainers: []corev1.Container{{Name: "i"}}},
				Status: corev1.PodStatus{Phase: corev1.PodPending, InitContainerStatuses: []corev1.ContainerStatus{
					{Name: "i", State: terminated("Error", 1)}}}},
			want: "Init:Error",
		},
		"init crash loop": {
			pod: corev1.Pod{Spec: corev1.PodSpec{InitContainers: []corev1.Container{{Name: "i"}}},
				Status: corev1.PodStatus{Phase: corev1.PodPending, InitContainerStatuses: []corev1.ContainerStatus{
					{Name: "i", State: waiting("CrashLoopBackOff")}}}},
			want: "Init:CrashLoopBackOff",
		},
		"terminating": {
			pod: corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now}, Status: corev1.PodStatus{Phase: corev1.PodRunning,
				ContainerStatuses: []corev1.ContainerStatus{{Ready: true, State: running}}}},
			want: "Terminating",
		},
		"deleted after it finished": {
			pod: corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now}, Status: corev1.PodStatus{Phase: corev1.PodSucceeded,
				ContainerStatuses: []corev1.ContainerStatus{{State: terminated("Completed", 0)}}}},
			want: "Completed",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := podStatus(&tc.pod); got != tc.want {
				t.Errorf("podStatus = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestPodCells(t *testing.T) {
	now := time.Now()
	created := metav1.NewTime(now.Add(-2 * time.Minute))
	lastExit := metav1.NewTime(now.Add(-30 * time.Second))
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", CreationTimestamp: created},
		Spec:       corev1.PodSpec{NodeName: "n", Containers: []corev1.Container{{Name: "a"}, {Name: "b"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1", ContainerStatuses: []corev1.ContainerStatus{
			{Name: "a", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}, RestartCount: 2,
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{FinishedAt: lastExit}}},
			{Name: "b", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
		}},
	}
	want := []any{"p", "2/2", "Running", "2 (30s ago)", "2m", "10.0.0.1", "n", "<none>", "<none>"}
	if diff := cmp.Diff(want, podCells(pod, now)); diff != "" {
		t.Errorf("(-want,+got):\n%s", diff)
	}
}

func TestJobCells(t *testing.T) {
	now := time.Now()
	start := metav1.NewTime(now.Add(-90 * time.Second))
	done := metav1.NewTime(now.Add(-30 * time.Second))
	base := func(mutate func(*batchv1.Job)) *batchv1.Job {
		j := &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "default", UID: "uid"},
			Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "c", Image: "busybox:1.35"}},
			}}},
		}
		kube.PrepareJobForCreate(j)
		j.CreationTimestamp = metav1.NewTime(now.Add(-2 * time.Minute))
		mutate(j)
		return j
	}
	cond := func(t batchv1.JobConditionType) batchv1.JobCondition {
		return batchv1.JobCondition{Type: t, Status: corev1.ConditionTrue}
	}
	tests := map[string]struct {
		job  *batchv1.Job
		want []any
	}{
		"running": {
			job:  base(func(j *batchv1.Job) { j.Status.StartTime = &start }),
			want: []any{"j", "Running", "0/1", "90s", "2m"},
		},
		"complete": {
			job: base(func(j *batchv1.Job) {
				j.Status = batchv1.JobStatus{StartTime: &start, CompletionTime: &done, Succeeded: 1,
					Conditions: []batchv1.JobCondition{cond(batchv1.JobSuccessCriteriaMet), cond(batchv1.JobComplete)}}
			}),
			want: []any{"j", "Complete", "1/1", "60s", "2m"},
		},
		"failed work queue": {
			job: base(func(j *batchv1.Job) {
				j.Spec.Completions, j.Spec.Parallelism = nil, ptrTo(int32(3))
				j.Status = batchv1.JobStatus{StartTime: &start, Conditions: []batchv1.JobCondition{cond(batchv1.JobFailureTarget), cond(batchv1.JobFailed)}}
			}),
			want: []any{"j", "Failed", "0/1 of 3", "90s", "2m"},
		},
		"failure target": {
			job: base(func(j *batchv1.Job) {
				j.Status.Conditions = []batchv1.JobCondition{cond(batchv1.JobFailureTarget)}
			}),
			want: []any{"j", "FailureTarget", "0/1", "", "2m"},
		},
		"suspended": {
			job: base(func(j *batchv1.Job) {
				j.Status.Conditions = []batchv1.JobCondition{cond(batchv1.JobSuspended)}
			}),
			want: []any{"j", "Suspended", "0/1", "", "2m"},
		},
		"terminating": {
			job: base(func(j *batchv1.Job) {
				ts := metav1.NewTime(now)
				j.DeletionTimestamp = &ts
				j.Status.Conditions = []batchv1.JobCondition{cond(batchv1.JobSuspended)}
			}),
			want: []any{"j", "Terminating", "0/1", "", "2m"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := jobCells(tc.job, now)
			if diff := cmp.Diff(tc.want, got[:5]); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
			wide := []any{"c", "busybox:1.35", "batch.kubernetes.io/controller-uid=uid"}
			if diff := cmp.Diff(wide, got[5:]); diff != "" {
				t.Errorf("wide (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestTableResponse(t *testing.T) {
	ts := newTestServer(t)
	ts.do(t, "POST", jobsPath, jobJSON("a"))
	ts.do(t, "POST", jobsPath, jobJSON("b"))
	accept := "Accept: application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
	tests := map[string]struct {
		path, accept string
		wantRows     int
		wantObject   string // kind of the row objects, "" for none
		wantTable    bool
	}{
		"list":             {path: jobsPath + "?limit=500", accept: accept, wantRows: 2, wantObject: "PartialObjectMetadata", wantTable: true},
		"one":              {path: jobsPath + "/a", accept: accept, wantRows: 1, wantObject: "PartialObjectMetadata", wantTable: true},
		"include none":     {path: jobsPath + "?includeObject=None", accept: accept, wantRows: 2, wantTable: true},
		"include object":   {path: jobsPath + "?includeObject=Object", accept: accept, wantRows: 2, wantObject: "Job", wantTable: true},
		"plain JSON first": {path: jobsPath, accept: "Accept: application/json", wantTable: false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := ts.do(t, "GET", tc.path, "", tc.accept)
			if r.code != 200 {
				t.Fatalf("code %d: %s", r.code, r.body)
			}
			var table metav1.Table
			if err := json.Unmarshal([]byte(r.body), &table); err != nil {
				t.Fatal(err)
			}
			if isTable := table.Kind == "Table"; isTable != tc.wantTable {
				t.Fatalf("kind %q, want table %v", table.Kind, tc.wantTable)
			}
			if !tc.wantTable {
				return
			}
			if table.APIVersion != "meta.k8s.io/v1" || len(table.ColumnDefinitions) != len(jobColumns) || table.ResourceVersion == "" {
				t.Errorf("table header wrong: %s", r.body)
			}
			if len(table.Rows) != tc.wantRows {
				t.Fatalf("rows = %d, want %d", len(table.Rows), tc.wantRows)
			}
			var obj metav1.PartialObjectMetadata
			if raw := table.Rows[0].Object.Raw; len(raw) > 0 {
				if err := json.Unmarshal(raw, &obj); err != nil {
					t.Fatal(err)
				}
			}
			if obj.Kind != tc.wantObject {
				t.Errorf("row object kind %q, want %q", obj.Kind, tc.wantObject)
			}
			if tc.wantObject != "" && obj.Name != "a" {
				t.Errorf("row object name %q, want a", obj.Name)
			}
		})
	}
}

func TestCronJobCells(t *testing.T) {
	now := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	cj := &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "backup", CreationTimestamp: metav1.NewTime(now.Add(-3 * time.Hour))},
		Spec: batchv1.CronJobSpec{
			Schedule: "30 2 * * *", TimeZone: ptrTo("Europe/Paris"), Suspend: ptrTo(true),
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "a", Image: "busybox:1.35"}, {Name: "b", Image: "alpine"}}}}}},
		},
		Status: batchv1.CronJobStatus{
			Active:           []corev1.ObjectReference{{Name: "backup-1"}, {Name: "backup-2"}},
			LastScheduleTime: &metav1.Time{Time: now.Add(-90 * time.Second)},
		},
	}
	want := []any{"backup", "30 2 * * *", "Europe/Paris", "True", int64(2), "90s", "3h", "a,b", "busybox:1.35,alpine", "<none>"}
	if diff := cmp.Diff(want, cronJobCells(cj, now)); diff != "" {
		t.Errorf("cells (-want,+got):\n%s", diff)
	}
	bare := &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: "b"}}
	want = []any{"b", "", "<none>", "<unset>", int64(0), "<none>", "<unknown>", "", "", "<none>"}
	if diff := cmp.Diff(want, cronJobCells(bare, now)); diff != "" {
		t.Errorf("cells of a bare CronJob (-want,+got):\n%s", diff)
	}
	if len(cronJobColumns) != len(want) {
		t.Errorf("%d columns for %d cells", len(cronJobColumns), len(want))
	}
}
