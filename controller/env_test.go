package controller

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/reconcile"
	"github.com/virtkit/virtkit/store"
)

// clock is a settable test clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Since is Now minus t.
func (c *clock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// env is a control plane driven synchronously: every reconciler runs over
// every object until the store stops changing. A fake node agent moves VMI
// phases the way a real one would.
type env struct {
	t     testing.TB
	ctx   context.Context
	st    *store.Memory
	clock *clock
	vm    *VMReconciler
	vmi   *VMIReconciler
	rs    *ReplicaSetReconciler
	ev    *EvictionReconciler
	agent *fakeAgent
	// errs are the last reconcile errors by "kind/key".
	errs   map[string]error
	passes int // settle gives up after this many passes
}

func newEnv(t testing.TB, nodes int) *env {
	return newEnvWith(t, nodes, func(st store.Store) store.Store { return st })
}

// newEnvWith lets a test wrap the store the reconcilers and the agent see.
func newEnvWith(t testing.TB, nodes int, wrap func(store.Store) store.Store) *env {
	t.Helper()
	c := &clock{now: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)}
	mem, err := store.NewMemoryWithOptions(store.Options{Clock: c})
	require.NoError(t, err)
	st := wrap(mem)
	o := ReconcilerOptions{Store: st, Clock: c, IntN: func(int) int { return 0 }}
	e := &env{t: t, ctx: context.Background(), st: mem, clock: c, errs: map[string]error{}, passes: 60}
	e.vm, err = NewVMReconciler(o)
	require.NoError(t, err)
	e.vmi, err = NewVMIReconciler(o)
	require.NoError(t, err)
	e.rs, err = NewReplicaSetReconciler(o)
	require.NoError(t, err)
	e.ev, err = NewEvictionReconciler(o)
	require.NoError(t, err)
	e.agent = &fakeAgent{st: st, now: c.Now, failStart: map[string]bool{}, reboots: map[string]int{}}
	for i := 1; i <= nodes; i++ {
		e.addNode(fmt.Sprintf("n%d", i), "4", "8Gi")
	}
	return e
}

func (e *env) addNode(name, cpu, mem string) {
	e.t.Helper()
	hb := metav1.NewTime(e.clock.Now())
	n := &virtkit.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: virtkit.NodeStatus{
			Allocatable:       virtkit.ResourceList{virtkit.ResourceCPU: resource.MustParse(cpu), virtkit.ResourceMemory: resource.MustParse(mem)},
			Conditions:        []virtkit.Condition{{Type: virtkit.NodeReady, Status: virtkit.ConditionTrue}},
			LastHeartbeatTime: &hb,
		},
	}
	require.NoError(e.t, e.st.Create(e.ctx, n))
}

func (e *env) fingerprint() string {
	var parts []string
	add := func(kind string, l virtkit.ObjectList, items func() []metav1.Object) {
		require.NoError(e.t, e.st.List(e.ctx, l, store.ListOptions{}))
		for _, o := range items() {
			parts = append(parts, kind+"/"+o.GetNamespace()+"/"+o.GetName()+"@"+o.GetResourceVersion())
		}
	}
	vms, vmis, rss, nodes, migs := &virtkit.VirtualMachineList{}, &virtkit.VirtualMachineInstanceList{},
		&virtkit.VirtualMachineInstanceReplicaSetList{}, &virtkit.NodeList{}, &virtkit.VirtualMachineInstanceMigrationList{}
	add("vm", vms, func() (o []metav1.Object) {
		for i := range vms.Items {
			o = append(o, &vms.Items[i])
		}
		return
	})
	add("vmi", vmis, func() (o []metav1.Object) {
		for i := range vmis.Items {
			o = append(o, &vmis.Items[i])
		}
		return
	})
	add("rs", rss, func() (o []metav1.Object) {
		for i := range rss.Items {
			o = append(o, &rss.Items[i])
		}
		return
	})
	add("node", nodes, func() (o []metav1.Object) {
		for i := range nodes.Items {
			o = append(o, &nodes.Items[i])
		}
		return
	})
	add("mig", migs, func() (o []metav1.Object) {
		for i := range migs.Items {
			o = append(o, &migs.Items[i])
		}
		return
	})
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// pass runs every reconciler once over every object, then the agent.
func (e *env) pass() {
	run := func(kind string, r reconcile.Reconciler, reqs []reconcile.Request) {
		for _, req := range reqs {
			_, err := r.Reconcile(e.ctx, req)
			if err != nil {
				e.errs[kind+"/"+req.String()] = err
			} else {
				delete(e.errs, kind+"/"+req.String())
			}
		}
	}
	keys := func(l virtkit.ObjectList) []reconcile.Request {
		require.NoError(e.t, e.st.List(e.ctx, l, store.ListOptions{}))
		var out []reconcile.Request
		switch l := l.(type) {
		case *virtkit.VirtualMachineList:
			for _, i := range l.Items {
				out = append(out, reconcile.Request{Namespace: i.Namespace, Name: i.Name})
			}
		case *virtkit.VirtualMachineInstanceList:
			for _, i := range l.Items {
				out = append(out, reconcile.Request{Namespace: i.Namespace, Name: i.Name})
			}
		case *virtkit.VirtualMachineInstanceReplicaSetList:
			for _, i := range l.Items {
				out = append(out, reconcile.Request{Namespace: i.Namespace, Name: i.Name})
			}
		case *virtkit.NodeList:
			for _, i := range l.Items {
				out = append(out, reconcile.Request{Name: i.Name})
			}
		}
		return out
	}
	run("vm", e.vm, keys(&virtkit.VirtualMachineList{}))
	run("rs", e.rs, keys(&virtkit.VirtualMachineInstanceReplicaSetList{}))
	run("vmi", e.vmi, keys(&virtkit.VirtualMachineInstanceList{}))
	run("eviction", e.ev, keys(&virtkit.NodeList{}))
	for k := range e.errs {
		if strings.HasPrefix(k, "agent/") {
			delete(e.errs, k)
		}
	}
	for k, err := range e.agent.step(e.ctx) {
		e.errs["agent/"+k] = err
	}
}

// settle runs passes until nothing changes.
func (e *env) settle() {
	e.t.Helper()
	for range e.passes {
		before := e.fingerprint()
		e.pass()
		if e.fingerprint() == before && !e.conflicted() {
			return
		}
	}
	e.t.Fatalf("control plane did not settle: %s", e.fingerprint())
}

// conflicted reports whether the last pass lost a write race somewhere
// (then a quiet pass does not mean the state is final).
func (e *env) conflicted() bool {
	for _, err := range e.errs {
		if errors.Is(err, store.ErrConflict) {
			return true
		}
	}
	return false
}

func (e *env) getVM(name string) *virtkit.VirtualMachine {
	e.t.Helper()
	vm := &virtkit.VirtualMachine{}
	require.NoError(e.t, e.st.Get(e.ctx, store.Key{Namespace: "default", Name: name}, vm))
	return vm
}

// getVMI returns the VMI or nil.
func (e *env) getVMI(name string) *virtkit.VirtualMachineInstance {
	e.t.Helper()
	vmi := &virtkit.VirtualMachineInstance{}
	err := e.st.Get(e.ctx, store.Key{Namespace: "default", Name: name}, vmi)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	require.NoError(e.t, err)
	return vmi
}

func key(name string) store.Key { return store.Key{Namespace: "default", Name: name} }

func vmiTemplate(name string) *virtkit.VirtualMachineInstanceTemplateSpec {
	t := &virtkit.VirtualMachineInstanceTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}, Annotations: map[string]string{"note": "from-template"}},
	}
	t.Spec.Domain.Resources.Requests = virtkit.ResourceList{
		virtkit.ResourceCPU: resource.MustParse("1"), virtkit.ResourceMemory: resource.MustParse("1Gi"),
	}
	return t
}

func newVM(name string, rs virtkit.VirtualMachineRunStrategy) *virtkit.VirtualMachine {
	return &virtkit.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec:       virtkit.VirtualMachineSpec{RunStrategy: &rs, Template: vmiTemplate(name)},
	}
}

func newRunningVM(name string, running bool) *virtkit.VirtualMachine {
	return &virtkit.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec:       virtkit.VirtualMachineSpec{Running: &running, Template: vmiTemplate(name)},
	}
}

// fakeAgent plays every node agent: it takes Scheduled VMIs (finalizer
// first), runs them, honours pause and soft-reboot requests, and stops
// deleted ones, following the package's protocol.
type fakeAgent struct {
	st        store.Store
	now       func() time.Time
	mu        sync.Mutex
	failStart map[string]bool // VMI name -> fail before Running
	reboots   map[string]int
}

func (a *fakeAgent) setFailStart(name string, fail bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.failStart[name] = fail
}

func (a *fakeAgent) failing(name string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.failStart[name]
}

// step runs the agent over every VMI and returns the errors by VMI key.
func (a *fakeAgent) step(ctx context.Context) map[string]error {
	errs := map[string]error{}
	list := &virtkit.VirtualMachineInstanceList{}
	if err := a.st.List(ctx, list, store.ListOptions{}); err != nil {
		errs["list"] = err
		return errs
	}
	for i := range list.Items {
		v := &list.Items[i]
		if err := a.reconcile(ctx, v); err != nil {
			errs[v.Namespace+"/"+v.Name] = err
		}
	}
	return errs
}

// reconcile is the agent's handling of one VMI; errors (conflicts) are
// retried on the next step.
func (a *fakeAgent) reconcile(ctx context.Context, vmi *virtkit.VirtualMachineInstance) error {
	now := metav1.NewTime(a.now())
	mine := hasFinalizer(vmi, virtkit.NodeAgentFinalizer)
	switch {
	case mine && (vmi.DeletionTimestamp != nil || vmi.IsFinal()):
		if !vmi.IsFinal() {
			vmi.SetPhase(virtkit.Succeeded, now)
			virtkit.SetCondition(&vmi.Status.Conditions, virtkit.Condition{Type: virtkit.VirtualMachineInstanceReady, Status: virtkit.ConditionFalse, Reason: virtkit.GuestNotRunningReason}, now)
			if err := a.st.UpdateStatus(ctx, vmi); err != nil {
				return err
			}
		}
		removeFinalizers(vmi, virtkit.NodeAgentFinalizer)
		return a.st.Update(ctx, vmi)
	case vmi.IsScheduled() && vmi.DeletionTimestamp == nil && vmi.Labels[virtkit.NodeNameLabel] != "":
		_, pauseAsked := vmi.Annotations[virtkit.PauseRequestAnnotation]
		took := addFinalizer(vmi, virtkit.NodeAgentFinalizer)
		if vmi.ShouldStartPaused() && !pauseAsked {
			if vmi.Annotations == nil {
				vmi.Annotations = map[string]string{}
			}
			vmi.Annotations[virtkit.PauseRequestAnnotation] = "true"
			took = true
		}
		if took {
			if err := a.st.Update(ctx, vmi); err != nil {
				return err
			}
		}
		if a.failing(vmi.Name) {
			vmi.SetPhase(virtkit.Failed, now)
			return a.st.UpdateStatus(ctx, vmi)
		}
		vmi.SetPhase(virtkit.Running, now)
		virtkit.SetCondition(&vmi.Status.Conditions, virtkit.Condition{Type: virtkit.VirtualMachineInstanceReady, Status: virtkit.ConditionTrue}, now)
		if vmi.ShouldStartPaused() {
			virtkit.SetCondition(&vmi.Status.Conditions, virtkit.Condition{Type: virtkit.VirtualMachineInstancePaused, Status: virtkit.ConditionTrue, Reason: virtkit.PausedByUserReason}, now)
		}
		return a.st.UpdateStatus(ctx, vmi)
	case vmi.IsRunning() && vmi.DeletionTimestamp == nil:
		if tok, ok := vmi.Annotations[virtkit.SoftRebootRequestAnnotation]; ok && tok != "" {
			delete(vmi.Annotations, virtkit.SoftRebootRequestAnnotation)
			if err := a.st.Update(ctx, vmi); err != nil {
				return err
			}
			a.mu.Lock()
			a.reboots[vmi.Name]++
			a.mu.Unlock()
		}
		if vmi.Annotations[virtkit.PauseRequestAnnotation] == "true" {
			if !vmi.IsPaused() {
				virtkit.SetCondition(&vmi.Status.Conditions, virtkit.Condition{Type: virtkit.VirtualMachineInstancePaused, Status: virtkit.ConditionTrue, Reason: virtkit.PausedByUserReason}, now)
				return a.st.UpdateStatus(ctx, vmi)
			}
		} else if virtkit.HasCondition(vmi.Status.Conditions, virtkit.VirtualMachineInstancePaused, virtkit.ConditionTrue, virtkit.PausedByUserReason) {
			virtkit.RemoveCondition(&vmi.Status.Conditions, virtkit.VirtualMachineInstancePaused)
			return a.st.UpdateStatus(ctx, vmi)
		}
	}
	return nil
}

// guestStops makes the agent report the guest's end: Succeeded for a
// shutdown, Failed for a crash.
func (e *env) guestStops(name string, phase virtkit.VirtualMachineInstancePhase) {
	e.t.Helper()
	vmi := e.getVMI(name)
	require.NotNil(e.t, vmi)
	now := metav1.NewTime(e.clock.Now())
	vmi.SetPhase(phase, now)
	virtkit.SetCondition(&vmi.Status.Conditions, virtkit.Condition{Type: virtkit.VirtualMachineInstanceReady, Status: virtkit.ConditionFalse, Reason: virtkit.GuestNotRunningReason}, now)
	require.NoError(e.t, e.st.UpdateStatus(e.ctx, vmi))
}

// fastRateLimiter retries quickly so tests converge fast.
func fastRateLimiter() workqueue.TypedRateLimiter[reconcile.Request] {
	return workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](time.Millisecond, 100*time.Millisecond)
}
