package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/actions"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/store"
)

// walk drives the demo: each step acts, then waits for the state a user
// would expect, printing tables as things change.
type walk struct {
	ctx      context.Context
	c        *cluster.Cluster
	out      io.Writer // tables and step lines
	progress io.Writer // the waiting indicator
	start    time.Time
	step     int
	hostKind string // "simulated" or "libvirt"
}

func (w *walk) run(objs []virtkit.Object) error {
	w.title("Start an embedded control plane with %d %s hosts", len(w.c.Nodes()), w.hostKind)
	if err := w.waitFor("every node reports Ready", w.c.NodesReady); err != nil {
		return err
	}
	w.showNodes()

	w.title("Apply %d object(s)", len(objs))
	for _, obj := range objs {
		gvk, _ := virtkit.GVKOf(obj)
		if err := w.c.Apply(w.ctx, obj); err != nil {
			return err
		}
		fmt.Fprintf(w.out, "  %s %s created\n", strings.ToLower(gvk.Kind), store.KeyOf(obj))
	}
	for _, obj := range objs {
		var err error
		switch o := obj.(type) {
		case *virtkit.VirtualMachine:
			err = w.vmLife(store.KeyOf(o))
		case *virtkit.VirtualMachineInstance:
			err = w.vmiLife(store.KeyOf(o))
		case *virtkit.VirtualMachineInstanceReplicaSet:
			err = w.replicaSetLife(store.KeyOf(o))
		}
		if err != nil {
			return err
		}
	}
	w.title("Final state")
	w.showAll()
	fmt.Fprintf(w.out, "\ndemo finished: every step reached its expected state in %s\n", time.Since(w.start).Round(100*time.Millisecond))
	return nil
}

// vmLife walks one VirtualMachine: start, guest info, pause/unpause,
// migrate, stop, start again.
func (w *walk) vmLife(key store.Key) error {
	st := w.c.Store()
	vm := &virtkit.VirtualMachine{}
	if err := st.Get(w.ctx, key, vm); err != nil {
		return err
	}
	// Its dataVolumeTemplates' DataVolumes are created with the VM.
	if err := w.dataVolumesStep(vm); err != nil {
		return err
	}
	rs, _ := vm.RunStrategy()
	if rs == virtkit.RunStrategyHalted {
		w.title("VirtualMachine %s is defined but halted", key)
		if err := w.waitVM(key, "printableStatus Stopped", vmStatusIs(virtkit.VirtualMachineStatusStopped)); err != nil {
			return err
		}
		w.showAll()
		w.title("Start %s (virtctl start)", key)
		if err := actions.Start(w.ctx, st, key, actions.StartOptions{}); err != nil {
			return err
		}
	} else {
		w.title("VirtualMachine %s starts on its own (runStrategy %s)", key, rs)
	}
	if err := w.waitVM(key, "printableStatus Running and Ready", func(vm *virtkit.VirtualMachine) bool {
		return vm.Status.PrintableStatus == virtkit.VirtualMachineStatusRunning && vm.Status.Ready
	}); err != nil {
		return err
	}
	w.showAll()

	w.title("Guest information from the guest agent")
	vmi, err := w.waitVMIObj(key, "AgentConnected and guestOSInfo", func(vmi *virtkit.VirtualMachineInstance) bool {
		return virtkit.IsConditionTrue(vmi.Status.Conditions, virtkit.VirtualMachineInstanceAgentConnected) &&
			vmi.Status.GuestOSInfo.Name != ""
	})
	if err != nil {
		return err
	}
	w.showGuest(vmi)

	w.title("Pause %s (virtctl pause vm)", key)
	if err := actions.Pause(w.ctx, st, key); err != nil {
		return err
	}
	if err := w.waitVM(key, "printableStatus Paused", vmStatusIs(virtkit.VirtualMachineStatusPaused)); err != nil {
		return err
	}
	w.showVMIConditions(key)
	w.title("Unpause %s (virtctl unpause vm)", key)
	if err := actions.Unpause(w.ctx, st, key); err != nil {
		return err
	}
	if err := w.waitVM(key, "printableStatus Running", vmStatusIs(virtkit.VirtualMachineStatusRunning)); err != nil {
		return err
	}
	w.showAll()

	if err := w.migrateStep(key); err != nil {
		return err
	}

	w.title("Stop %s (virtctl stop)", key)
	if err := actions.Stop(w.ctx, st, key, actions.StopOptions{}); err != nil {
		return err
	}
	if err := w.waitVM(key, "printableStatus Stopped and the VMI gone", func(vm *virtkit.VirtualMachine) bool {
		return vm.Status.PrintableStatus == virtkit.VirtualMachineStatusStopped && !vm.Status.Created
	}); err != nil {
		return err
	}
	w.showAll()

	w.title("Start %s again", key)
	if err := actions.Start(w.ctx, st, key, actions.StartOptions{}); err != nil {
		return err
	}
	if err := w.waitVM(key, "printableStatus Running and Ready", func(vm *virtkit.VirtualMachine) bool {
		return vm.Status.PrintableStatus == virtkit.VirtualMachineStatusRunning && vm.Status.Ready
	}); err != nil {
		return err
	}
	if _, err := w.waitVMIObj(key, "the guest agent answers again", func(vmi *virtkit.VirtualMachineInstance) bool {
		return virtkit.IsConditionTrue(vmi.Status.Conditions, virtkit.VirtualMachineInstanceAgentConnected) &&
			vmi.Status.GuestOSInfo.Name != ""
	}); err != nil {
		return err
	}
	w.showAll()
	return nil
}

// vmiLife waits for a bare VMI to run.
func (w *walk) vmiLife(key store.Key) error {
	w.title("VirtualMachineInstance %s", key)
	if _, err := w.waitVMIObj(key, "phase Running", func(vmi *virtkit.VirtualMachineInstance) bool {
		return vmi.Status.Phase == virtkit.Running
	}); err != nil {
		return err
	}
	w.showAll()
	return nil
}

// replicaSetLife waits for a ReplicaSet's replicas, scales it up and down.
func (w *walk) replicaSetLife(key store.Key) error {
	rs := &virtkit.VirtualMachineInstanceReplicaSet{}
	if err := w.c.Store().Get(w.ctx, key, rs); err != nil {
		return err
	}
	want := int32(1)
	if rs.Spec.Replicas != nil {
		want = *rs.Spec.Replicas
	}
	w.title("ReplicaSet %s brings up %d VMIs", key, want)
	if err := w.waitReplicas(key, want); err != nil {
		return err
	}
	w.showAll()
	for _, n := range []int32{want + 2, 1} {
		w.title("Scale ReplicaSet %s to %d", key, n)
		if err := w.scale(key, n); err != nil {
			return err
		}
		if err := w.waitReplicas(key, n); err != nil {
			return err
		}
		w.showAll()
	}
	return nil
}

func (w *walk) scale(key store.Key, n int32) error {
	st := w.c.Store()
	for {
		rs := &virtkit.VirtualMachineInstanceReplicaSet{}
		if err := st.Get(w.ctx, key, rs); err != nil {
			return err
		}
		rs.Spec.Replicas = &n
		err := st.Update(w.ctx, rs)
		if err == nil || !isConflict(err) {
			return err
		}
	}
}

func (w *walk) waitReplicas(key store.Key, n int32) error {
	return w.waitFor(fmt.Sprintf("%d ready replicas and %d VMIs", n, n), func(ctx context.Context) (bool, error) {
		rs := &virtkit.VirtualMachineInstanceReplicaSet{}
		if err := w.c.Store().Get(ctx, key, rs); err != nil {
			return false, err
		}
		if rs.Status.ReadyReplicas != n || rs.Status.Replicas != n {
			return false, nil
		}
		var vmis virtkit.VirtualMachineInstanceList
		if err := w.c.Store().List(ctx, &vmis, store.ListOptions{Namespace: key.Namespace}); err != nil {
			return false, err
		}
		count := int32(0)
		for _, vmi := range vmis.Items {
			if owner := ownerName(&vmi, virtkit.KindVirtualMachineInstanceReplicaSet); owner == key.Name && !vmi.IsFinal() {
				count++
			}
		}
		return count == n, nil
	})
}

func ownerName(obj virtkit.Object, kind string) string {
	for _, ref := range obj.GetOwnerReferences() {
		if ref.Controller != nil && *ref.Controller && ref.Kind == kind {
			return ref.Name
		}
	}
	return ""
}

func vmStatusIs(s virtkit.VirtualMachinePrintableStatus) func(*virtkit.VirtualMachine) bool {
	return func(vm *virtkit.VirtualMachine) bool { return vm.Status.PrintableStatus == s }
}

func (w *walk) waitVM(key store.Key, what string, cond func(*virtkit.VirtualMachine) bool) error {
	return w.waitFor(what, func(ctx context.Context) (bool, error) {
		vm := &virtkit.VirtualMachine{}
		if err := w.c.Store().Get(ctx, key, vm); err != nil {
			return false, err
		}
		return cond(vm), nil
	})
}

func (w *walk) waitVMIObj(key store.Key, what string, cond func(*virtkit.VirtualMachineInstance) bool) (*virtkit.VirtualMachineInstance, error) {
	var got *virtkit.VirtualMachineInstance
	err := w.waitFor(what, func(ctx context.Context) (bool, error) {
		vmi := &virtkit.VirtualMachineInstance{}
		if err := w.c.Store().Get(ctx, key, vmi); err != nil {
			if isNotFound(err) {
				return false, nil
			}
			return false, err
		}
		if cond(vmi) {
			got = vmi
			return true, nil
		}
		return false, nil
	})
	return got, err
}

// waitFor polls check until it holds, showing a progress line meanwhile.
// Polling (every 50 ms) keeps the demo's waits independent of which objects
// change; the store is in memory, so it costs nothing.
func (w *walk) waitFor(what string, check func(ctx context.Context) (bool, error)) error {
	begin := time.Now()
	stop := w.spinner(what, begin)
	defer stop()
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		ok, err := check(w.ctx)
		if err != nil {
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
		if ok {
			stop()
			fmt.Fprintf(w.out, "  ok  %s (%s)\n", what, time.Since(begin).Round(10*time.Millisecond))
			return nil
		}
		select {
		case <-w.ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, w.ctx.Err())
		case <-t.C:
		}
	}
}

// spinner shows "waiting for X (1.2s)" on a terminal, rewritten in place.
func (w *walk) spinner(what string, begin time.Time) (stop func()) {
	f, ok := w.progress.(*os.File)
	if !ok {
		return func() {}
	}
	if fi, err := f.Stat(); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return func() {}
	}
	done := make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		frames := `|/-\`
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for i := 0; ; i++ {
			select {
			case <-done:
				fmt.Fprint(f, "\r\033[K")
				return
			case <-t.C:
				fmt.Fprintf(f, "\r\033[K  %c  waiting for %s (%.1fs)", frames[i%len(frames)], what, time.Since(begin).Seconds())
			}
		}
	}()
	return func() { once.Do(func() { close(done); wg.Wait() }) }
}

func (w *walk) title(format string, args ...any) {
	w.step++
	fmt.Fprintf(w.out, "\n[%2d] %s\n", w.step, fmt.Sprintf(format, args...))
}

func (w *walk) showNodes() {
	var nodes virtkit.NodeList
	if err := w.c.Store().List(w.ctx, &nodes, store.ListOptions{}); err == nil {
		var b strings.Builder
		_ = printList(&b, virtkit.KindNode, &nodes, time.Now())
		fmt.Fprint(w.out, "\n"+indent(b.String(), "    "))
	}
}

func (w *walk) showAll() {
	st := w.c.Store()
	now := time.Now()
	var b strings.Builder
	var vms virtkit.VirtualMachineList
	if err := st.List(w.ctx, &vms, store.ListOptions{}); err == nil && len(vms.Items) > 0 {
		_ = printList(&b, virtkit.KindVirtualMachine, &vms, now)
		b.WriteString("\n")
	}
	var vmis virtkit.VirtualMachineInstanceList
	if err := st.List(w.ctx, &vmis, store.ListOptions{}); err == nil {
		_ = printList(&b, virtkit.KindVirtualMachineInstance, &vmis, now)
	}
	var rss virtkit.VirtualMachineInstanceReplicaSetList
	if err := st.List(w.ctx, &rss, store.ListOptions{}); err == nil && len(rss.Items) > 0 {
		b.WriteString("\n")
		_ = printList(&b, virtkit.KindVirtualMachineInstanceReplicaSet, &rss, now)
	}
	fmt.Fprint(w.out, "\n"+indent(b.String(), "    "))
}

func (w *walk) showGuest(vmi *virtkit.VirtualMachineInstance) {
	g := vmi.Status.GuestOSInfo
	fmt.Fprintf(w.out, "    guest OS:   %s (%s), kernel %s\n", g.PrettyName, g.ID, g.KernelRelease)
	for _, i := range vmi.Status.Interfaces {
		fmt.Fprintf(w.out, "    interface:  %-8s mac %s  ips %s  (infoSource: %s)\n", i.Name, i.MAC, strings.Join(i.IPs, ","), i.InfoSource)
	}
	for _, c := range vmi.Status.Conditions {
		fmt.Fprintf(w.out, "    condition:  %s=%s %s\n", c.Type, c.Status, c.Reason)
	}
}

func (w *walk) showVMIConditions(key store.Key) {
	vmi := &virtkit.VirtualMachineInstance{}
	if err := w.c.Store().Get(w.ctx, key, vmi); err != nil {
		return
	}
	for _, c := range vmi.Status.Conditions {
		fmt.Fprintf(w.out, "    condition:  %s=%s %s\n", c.Type, c.Status, c.Reason)
	}
}

// cleanUp deletes every VM, ReplicaSet and VMI and waits until no VMI is
// left, so no guest keeps running after the demo.
func (w *walk) cleanUp(ctx context.Context) error {
	st := w.c.Store()
	w.title("Clean up: delete the demo's objects")
	lists := []virtkit.ObjectList{&virtkit.VirtualMachineList{}, &virtkit.VirtualMachineInstanceReplicaSetList{},
		&virtkit.VirtualMachineInstanceMigrationList{}, &virtkit.VirtualMachineInstanceList{}}
	for _, l := range lists {
		if err := st.List(ctx, l, store.ListOptions{}); err != nil {
			return err
		}
		objs, err := meta.ExtractList(l)
		if err != nil {
			return err
		}
		for _, o := range objs {
			obj := o.(virtkit.Object)
			if err := st.Delete(ctx, obj, store.DeleteOptions{}); err != nil && !isNotFound(err) {
				return err
			}
		}
	}
	saved := w.ctx
	w.ctx = ctx
	defer func() { w.ctx = saved }()
	return w.waitFor("every VMI gone and its guest stopped", func(ctx context.Context) (bool, error) {
		var vmis virtkit.VirtualMachineInstanceList
		if err := st.List(ctx, &vmis, store.ListOptions{}); err != nil {
			return false, err
		}
		return len(vmis.Items) == 0, nil
	})
}
