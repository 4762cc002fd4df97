package main

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/actions"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/store"
)

// demoWorkload is what the demo guest does to its memory while it moves on
// sim: it writes 1 GB/s at random over a 512 MiB working set, mostly
// CPU-driven, so the engine has a dirty rate worth deciding on.
var demoWorkload = sim.Workload{
	DirtyRate:           1_000_000_000,
	WorkingSet:          512 << 20,
	Shape:               sim.ShapeUniform,
	ThrottleSensitivity: 0.9,
	CPUUsage:            0.6,
}

// migrateStep live-migrates the VMI at key to another node and shows the
// engine's progress while it runs. It is skipped (with a line saying why)
// when there is nowhere to go or the VMI cannot move.
func (w *walk) migrateStep(key store.Key) error {
	st := w.c.Store()
	vmi := &virtkit.VirtualMachineInstance{}
	if err := st.Get(w.ctx, key, vmi); err != nil {
		return err
	}
	if len(w.c.Nodes()) < 2 {
		fmt.Fprintf(w.out, "\n     (live migration skipped: the cluster has one node)\n")
		return nil
	}
	if !vmi.IsMigratable() {
		reason := "LiveMigratable is not True"
		if c := virtkit.GetCondition(vmi.Status.Conditions, virtkit.VirtualMachineInstanceIsMigratable); c != nil && c.Reason != "" {
			reason = c.Reason
		}
		fmt.Fprintf(w.out, "\n     (live migration skipped: %s)\n", reason)
		return nil
	}
	source := vmi.Status.NodeName
	domName := node.DomainName(key.Namespace, key.Name)
	w.title("Live-migrate %s away from %s (virtctl migrate)", key, source)
	if h := w.simHost(source); h != nil {
		if err := h.SetWorkload(domName, demoWorkload); err != nil {
			return fmt.Errorf("demo workload: %w", err)
		}
		fmt.Fprintf(w.out, "  the guest dirties %s over a %s working set while it moves\n",
			rate(float64(demoWorkload.DirtyRate)), bytesOf(float64(demoWorkload.WorkingSet)))
		// Only on sim: post-copy on a real host needs userfaultfd rights.
		if err := w.applyDemoPolicy(vmi); err != nil {
			return err
		}
	}
	mig, err := actions.Migrate(w.ctx, st, key, actions.MigrateOptions{})
	if err != nil {
		return err
	}
	fmt.Fprintf(w.out, "  virtualmachineinstancemigration %s/%s created\n", mig.Namespace, mig.Name)

	begin := time.Now()
	final, err := w.followMigration(mig, source)
	if err != nil {
		return err
	}
	ms := final.Status.MigrationState
	if final.Status.Phase != virtkit.MigrationSucceeded {
		reason := "unknown"
		if ms != nil {
			reason = ms.FailureReason
		}
		return fmt.Errorf("migration %s %s: %s", mig.Name, final.Status.Phase, reason)
	}
	moved, err := w.waitVMIObj(key, "the guest agent answering on the new node", func(v *virtkit.VirtualMachineInstance) bool {
		return v.Status.NodeName != source && v.Status.NodeName != "" &&
			virtkit.IsConditionTrue(v.Status.Conditions, virtkit.VirtualMachineInstanceAgentConnected)
	})
	if err != nil {
		return err
	}
	target := moved.Status.NodeName
	fmt.Fprintf(w.out, "  %s now runs on %s (was %s); migration took %s\n", key, target, source, time.Since(begin).Round(10*time.Millisecond))
	w.showOutcome(key, source, moved.Status.MigrationState)
	// The rest of the walk wants a quiet guest.
	if h := w.simHost(target); h != nil {
		_ = h.SetWorkload(domName, sim.Workload{})
	}
	w.showAll()
	return nil
}

// applyDemoPolicy gives the demo guest a MigrationPolicy that allows
// auto-converge and post-copy (KubeVirt's defaults allow neither), so the
// engine has remedies to choose from.
func (w *walk) applyDemoPolicy(vmi *virtkit.VirtualMachineInstance) error {
	sel := map[string]string{}
	for k, v := range vmi.Labels {
		if k == virtkit.VirtualMachineLabel {
			sel[k] = v
		}
	}
	if len(sel) == 0 {
		return nil
	}
	yes := true
	p := &virtkit.MigrationPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: virtkit.MigrationsAPIVersion, Kind: virtkit.KindMigrationPolicy},
		ObjectMeta: metav1.ObjectMeta{Name: "demo-converge"},
		Spec: virtkit.MigrationPolicySpec{
			Selectors:         &virtkit.Selectors{VirtualMachineInstanceSelector: sel},
			AllowAutoConverge: &yes,
			AllowPostCopy:     &yes,
		},
	}
	if err := w.c.Apply(w.ctx, p); err != nil {
		return fmt.Errorf("migration policy: %w", err)
	}
	fmt.Fprintf(w.out, "  migrationpolicy %s created: allowAutoConverge and allowPostCopy for %s\n", p.Name, labelsString(sel))
	return nil
}

func labelsString(l map[string]string) string {
	var parts []string
	for k, v := range l {
		parts = append(parts, k+"="+v)
	}
	return strings.Join(parts, ",")
}

func (w *walk) simHost(name string) *sim.Host {
	if n := w.c.Node(name); n != nil {
		if h, ok := n.Hypervisor.(*sim.Host); ok {
			return h
		}
	}
	return nil
}

// followMigration prints the phase and the engine's progress (from the
// source agent's snapshot, else the VMI's status) until the migration is
// final.
func (w *walk) followMigration(mig *virtkit.VirtualMachineInstanceMigration, source string) (*virtkit.VirtualMachineInstanceMigration, error) {
	st := w.c.Store()
	deadline := time.NewTimer(2 * time.Minute)
	defer deadline.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	last := ""
	lastPrint := time.Time{}
	for {
		cur := &virtkit.VirtualMachineInstanceMigration{}
		if err := st.Get(w.ctx, store.KeyOf(mig), cur); err != nil {
			return nil, err
		}
		phase := string(cur.Status.Phase)
		if phase == "" {
			phase = "(being admitted)"
		}
		line := "phase " + phase
		if p := w.progressLine(mig, source); p != "" {
			line += "  " + p
		}
		if line != last && (time.Since(lastPrint) >= 250*time.Millisecond || cur.IsFinal() || !strings.HasPrefix(last, "phase "+phase)) {
			fmt.Fprintf(w.out, "    %s\n", line)
			last, lastPrint = line, time.Now()
		}
		if cur.IsFinal() {
			return cur, nil
		}
		select {
		case <-w.ctx.Done():
			return nil, w.ctx.Err()
		case <-deadline.C:
			return nil, fmt.Errorf("migration %s still %s after 2 minutes", mig.Name, cur.Status.Phase)
		case <-tick.C:
		}
	}
}

// progressLine renders the engine's view of a running migration.
func (w *walk) progressLine(mig *virtkit.VirtualMachineInstanceMigration, source string) string {
	n := w.c.Node(source)
	if n == nil {
		return ""
	}
	for _, s := range n.Agent.MigrationSnapshots() {
		if s.MigrationUID != mig.UID {
			continue
		}
		e := s.Engine
		var parts []string
		if r, ok := e.Remaining.Get(); ok {
			parts = append(parts, "remaining "+bytesOf(float64(r)))
		}
		if d, ok := e.DirtyRate.Get(); ok {
			parts = append(parts, "dirty "+rate(d))
		} else if d, ok := e.DirtyRateBefore.Get(); ok {
			parts = append(parts, "dirty "+rate(d)+" (before start)")
		}
		if b, ok := e.BandwidthAvg.Get(); ok {
			parts = append(parts, "bandwidth "+rate(b))
		}
		if it, ok := e.Iteration.Get(); ok {
			parts = append(parts, fmt.Sprintf("pass %d", it))
		}
		if e.Strategy != "" {
			parts = append(parts, "strategy "+e.Strategy)
		}
		if e.Throttle > 0 {
			parts = append(parts, fmt.Sprintf("throttle %d%%", e.Throttle))
		}
		return strings.Join(parts, "  ")
	}
	return ""
}

// showOutcome prints the job's final numbers and the engine's decisions.
func (w *walk) showOutcome(key store.Key, source string, ms *virtkit.VirtualMachineInstanceMigrationState) {
	if n := w.c.Node(source); n != nil {
		if s, ok := n.Agent.LastMigrationSnapshot(key.Namespace, key.Name); ok && s.HaveStats {
			var parts []string
			if d, ok := s.Stats.Downtime.Get(); ok {
				parts = append(parts, "downtime "+d.Round(time.Millisecond).String())
			}
			if e, ok := s.Stats.Elapsed.Get(); ok {
				parts = append(parts, "job time "+e.Round(time.Millisecond).String())
			}
			if p, ok := s.Stats.DataProcessed.Get(); ok {
				parts = append(parts, "sent "+bytesOf(float64(p)))
			}
			if s.Stats.Mode != "" {
				parts = append(parts, "mode "+string(s.Stats.Mode))
			}
			if len(parts) > 0 {
				fmt.Fprintf(w.out, "  job: %s\n", strings.Join(parts, ", "))
			}
		}
	}
	if ms == nil || ms.Engine == nil {
		return
	}
	fmt.Fprintf(w.out, "  engine strategy: %s\n", ms.Engine.Strategy)
	decisions := ms.Engine.Decisions
	if len(decisions) > 5 {
		decisions = decisions[len(decisions)-5:]
	}
	for _, d := range decisions {
		rule := ""
		if d.Rule != "" {
			rule = "[" + d.Rule + "] "
		}
		fmt.Fprintf(w.out, "    decision: %-14s %s%s\n", d.Action, rule, d.Reason)
	}
}

func bytesOf(b float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	for b >= 1024 && i < len(units)-1 {
		b /= 1024
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%.0f %s", b, units[i])
	}
	return fmt.Sprintf("%.1f %s", b, units[i])
}

func rate(bps float64) string {
	switch {
	case bps >= 1e9:
		return fmt.Sprintf("%.2f GB/s", bps/1e9)
	case bps >= 1e6:
		return fmt.Sprintf("%.0f MB/s", bps/1e6)
	case bps >= 1e3:
		return fmt.Sprintf("%.0f kB/s", bps/1e3)
	}
	return fmt.Sprintf("%.0f B/s", bps)
}
