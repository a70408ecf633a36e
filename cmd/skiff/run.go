package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"golang.org/x/term"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// drainTimeout bounds the wait for the last log lines once the Job has
// finished: its pods have, so their streams end on their own.
const drainTimeout = 30 * time.Second

// runOptions are skiff run's flags.
type runOptions struct {
	file      string
	spec      jobSpec
	namespace string
	rm        bool
	conn      connectOptions
}

const runUsage = `Usage:
  skiff run [options] -f JOB.yaml
  skiff run [options] --image IMAGE [--completions N] [--parallelism P] [--] [COMMAND [ARGS...]]

Submits a Job, streams its pods' logs as [pod/container] lines, and exits 0
when it completes, 1 when it fails, 2 on bad usage or an API error.

Options:
`

// parseRunFlags reads skiff run's arguments.
func parseRunFlags(args []string, usageOut io.Writer) (runOptions, error) {
	o := runOptions{spec: jobSpec{completions: 1, parallelism: 1, backoffLimit: -1}}
	fs := flag.NewFlagSet("skiff run", flag.ContinueOnError)
	fs.SetOutput(usageOut)
	fs.Usage = func() {
		fmt.Fprint(usageOut, runUsage)
		fs.PrintDefaults()
	}
	for _, name := range []string{"f", "filename"} {
		fs.StringVar(&o.file, name, "", "the Job manifest to submit (- reads standard input)")
	}
	fs.StringVar(&o.spec.image, "image", "", "run this image instead of a manifest")
	fs.StringVar(&o.spec.name, "name", "", "the Job's name with --image (default: the image's name and a random suffix)")
	fs.IntVar(&o.spec.completions, "completions", 1, "pods that must succeed, with --image")
	fs.IntVar(&o.spec.parallelism, "parallelism", 1, "pods running at once, with --image")
	fs.IntVar(&o.spec.backoffLimit, "backoff-limit", -1, "failed pods before the Job fails, with --image (default: the API's, 6)")
	fs.BoolVar(&o.spec.command, "command", false, "with --image: COMMAND replaces the image's entrypoint instead of being its arguments")
	for _, name := range []string{"n", "namespace"} {
		fs.StringVar(&o.namespace, name, "", "namespace of the Job (default: the manifest's, the kubeconfig's, or default)")
	}
	fs.BoolVar(&o.rm, "rm", false, "delete the Job (and its pods) when skiff run ends")
	o.conn.addFlags(fs)
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	o.spec.args = fs.Args()
	imageOnly := map[string]bool{"name": true, "completions": true, "parallelism": true, "backoff-limit": true, "command": true}
	var misplaced []string
	fs.Visit(func(f *flag.Flag) {
		if imageOnly[f.Name] && o.spec.image == "" {
			misplaced = append(misplaced, "--"+f.Name)
		}
	})
	switch {
	case o.file == "" && o.spec.image == "":
		return o, errors.New("a Job to run is needed: -f JOB.yaml or --image IMAGE")
	case o.file != "" && o.spec.image != "":
		return o, errors.New("-f and --image are exclusive")
	case len(misplaced) > 0:
		return o, fmt.Errorf("%s go with --image only", strings.Join(misplaced, ", "))
	case o.file != "" && len(o.spec.args) > 0:
		return o, fmt.Errorf("unexpected arguments %q with -f", o.spec.args)
	case o.spec.completions < 1 || o.spec.parallelism < 0:
		return o, errors.New("--completions must be at least 1 and --parallelism at least 0")
	}
	return o, nil
}

// runCommand runs `skiff run` and returns its exit code.
func runCommand(args []string, io stdio) int {
	o, err := parseRunFlags(args, io.err)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(io.err, "skiff run: %v\n", err)
		return exitUsage
	}
	cfg, cfgNS, err := o.conn.config()
	if err != nil {
		fmt.Fprintf(io.err, "skiff run: %v\n", err)
		return exitUsage
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		fmt.Fprintf(io.err, "skiff run: %v\n", err)
		return exitUsage
	}
	r := &runner{cs: cs, rm: o.rm, con: newConsole(io.out, io.err), in: io.in}
	if o.file != "" {
		m, err := readManifest(o.file, io.in)
		if err != nil {
			fmt.Fprintf(io.err, "skiff run: %v\n", err)
			return exitUsage
		}
		if o.namespace != "" && m.namespace != "" && o.namespace != m.namespace {
			fmt.Fprintf(io.err, "skiff run: the namespace from the provided object %q does not match the namespace %q\n", m.namespace, o.namespace)
			return exitUsage
		}
		r.manifest, r.ns = &m, firstOf(o.namespace, m.namespace, cfgNS, metav1.NamespaceDefault)
	} else {
		r.job, r.ns = o.spec.job(), firstOf(o.namespace, cfgNS, metav1.NamespaceDefault)
	}
	// Ctrl-C may only be answered on a terminal; a write to a closed pipe
	// must fail (and end the run) instead of killing skiff silently.
	if f, ok := io.in.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		r.interactive = true
	}
	signal.Ignore(syscall.SIGPIPE)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	r.sigs = sigs
	return r.run(context.Background())
}

func firstOf(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// runner is one skiff run.
type runner struct {
	cs          kubernetes.Interface
	ns          string
	manifest    *manifest    // the Job to create: a manifest…
	job         *batchv1.Job // …or one built from flags; then the created Job
	rm          bool
	con         *console
	in          io.Reader
	interactive bool // standard input is a terminal: Ctrl-C asks
	sigs        <-chan os.Signal
	streams     *streams
}

// run creates the Job, follows it and returns the exit code.
func (r *runner) run(ctx context.Context) int {
	created, err := r.create(ctx)
	if err != nil {
		r.con.message("skiff run: creating the Job: %v", err)
		return exitUsage
	}
	r.job = created
	start := time.Now()
	r.con.message("job %s/%s created", r.ns, r.job.Name)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	r.streams = newStreams(ctx, r.cs, r.ns, r.con)
	defer r.streams.stop()

	changed := make(chan struct{}, 1)
	pods, jobs, err := r.informers(ctx, changed)
	if err != nil {
		r.con.message("skiff run: %v", err)
		return exitUsage
	}
	seen := false
	for {
		select {
		case sig := <-r.sigs:
			return r.interrupted(ctx, sig)
		case <-r.con.broken:
			return r.outputClosed(ctx)
		case <-changed:
		}
		obj, exists, _ := jobs.GetStore().GetByKey(r.ns + "/" + r.job.Name)
		if !exists {
			if seen {
				r.con.progress("")
				r.con.message("job %s/%s was deleted before it finished", r.ns, r.job.Name)
				return exitFailed
			}
			continue // not listed yet
		}
		seen = true
		job := obj.(*batchv1.Job)
		var jobPods []*corev1.Pod
		for _, o := range pods.GetStore().List() {
			pod := o.(*corev1.Pod)
			jobPods = append(jobPods, pod)
			r.streams.ensure(pod)
		}
		r.con.progress(progressLine(job, jobPods))
		if cond := finished(job); cond != nil {
			return r.finish(ctx, job, cond, time.Since(start))
		}
	}
}

// create submits the Job: a manifest as it was written, validated
// strictly by the server, or the one built from flags.
func (r *runner) create(ctx context.Context) (*batchv1.Job, error) {
	if r.manifest == nil {
		return r.cs.BatchV1().Jobs(r.ns).Create(ctx, r.job, metav1.CreateOptions{FieldManager: "skiff"})
	}
	job := &batchv1.Job{}
	err := r.cs.BatchV1().RESTClient().Post().Namespace(r.ns).Resource("jobs").
		Param("fieldValidation", "Strict").Param("fieldManager", "skiff").
		SetHeader("Content-Type", "application/json").
		Body(r.manifest.json).Do(ctx).Into(job)
	return job, err
}

// informers watch the Job and its pods (by the Job's selector) and signal
// changed on every change.
func (r *runner) informers(ctx context.Context, changed chan<- struct{}) (pods, jobs cache.SharedIndexInformer, err error) {
	sel, err := metav1.LabelSelectorAsSelector(r.job.Spec.Selector)
	if err != nil {
		return nil, nil, fmt.Errorf("the Job's selector: %w", err)
	}
	notify := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { notify() },
		UpdateFunc: func(any, any) { notify() },
		DeleteFunc: func(any) { notify() },
	}
	podClient, jobClient := r.cs.CoreV1().Pods(r.ns), r.cs.BatchV1().Jobs(r.ns)
	byName := fields.OneTermEqualSelector("metadata.name", r.job.Name).String()
	pods = cache.NewSharedIndexInformer(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = sel.String()
			return podClient.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = sel.String()
			return podClient.Watch(ctx, o)
		},
	}, &corev1.Pod{}, 0, cache.Indexers{})
	jobs = cache.NewSharedIndexInformer(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = byName
			return jobClient.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = byName
			return jobClient.Watch(ctx, o)
		},
	}, &batchv1.Job{}, 0, cache.Indexers{})
	for _, inf := range []cache.SharedIndexInformer{pods, jobs} {
		if _, err := inf.AddEventHandler(handler); err != nil {
			return nil, nil, err
		}
		go inf.RunWithContext(ctx)
	}
	return pods, jobs, nil
}

// finished is the Job's terminal condition, Complete or Failed, if it has
// one.
func finished(job *batchv1.Job) *batchv1.JobCondition {
	for i, c := range job.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return &job.Status.Conditions[i]
		}
	}
	return nil
}

// finish writes the last logs and the outcome, deletes the Job with --rm,
// and returns the exit code.
func (r *runner) finish(ctx context.Context, job *batchv1.Job, cond *batchv1.JobCondition, took time.Duration) int {
	// NOTE: a container that started and ended between two watch events
	// was never seen running: list the pods once more so that every log
	// is written.
	if sel, err := metav1.LabelSelectorAsSelector(job.Spec.Selector); err == nil {
		if list, err := r.cs.CoreV1().Pods(r.ns).List(ctx, metav1.ListOptions{LabelSelector: sel.String()}); err == nil {
			for i := range list.Items {
				r.streams.ensure(&list.Items[i])
			}
		}
	}
	r.streams.wait(drainTimeout)
	r.con.progress("")
	code := exitComplete
	if cond.Type == batchv1.JobComplete {
		r.con.message("job %s/%s completed: %d succeeded in %s", r.ns, job.Name, job.Status.Succeeded, duration.HumanDuration(took))
	} else {
		code = exitFailed
		r.con.message("job %s/%s failed: %s: %s", r.ns, job.Name, cond.Reason, cond.Message)
	}
	if r.rm {
		r.delete(ctx)
	}
	return code
}

// interrupted ends the run on a signal: with --rm the Job is deleted; on
// Ctrl-C at a terminal the user is asked; otherwise it is left running.
func (r *runner) interrupted(ctx context.Context, sig os.Signal) int {
	code := 128 + int(sig.(syscall.Signal))
	r.streams.stop()
	r.con.progress("")
	switch {
	case r.rm:
		r.delete(ctx)
	case sig == os.Interrupt && r.interactive && r.confirm(fmt.Sprintf("Delete job %s/%s and its pods? [y/N] ", r.ns, r.job.Name)):
		r.delete(ctx)
	default:
		r.leftRunning()
	}
	return code
}

// confirm asks question on the terminal; another signal is a no.
func (r *runner) confirm(question string) bool {
	resume := r.con.pause()
	defer resume()
	fmt.Fprint(r.con.errw, "\n"+question)
	answer := make(chan string, 1)
	go func() { // NOTE: left blocked on the terminal if a signal answers
		line, _ := bufio.NewReader(r.in).ReadString('\n')
		answer <- line
	}()
	select {
	case line := <-answer:
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "y", "yes":
			return true
		}
		return false
	case <-r.sigs:
		fmt.Fprintln(r.con.errw)
		return false
	}
}

// outputClosed ends the run when standard output went away (the reader
// of a pipe exited): nothing can be shown any more.
func (r *runner) outputClosed(ctx context.Context) int {
	r.streams.stop()
	if r.rm {
		r.delete(ctx)
	} else {
		r.leftRunning()
	}
	return 128 + int(syscall.SIGPIPE)
}

func (r *runner) leftRunning() {
	r.con.message("job %s/%s left running; delete it with: kubectl delete job -n %s %s", r.ns, r.job.Name, r.ns, r.job.Name)
}

// delete deletes the Job and, through the garbage collector, its pods.
func (r *runner) delete(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	bg := metav1.DeletePropagationBackground
	if err := r.cs.BatchV1().Jobs(r.ns).Delete(ctx, r.job.Name, metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
		r.con.message("skiff run: deleting job %s/%s: %v", r.ns, r.job.Name, err)
		return
	}
	r.con.message("job %s/%s deleted", r.ns, r.job.Name)
}

// progressLine is "job: 3/10 succeeded, 1 failed, 2 running, 1 pending
// (reason)": the Job's counts, and its pods' phases.
func progressLine(job *batchv1.Job, pods []*corev1.Pod) string {
	running, pending, why := 0, 0, ""
	for _, p := range pods {
		switch p.Status.Phase {
		case corev1.PodRunning:
			running++
		case corev1.PodPending:
			pending++
			if why == "" {
				why = waitingReason(p)
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d", job.Name, job.Status.Succeeded)
	if job.Spec.Completions != nil {
		fmt.Fprintf(&b, "/%d", *job.Spec.Completions)
	}
	fmt.Fprintf(&b, " succeeded, %d failed, %d running", job.Status.Failed, running)
	if pending > 0 {
		fmt.Fprintf(&b, ", %d pending", pending)
		if why != "" {
			fmt.Fprintf(&b, " (%s)", why)
		}
	}
	return b.String()
}

// waitingReason is why a pending pod waits, when it is worth showing: an
// image that cannot be pulled, a container that cannot be created, a pod
// the node cannot admit yet.
func waitingReason(p *corev1.Pod) string {
	for _, list := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for _, st := range list {
			if w := st.State.Waiting; w != nil && w.Reason != "" && w.Reason != "ContainerCreating" && w.Reason != "PodInitializing" {
				return w.Reason
			}
		}
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason != "" {
			return c.Reason
		}
	}
	return ""
}
