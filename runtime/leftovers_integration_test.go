//go:build integration

package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/containerd"
	apievents "github.com/containerd/containerd/api/events"
	"github.com/containerd/containerd/cio"
	"github.com/containerd/containerd/leases"
	"github.com/containerd/containerd/snapshots"
	"github.com/containerd/errdefs"
	"github.com/containerd/typeurl/v2"
	"github.com/opencontainers/image-spec/identity"

	"github.com/skiff-sh/skiff/runtime"
	"github.com/skiff-sh/skiff/runtime/runtimetest"
)

// The windows a crash of skiffd leaves open in an instance's life, made by
// hand through containerd's client, and what runtime makes of them.

// rawClient is a containerd client of the test's namespace.
func rawClient(t *testing.T) (*containerd.Client, context.Context) {
	t.Helper()
	c, err := containerd.New(env.Address, containerd.WithDefaultNamespace(env.Namespace))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, context.Background()
}

// stateRuntime is a Runtime that knows the test containerd's state dir.
func stateRuntime(t *testing.T) *runtime.Runtime {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	rt, err := runtime.New(context.Background(), env.Address, env.Namespace, exe, runtime.WithContainerdState(env.State))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

// prepareOrphanSnapshot prepares a managed snapshot keyed id over the test
// image, under a lease named as Create names its own, as a Create killed
// after the snapshot leaves them.
func prepareOrphanSnapshot(t *testing.T, c *containerd.Client, ctx context.Context, id string) {
	t.Helper()
	img, err := c.GetImage(ctx, "docker.io/library/busybox:1.35")
	if err != nil {
		t.Fatal(err)
	}
	diffIDs, err := img.RootFS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lctx, _, err := c.WithLease(ctx, leases.WithID("skiff-create-"+id), leases.WithExpiration(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.SnapshotService(containerd.DefaultSnapshotter).Prepare(lctx, id, identity.ChainID(diffIDs).String(),
		snapshots.WithLabels(map[string]string{runtime.LabelManaged: "true"}))
	if err != nil {
		t.Fatal(err)
	}
}

// bundleDir is where containerd keeps the shim bundle of task id.
func bundleDir(id string) string {
	return filepath.Join(env.State, "io.containerd.runtime.v2.task", env.Namespace, id)
}

// makeOldBundle makes a shim bundle for task id as containerd leaves one
// when it loses the task, a minute old.
func makeOldBundle(t *testing.T, id string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(bundleDir(id), "rootfs"), 0o700); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Minute)
	if err := os.Chtimes(bundleDir(id), old, old); err != nil {
		t.Fatal(err)
	}
}

// TestYoungBundleIsLeftAlone: a bundle that may belong to a task containerd
// is still making (for a request of an earlier skiffd) is not torn down;
// starting over it is a transient error until it is old enough.
func TestYoungBundleIsLeftAlone(t *testing.T) {
	rt := stateRuntime(t)
	_, ctx := rawClient(t)
	cfg := newConfig(t, "true")
	create(t, rt, cfg)
	if err := os.MkdirAll(filepath.Join(bundleDir(cfg.ID), "rootfs"), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, _, err := rt.Start(ctx, cfg.ID); !runtime.IsTransient(err) {
		t.Errorf("Start over a fresh bundle: %v, want a transient error", err)
	}
	if _, err := os.Stat(bundleDir(cfg.ID)); err != nil {
		t.Errorf("the fresh bundle was removed: %v", err)
	}
	if err := rt.Remove(ctx, cfg.ID); !runtime.IsTransient(err) {
		t.Errorf("Remove while a task may be in the making: %v, want a transient error", err)
	}
	makeOldBundle(t, cfg.ID)
	_, exitC, err := rt.Start(ctx, cfg.ID)
	if err != nil {
		t.Fatalf("Start once the bundle is old: %v", err)
	}
	waitExit(t, exitC)
}

func TestCreateOverInterruptedCreate(t *testing.T) {
	rt := stateRuntime(t)
	c, ctx := rawClient(t)
	cfg := newConfig(t, "true")
	prepareOrphanSnapshot(t, c, ctx, cfg.ID)
	if st := waitExit(t, start(t, rt, cfg)); st.Code != 0 {
		t.Errorf("exit code %d", st.Code)
	}
}

// taskNeverStarted creates a container running `true` and makes its task
// without starting it, as a Start cut short between the two leaves it.
func taskNeverStarted(t *testing.T, rt *runtime.Runtime, c *containerd.Client, ctx context.Context) runtime.ContainerConfig {
	t.Helper()
	cfg := newConfig(t, "true")
	create(t, rt, cfg)
	ctr, err := c.LoadContainer(ctx, cfg.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ctr.NewTask(ctx, cio.NullIO); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestStartOverInterruptedStart(t *testing.T) {
	rt := stateRuntime(t)
	c, ctx := rawClient(t)

	neverStarted := taskNeverStarted(t, rt, c, ctx)
	if got, err := rt.Inspect(ctx, neverStarted.ID); err != nil || got.State != runtime.StateCreated || !got.TaskCreated {
		t.Fatalf("Inspect of a task never started: %+v, %v; want created, with its task", got, err)
	}
	_, exitC, err := rt.Start(ctx, neverStarted.ID)
	if err != nil {
		t.Fatalf("Start of a task an interrupted start left: %v", err)
	}
	if st := waitExit(t, exitC); st.Code != 0 {
		t.Errorf("exit code %d", st.Code)
	}

	// NOTE: without the cleanup, containerd answers "failed to start shim:
	// mkdir …: file exists" for as long as the bundle stays.
	lostBundle := newConfig(t, "true")
	create(t, rt, lostBundle)
	makeOldBundle(t, lostBundle.ID)
	_, exitC, err = rt.Start(ctx, lostBundle.ID)
	if err != nil {
		t.Fatalf("Start over a shim bundle containerd lost: %v", err)
	}
	if st := waitExit(t, exitC); st.Code != 0 {
		t.Errorf("exit code %d", st.Code)
	}
}

// TestTaskStoppedBeforeStartNeverRan: containerd stops a task whose
// making was cut short (skiffd died, or containerd restarted) and reports
// exit 137 for it. Such a task never ran and must be reported never
// started; a task Start asked to start and then killed exited for real.
func TestTaskStoppedBeforeStartNeverRan(t *testing.T) {
	rt := stateRuntime(t)
	c, ctx := rawClient(t)
	killTask := func(id string) {
		t.Helper()
		ctr, err := c.LoadContainer(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		task, err := ctr.Task(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		exitC, err := task.Wait(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := task.Kill(ctx, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		if st := <-exitC; st.ExitCode() != 137 {
			t.Fatalf("killed task exited %d, want 137", st.ExitCode())
		}
	}

	made := newConfig(t, "true")
	create(t, rt, made)
	ctr, err := c.LoadContainer(ctx, made.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ctr.NewTask(ctx, cio.NullIO); err != nil {
		t.Fatal(err)
	}
	killTask(made.ID)
	assertNeverRan(t, rt, made, "a task stopped before its start", nil)

	ran := newConfig(t, "sleep", "60")
	exitC := start(t, rt, ran)
	killTask(ran.ID)
	waitExit(t, exitC)
	got, err := rt.Inspect(ctx, ran.ID)
	if err != nil || got.State != runtime.StateExited || got.Exit == nil || got.Exit.Code != 137 {
		t.Fatalf("Inspect of a started task killed: %+v, %v; want exited 137", got, err)
	}
}

// assertNeverRan checks that instance cfg, whose task never ran, is
// reported created, with no task to start and no exit; that Start asks to
// read it again; and that, once beforeRemove (if any) has run, it is
// removed and made again.
func assertNeverRan(t *testing.T, rt *runtime.Runtime, cfg runtime.ContainerConfig, what string, beforeRemove func()) {
	t.Helper()
	ctx := context.Background()
	got, err := rt.Inspect(ctx, cfg.ID)
	if err != nil || got.State != runtime.StateCreated || got.TaskCreated || got.Exit != nil {
		t.Fatalf("Inspect of %s: %+v, %v; want created, no task to start, no exit", what, got, err)
	}
	if _, _, err := rt.Start(ctx, cfg.ID); !runtime.IsTransient(err) {
		t.Fatalf("Start of %s: %v, want a transient error (read it again)", what, err)
	}
	if beforeRemove != nil {
		beforeRemove()
	}
	if err := rt.Remove(ctx, cfg.ID); err != nil {
		t.Fatal(err)
	}
	if st := waitExit(t, start(t, rt, cfg)); st.Code != 0 {
		t.Errorf("%s, made again: exit code %d", what, st.Code)
	}
}

// TestTaskLostBeforeStartNeverRan: containerd answers status "unknown"
// for a task whose shim does not answer it (here frozen with SIGSTOP; in
// CI's chaos test, a task whose making a containerd restart cut short). A
// task never asked to start never ran, whatever containerd can read of it:
// it is reported created, to be made again, not exited (CI's chaos test
// saw a pod recorded Failed, exit 255, for such an instance). A task Start
// did ask to start may be running: reading it is a transient error until
// its shim answers again.
func TestTaskLostBeforeStartNeverRan(t *testing.T) {
	rt := stateRuntime(t)
	c, ctx := rawClient(t)
	made := taskNeverStarted(t, rt, c, ctx)
	thaw := runtimetest.FreezeShim(t, env.Address, env.Namespace, made.ID)
	assertNeverRan(t, rt, made, "a task never started, its shim not answering", thaw)

	ran := newConfig(t, "sleep", "60")
	exitC := start(t, rt, ran)
	thaw = runtimetest.FreezeShim(t, env.Address, env.Namespace, ran.ID)
	if got, err := rt.Inspect(ctx, ran.ID); !runtime.IsTransient(err) {
		t.Fatalf("Inspect of a started task, its shim not answering: %+v, %v; want a transient error (neither never ran nor exited)", got, err)
	}
	// List does not fail for it: the others are not held with it.
	list, err := rt.List(ctx)
	if err != nil {
		t.Fatalf("List beside a started task whose shim does not answer: %v", err)
	}
	if i := slices.IndexFunc(list, func(c runtime.Container) bool { return c.ID == ran.ID }); i < 0 || list[i].State != runtime.StateUnknown {
		t.Fatalf("List reports %+v; want %s in state unknown", list, ran.ID)
	}
	thaw()
	if got, err := rt.Inspect(ctx, ran.ID); err != nil || got.State != runtime.StateRunning {
		t.Fatalf("Inspect of a started task, its shim answering again: %+v, %v; want running", got, err)
	}
	if err := rt.Stop(ctx, ran.ID, 0); err != nil {
		t.Fatal(err)
	}
	waitExit(t, exitC)
}

// TestStartBesideAStaleShim: a shim of an earlier task of the ID, which
// containerd no longer knows, still listens on the ID's shim socket and
// answers nothing (runtimetest.StaleShim). The new task's shim would hand
// containerd that socket, and the create would wait on it for ever; Start
// kills it first, and waits until its socket is closed: this one is slow
// to exit, as a loaded machine's was in CI ("ttrpc: closed", "connection
// refused" on the new task's create, when Start did not wait).
func TestStartBesideAStaleShim(t *testing.T) {
	rt := stateRuntime(t)
	cfg := newConfig(t, "true")
	create(t, rt, cfg)
	exited := runtimetest.StaleShim(t, env.Address, env.Namespace, cfg.ID)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, exitC, err := rt.Start(ctx, cfg.ID)
	if err != nil {
		t.Fatalf("Start beside a stale shim on the ID's socket: %v", err)
	}
	if st := waitExit(t, exitC); st.Code != 0 {
		t.Errorf("exit code %d", st.Code)
	}
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Error("the stale shim is still there")
	}
}

func TestStartedInstanceNeverStartsAgain(t *testing.T) {
	rt := stateRuntime(t)
	c, ctx := rawClient(t)
	cfg := newConfig(t, "true")
	waitExit(t, start(t, rt, cfg))
	if _, _, err := rt.Start(ctx, cfg.ID); !errors.Is(err, runtime.ErrStarted) {
		t.Errorf("Start of an exited instance: %v, want ErrStarted", err)
	}
	// A kill between the task's deletion and the container's leaves this.
	task, err := func() (containerd.Task, error) {
		ctr, err := c.LoadContainer(ctx, cfg.ID)
		if err != nil {
			return nil, err
		}
		return ctr.Task(ctx, nil)
	}()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := task.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := rt.Inspect(ctx, cfg.ID); err != nil || got.State != runtime.StateFinished {
		t.Errorf("Inspect of a started instance without task: %+v, %v; want finished", got, err)
	}
	if _, _, err := rt.Start(ctx, cfg.ID); !errors.Is(err, runtime.ErrStarted) {
		t.Errorf("Start of a finished instance: %v, want ErrStarted", err)
	}
	if err := rt.Create(ctx, cfg); !errdefs.IsAlreadyExists(err) {
		t.Errorf("Create over a finished instance: %v, want already exists", err)
	}
}

// TestRemoveMarksOnlyWhatNeverStarted: Remove labels a container removing
// before it deletes the task only when nothing else keeps the rest from
// Start: a container that started carries its start time, and the label
// would be one more write of containerd's metadata for every pod.
func TestRemoveMarksOnlyWhatNeverStarted(t *testing.T) {
	rt := stateRuntime(t)
	c, ctx := rawClient(t)
	// updates counts the container updates containerd publishes for id
	// until its deletion, which ends Remove.
	updates := func(id string, remove func()) int {
		t.Helper()
		sctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		filter := fmt.Sprintf(`topic~="/containers/(update|delete)",namespace==%q`, env.Namespace)
		envC, errC := c.EventService().Subscribe(sctx, filter)
		// NOTE: a subscription is live once containerd answers its first
		// event; an update of a container no test uses makes one.
		probe := newConfig(t, "true")
		create(t, rt, probe)
		probeCtr, err := c.LoadContainer(ctx, probe.ID)
		if err != nil {
			t.Fatal(err)
		}
		for live := false; !live; {
			if _, err := probeCtr.SetLabels(ctx, map[string]string{"probe": "1"}); err != nil {
				t.Fatal(err)
			}
			select {
			case <-envC:
				live = true
			case err := <-errC:
				t.Fatalf("subscribing: %v", err)
			case <-time.After(100 * time.Millisecond):
			}
		}
		remove()
		n := 0
		for {
			select {
			case e := <-envC:
				ev, err := typeurl.UnmarshalAny(e.Event)
				if err != nil {
					t.Fatal(err)
				}
				switch ev := ev.(type) {
				case *apievents.ContainerUpdate:
					if ev.ID == id {
						n++
					}
				case *apievents.ContainerDelete:
					if ev.ID == id {
						return n
					}
				}
			case err := <-errC:
				t.Fatalf("events: %v", err)
			}
		}
	}

	ran := newConfig(t, "true")
	waitExit(t, start(t, rt, ran))
	if n := updates(ran.ID, func() {
		if err := rt.Remove(ctx, ran.ID); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("Remove of a container that ran wrote its record %d times, want 0", n)
	}

	neverStarted := taskNeverStarted(t, rt, c, ctx)
	if n := updates(neverStarted.ID, func() {
		if err := rt.Remove(ctx, neverStarted.ID); err != nil {
			t.Fatal(err)
		}
	}); n != 1 {
		t.Errorf("Remove of a container that never started wrote its record %d times, want 1 (the removing label)", n)
	}
}

func TestSweepLeftovers(t *testing.T) {
	rt := stateRuntime(t)
	c, ctx := rawClient(t)
	orphan := newConfig(t, "true").ID
	prepareOrphanSnapshot(t, c, ctx, orphan)
	makeOldBundle(t, orphan)
	// A live instance's parts are never swept.
	live := newConfig(t, "sleep", "30")
	exitC := start(t, rt, live)

	for i := 0; i < 2; i++ { // task leftovers go on the second sweep that finds them
		if err := rt.SweepLeftovers(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.SnapshotService(containerd.DefaultSnapshotter).Stat(ctx, orphan); !errdefs.IsNotFound(err) {
		t.Errorf("orphan snapshot: %v, want it removed", err)
	}
	if ls, err := c.LeasesService().List(ctx, `id=="skiff-create-`+orphan+`"`); err != nil || len(ls) != 0 {
		t.Errorf("orphan lease: %v %v, want it deleted", ls, err)
	}
	if _, err := os.Stat(bundleDir(orphan)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("orphan bundle: %v, want it removed", err)
	}
	if got, err := rt.Inspect(ctx, live.ID); err != nil || got.State != runtime.StateRunning {
		t.Errorf("live instance after the sweep: %+v, %v; want running", got, err)
	}
	if _, err := os.Stat(bundleDir(live.ID)); err != nil {
		t.Errorf("live instance's bundle: %v", err)
	}
	if err := rt.Stop(ctx, live.ID, 0); err != nil {
		t.Fatal(err)
	}
	waitExit(t, exitC)
}
