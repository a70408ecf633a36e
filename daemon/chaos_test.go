//go:build integration

package daemon_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/runtime/runtimetest"
)

// chaos is a randomized run: Jobs are created, and while they run skiffd
// is killed with SIGKILL and restarted on the same data dir, and its
// containerd restarted (stopped or killed), at random moments. Afterwards
// containerd's own event stream must agree with what skiffd recorded: no
// container started twice, every pod's recorded exit code its instance's
// real one, every Job's counts what really ran, no pod stuck, and nothing
// left behind once the Jobs are deleted.
type chaos struct {
	jobs     []*batchv1.Job
	kills    int           // kill -9 rounds of skiffd
	restarts int           // containerd restarts
	minGap   time.Duration // between two disruptions, drawn uniformly
	maxGap   time.Duration
	timeout  time.Duration // for the Jobs to finish after the last disruption
}

// chaosFigures are what a chaos run measured.
type chaosFigures struct {
	seed              uint64
	kills, restarts   int
	whileRunning      int // disruptions that hit a Job still running
	pods, starts      int
	succeeded, failed int
	ranTwice          int
	repairs           map[string]int // what skiffd\'s log says it repaired, by message
	clean             bool           // every check of the run passed
	elapsed           time.Duration
}

func (f chaosFigures) String() string {
	verdict := "clean"
	if !f.clean {
		verdict = "NOT clean (see the errors)"
	}
	var repairs []string
	for _, r := range repairMessages {
		if n := f.repairs[r]; n > 0 {
			repairs = append(repairs, fmt.Sprintf("%d× %q", n, r))
		}
	}
	return fmt.Sprintf("seed %d: %d kill -9, %d containerd restarts (%d while the Jobs ran); %d pods, %d container starts (%d ran twice), "+
		"%d succeeded, %d failed; %s; %s; repaired: %s",
		f.seed, f.kills, f.restarts, f.whileRunning, f.pods, f.starts, f.ranTwice, f.succeeded, f.failed, verdict,
		f.elapsed.Round(time.Second), strings.Join(repairs, ", "))
}

// repairMessages are what skiffd logs when it repairs a window a crash or a
// containerd restart left open; a chaos run counts them.
var repairMessages = []string{
	"container runtime unavailable; retrying",
	"removing an instance that never started, to create it again",
	"starting a task an interrupted start left created",
	"removing a snapshot left by an interrupted create",
	"deleting a lease left by an interrupted create",
	"deleting a task left by an interrupted start",
	"removing the shim bundle of a task containerd no longer lists",
	"killing the shim of a task containerd no longer lists",
	"killing a log driver whose container is gone",
	"removing a snapshot no container uses",
	"removing a container that belongs to no live pod",
	"removing container; retrying",
}

// countRepairs counts repairMessages in skiffd's log.
func (s *skiffd) countRepairs() map[string]int {
	b, _ := os.ReadFile(filepath.Join(s.dataDir, "skiffd.log"))
	counts := map[string]int{}
	for _, m := range repairMessages {
		counts[m] = strings.Count(string(b), `msg="`+m+`"`)
	}
	return counts
}

// chaosSeed is SKIFF_CHAOS_SEED (to replay a run), else a random one.
func chaosSeed(t testing.TB) uint64 {
	if v := os.Getenv("SKIFF_CHAOS_SEED"); v != "" {
		seed, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("SKIFF_CHAOS_SEED=%q: %v", v, err)
		}
		return seed
	}
	return rand.Uint64()
}

// run runs the chaos on a skiffd of its own over a containerd of its own,
// and reports its figures.
func (c chaos) run(t *testing.T) chaosFigures {
	t.Helper()
	fig := chaosFigures{seed: chaosSeed(t)}
	t.Logf("chaos seed %d (SKIFF_CHAOS_SEED replays it)", fig.seed)
	rng := rand.New(rand.NewPCG(fig.seed, fig.seed^0x5eed))
	env := runtimetest.Start(t)
	s := newSkiffd(t, "--sweep-interval", "500ms")
	s.cd = env
	events := recordEvents(t, env, s.namespace())
	s.start()
	ctx := context.Background()
	began := time.Now()
	marks := t.TempDir()
	for _, j := range c.jobs {
		if _, err := s.client.BatchV1().Jobs("default").Create(ctx, withRunMarkers(j, marks), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	disruptions := make([]bool, 0, c.kills+c.restarts) // true = containerd restart
	for range c.kills {
		disruptions = append(disruptions, false)
	}
	for range c.restarts {
		disruptions = append(disruptions, true)
	}
	rng.Shuffle(len(disruptions), func(i, j int) { disruptions[i], disruptions[j] = disruptions[j], disruptions[i] })
	for _, restart := range disruptions {
		time.Sleep(c.minGap + time.Duration(rng.Int64N(int64(c.maxGap-c.minGap))))
		if !s.jobsFinished(c.jobs) {
			fig.whileRunning++
		}
		if restart {
			if err := env.Restart(ctx, rng.IntN(2) == 0); err != nil {
				t.Fatal(err)
			}
			fig.restarts++
			continue
		}
		s.kill()
		s.start()
		fig.kills++
	}
	for _, j := range c.jobs {
		waitJobFinished(t, s, j.Name, c.timeout)
	}
	fig.elapsed = time.Since(began)
	markers := runMarkers(t, marks)
	tr := events.truth()
	for _, j := range c.jobs {
		job := waitJobFinished(t, s, j.Name, time.Second)
		pods := jobPods(t, s.client, job)
		real := checkJob(t, events, job, pods, markers)
		fig.pods += len(pods)
		fig.succeeded += real.succeeded
		fig.failed += real.failed
		for _, p := range pods {
			for _, cs := range p.Status.ContainerStatuses {
				n := max(tr.starts[strings.TrimPrefix(cs.ContainerID, "containerd://")], markers[p.Name].runs)
				fig.starts += n
				if n > 1 {
					fig.ranTwice++
				}
			}
		}
	}
	s.deleteJobs(2 * time.Minute)
	s.assertNothingLeft(time.Minute)
	fig.repairs = s.countRepairs()
	fig.clean = !t.Failed()
	t.Log(fig)
	return fig
}

// jobsFinished reports whether every Job is Complete or Failed.
func (s *skiffd) jobsFinished(jobs []*batchv1.Job) bool {
	for _, j := range jobs {
		got, err := s.client.BatchV1().Jobs("default").Get(context.Background(), j.Name, metav1.GetOptions{})
		if err != nil || !jobFinished(got) {
			return false
		}
	}
	return true
}

func jobFinished(j *batchv1.Job) bool {
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// waitJobFinished waits until the Job is Complete or Failed.
func waitJobFinished(t testing.TB, s *skiffd, name string, timeout time.Duration) *batchv1.Job {
	t.Helper()
	var job *batchv1.Job
	waitFor(t, timeout, "job "+name+" to finish", func() (bool, error) {
		j, err := s.client.BatchV1().Jobs("default").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		job = j
		return jobFinished(j), nil
	})
	return job
}

// flakyJob is a NonIndexed Job whose pods sleep a moment and fail one time
// in ten (exit 3); backoffLimit is high enough for it to complete.
func flakyJob(name string, completions, parallelism int32, sleep string) *batchv1.Job {
	return shJob(name, "sleep "+sleep+`; [ $((RANDOM % 10)) != 0 ] || exit 3`, completions, parallelism, completions, corev1.RestartPolicyNever)
}

// TestChaos is the chaos run that fits in make test: a 100-pod Job whose
// pods fail now and then, skiffd killed 5 times and containerd restarted
// twice at random moments 0.5-3s apart. make chaos runs the long one.
func TestChaos(t *testing.T) {
	t.Parallel()
	fig := chaos{
		jobs:     []*batchv1.Job{flakyJob("chaos", 100, 8, "0.3")},
		kills:    5,
		restarts: 2,
		minGap:   500 * time.Millisecond,
		maxGap:   3 * time.Second,
		timeout:  5 * time.Minute,
	}.run(t)
	if fig.kills != 5 || fig.restarts != 2 {
		t.Errorf("disrupted %d and %d times; want 5 kills and 2 restarts", fig.kills, fig.restarts)
	}
}
