package simulation

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/actions"
	"github.com/virtkit/virtkit/store"
)

// Op is one step of a simulation: an operation (a user's or a fault), its
// target and argument, and how much virtual time passes after it. An op
// log is a list of them; it replays exactly.
type Op struct {
	Name    string `json:"op"`
	Target  string `json:"target,omitempty"`
	N       int    `json:"n,omitempty"`
	Advance Millis `json:"advanceMs"`
}

// Millis is a duration in milliseconds (an op log is readable JSON).
type Millis int64

// Duration is m as a time.Duration.
func (m Millis) Duration() time.Duration { return time.Duration(m) * time.Millisecond }

func (o Op) String() string {
	var b strings.Builder
	b.WriteString(o.Name)
	if o.Target != "" {
		b.WriteString(" " + o.Target)
	}
	if o.N != 0 {
		fmt.Fprintf(&b, " n=%d", o.N)
	}
	fmt.Fprintf(&b, " +%s", o.Advance.Duration())
	return b.String()
}

// opSpec is one row of the operation table.
type opSpec struct {
	// name is the op's name in logs and in Config.Enable/Disable.
	name string
	// fault marks faults (healed at quiescence) apart from user operations.
	fault bool
	// weight is how often the generator picks it relative to the others.
	weight int
	// gen draws the op's target and argument.
	gen func(r *rand.Rand) Op
	// run performs it. An error the user would get back (not found, a
	// conflicting action) is part of the game, not a violation.
	run func(ctx context.Context, s system, op Op) error
}

// The fixed name pools the generator draws targets from: ops do not
// depend on the cluster's state, so any subsequence of a log is a valid
// log (what shrinking needs).
const (
	poolVMs    = 4
	poolVMIs   = 2
	poolRSs    = 2
	poolNodes  = 3
	maxReplica = 4
)

func pick(r *rand.Rand, prefix string, n int) string { return fmt.Sprintf("%s-%d", prefix, r.IntN(n)) }

func pickNode(r *rand.Rand) string { return fmt.Sprintf("node-%d", 1+r.IntN(poolNodes)) }

// pickGuest names a VMI: a VM's, a standalone one, or the k-th of a
// ReplicaSet's ("rs-0#1").
func pickGuest(r *rand.Rand) string {
	switch r.IntN(3) {
	case 0:
		return pick(r, "vm", poolVMs)
	case 1:
		return pick(r, "vmi", poolVMIs)
	}
	return fmt.Sprintf("%s#%d", pick(r, "rs", poolRSs), r.IntN(maxReplica))
}

// runStrategy is the n-th run strategy apply-vm picks from.
func runStrategy(n int) virtkit.VirtualMachineRunStrategy {
	all := []virtkit.VirtualMachineRunStrategy{
		virtkit.RunStrategyAlways, virtkit.RunStrategyHalted, virtkit.RunStrategyManual, virtkit.RunStrategyRerunOnFailure,
	}
	return all[n%len(all)]
}

// operations is the operation table (with lifecycleOps: deletion
// propagation, cordon and drain, ACPI). A new operation or fault is one
// more row; Config.Enable and Config.Disable switch rows by name. The
// multi-process mode's table (mpOperations) is derived from it: a new row
// that needs the embedded cluster's hooks runs through inProcess and is
// named in mpLeftOut or given a process fault there.
func operations() []opSpec {
	target := func(prefix string, n int) func(r *rand.Rand) Op {
		return func(r *rand.Rand) Op { return Op{Target: pick(r, prefix, n)} }
	}
	guest := func(r *rand.Rand) Op { return Op{Target: pickGuest(r)} }
	node := func(r *rand.Rand) Op { return Op{Target: pickNode(r)} }
	vmKey := func(op Op) store.Key { return store.Key{Namespace: Namespace, Name: op.Target} }
	return append([]opSpec{
		// User operations on VMs.
		{name: "apply-vm", weight: 8,
			gen: func(r *rand.Rand) Op { return Op{Target: pick(r, "vm", poolVMs), N: r.IntN(4 * len(gracePeriods))} },
			run: func(ctx context.Context, s system, op Op) error {
				return s.apply(ctx, newVM(op.Target, runStrategy(op.N), 0, graceOf(op.N)))
			}},
		{name: "update-vm", weight: 3,
			gen: func(r *rand.Rand) Op { return Op{Target: pick(r, "vm", poolVMs), N: 1 + r.IntN(5)} },
			run: func(ctx context.Context, s system, op Op) error {
				vm := &virtkit.VirtualMachine{}
				if err := s.st().Get(ctx, vmKey(op), vm); err != nil {
					return err
				}
				rs, err := vm.RunStrategy()
				if err != nil {
					return err
				}
				return s.apply(ctx, newVM(op.Target, rs, op.N, vm.Spec.Template.Spec.TerminationGracePeriodSeconds))
			}},
		{name: "delete-vm", weight: 3,
			gen: func(r *rand.Rand) Op { return Op{Target: pick(r, "vm", poolVMs), N: r.IntN(len(deletePolicies))} },
			run: func(ctx context.Context, s system, op Op) error {
				return deleteOwner(ctx, s, op, &virtkit.VirtualMachine{})
			}},
		{name: "start", weight: 4, gen: target("vm", poolVMs),
			run: func(ctx context.Context, s system, op Op) error {
				return actions.Start(ctx, s.st(), vmKey(op), actions.StartOptions{})
			}},
		{name: "stop", weight: 4, gen: target("vm", poolVMs),
			run: func(ctx context.Context, s system, op Op) error {
				rec := stopRecordOf(ctx, s, op.Target)
				if err := actions.Stop(ctx, s.st(), vmKey(op), actions.StopOptions{}); err != nil {
					return err
				}
				s.lifecycle().addStop(rec)
				return nil
			}},
		{name: "restart", weight: 3, gen: target("vm", poolVMs),
			run: func(ctx context.Context, s system, op Op) error {
				return actions.Restart(ctx, s.st(), vmKey(op), actions.RestartOptions{})
			}},
		// User operations on VMIs (a VM's, a standalone one, a ReplicaSet's).
		{name: "apply-vmi", weight: 3, gen: target("vmi", poolVMIs),
			run: func(ctx context.Context, s system, op Op) error {
				return s.apply(ctx, newVMI(op.Target))
			}},
		{name: "delete-vmi", weight: 3, gen: guest,
			run: func(ctx context.Context, s system, op Op) error {
				key, err := guestKey(ctx, s.st(), op.Target)
				if err != nil {
					return err
				}
				return deleteKey(ctx, s.st(), key, &virtkit.VirtualMachineInstance{})
			}},
		{name: "pause", weight: 3, gen: guest, run: onGuest(actions.Pause)},
		{name: "unpause", weight: 3, gen: guest, run: onGuest(actions.Unpause)},
		{name: "soft-reboot", weight: 2, gen: guest, run: func(ctx context.Context, s system, op Op) error {
			// The request's token is the system's time (virtual in the
			// embedded cluster), not the wall clock's: it is written into
			// the VMI, so it must repeat with the seed.
			token := s.now().UTC().Format(time.RFC3339Nano)
			return onGuest(func(ctx context.Context, st store.Store, key store.Key) error {
				return actions.SoftReboot(ctx, st, key, actions.SoftRebootOptions{Token: token})
			})(ctx, s, op)
		}},
		{name: "migrate", weight: 6, gen: guest, run: onGuest(func(ctx context.Context, st store.Store, key store.Key) error {
			_, err := actions.Migrate(ctx, st, key, actions.MigrateOptions{})
			return err
		})},
		{name: "cancel-migration", weight: 3, gen: guest,
			run: func(ctx context.Context, s system, op Op) error {
				key, err := guestKey(ctx, s.st(), op.Target)
				if err != nil {
					return err
				}
				mig, err := activeMigration(ctx, s.st(), key)
				if err != nil || mig == nil {
					return err
				}
				return s.st().Delete(ctx, mig, store.DeleteOptions{})
			}},
		// ReplicaSets and MigrationPolicies.
		{name: "apply-rs", weight: 3,
			gen: func(r *rand.Rand) Op { return Op{Target: pick(r, "rs", poolRSs), N: r.IntN(maxReplica + 1)} },
			run: func(ctx context.Context, s system, op Op) error {
				return s.apply(ctx, newReplicaSet(op.Target, int32(op.N)))
			}},
		{name: "scale", weight: 4,
			gen: func(r *rand.Rand) Op { return Op{Target: pick(r, "rs", poolRSs), N: r.IntN(maxReplica + 1)} },
			run: func(ctx context.Context, s system, op Op) error {
				rs := &virtkit.VirtualMachineInstanceReplicaSet{}
				if err := s.st().Get(ctx, store.Key{Namespace: Namespace, Name: op.Target}, rs); err != nil {
					return err
				}
				n := int32(op.N)
				rs.Spec.Replicas = &n
				return s.st().Update(ctx, rs)
			}},
		{name: "delete-rs", weight: 1,
			gen: func(r *rand.Rand) Op { return Op{Target: pick(r, "rs", poolRSs), N: r.IntN(len(deletePolicies))} },
			run: func(ctx context.Context, s system, op Op) error {
				return deleteOwner(ctx, s, op, &virtkit.VirtualMachineInstanceReplicaSet{})
			}},
		{name: "apply-migration-policy", weight: 1,
			gen: func(r *rand.Rand) Op { return Op{Target: "mp-0", N: r.IntN(4)} },
			run: func(ctx context.Context, s system, op Op) error {
				bw := []string{"16Mi", "64Mi", "1Gi", "8Mi"}[op.N%4]
				return s.apply(ctx, newMigrationPolicy(op.Target, op.N%2 == 1, bw))
			}},
		{name: "delete-migration-policy", weight: 1, gen: func(*rand.Rand) Op { return Op{Target: "mp-0"} },
			run: func(ctx context.Context, s system, op Op) error {
				return deleteKey(ctx, s.st(), store.Key{Name: op.Target}, &virtkit.MigrationPolicy{})
			}},

		// Faults.
		{name: "crash-agent", fault: true, weight: 2, gen: node,
			run: inProcess(func(ctx context.Context, h *Harness, op Op) error {
				if !h.Cluster.AgentRunning(op.Target) {
					return nil
				}
				return h.crashAgent(ctx, op.Target)
			})},
		{name: "restart-agent", fault: true, weight: 3, gen: node,
			run: inProcess(func(ctx context.Context, h *Harness, op Op) error {
				if h.Cluster.AgentRunning(op.Target) {
					return nil
				}
				return h.restartAgent(ctx, op.Target)
			})},
		{name: "partition", fault: true, weight: 2, gen: node, run: inProcess(setLink(linkPartitioned))},
		{name: "freeze", fault: true, weight: 1, gen: node, run: inProcess(setLink(linkFrozen))},
		{name: "heal", fault: true, weight: 3, gen: node, run: inProcess(setLink(linkUp))},
		{name: "store-conflicts", fault: true, weight: 1,
			gen: func(r *rand.Rand) Op { return Op{N: []int{0, 10, 30}[r.IntN(3)]} },
			run: inProcess(func(_ context.Context, h *Harness, op Op) error { h.faults.setConflicts(op.N); return nil })},
		{name: "store-latency", fault: true, weight: 1,
			gen: func(r *rand.Rand) Op { return Op{N: []int{0, 50, 500, 3000}[r.IntN(4)]} },
			run: inProcess(func(_ context.Context, h *Harness, op Op) error {
				h.faults.setLatency(time.Duration(op.N) * time.Millisecond)
				return nil
			})},
		{name: "crash-guest", fault: true, weight: 2, gen: guest, run: inProcess(onDomain(func(ctx context.Context, h *Harness, node, domain string) error {
			return h.Host(node).CrashGuest(ctx, domain)
		}))},
		{name: "guest-agent-gone", fault: true, weight: 2, gen: guest, run: inProcess(onDomain(func(ctx context.Context, h *Harness, node, domain string) error {
			return h.Host(node).DisconnectGuestAgent(ctx, domain)
		}))},
		// A congested migration network: 4 MiB/s makes a 128Mi guest's
		// migration outlast the 5 s completion timeout, so it runs on by
		// the completion extension; 0 restores the unlimited link.
		{name: "slow-migration-network", fault: true, weight: 3,
			gen: func(r *rand.Rand) Op { return Op{N: []int{0, 4, 4, 16}[r.IntN(4)]} },
			run: inProcess(func(_ context.Context, h *Harness, op Op) error {
				return h.setMigrationBandwidth(uint64(op.N) << 20)
			})},
		{name: "cut-migration", fault: true, weight: 3, gen: guest, run: inProcess(onDomain(func(ctx context.Context, h *Harness, node, domain string) error {
			_, err := h.Host(node).CutMigration(ctx, domain)
			return err
		}))},
	}, append(lifecycleOps(), append(hotplugOps(), append(resourceOps(), append(snapshotOps(), volumeMigrationOps()...)...)...)...)...)
}

// onGuest runs a virtctl-like VMI verb on the op's guest.
func onGuest(verb func(ctx context.Context, st store.Store, key store.Key) error) func(context.Context, system, Op) error {
	return func(ctx context.Context, s system, op Op) error {
		key, err := guestKey(ctx, s.st(), op.Target)
		if err != nil {
			return err
		}
		return verb(ctx, s.st(), key)
	}
}

// onDomain runs a fault on every host where the op's guest has an active
// domain.
func onDomain(fault func(ctx context.Context, h *Harness, node, domain string) error) func(context.Context, *Harness, Op) error {
	return func(ctx context.Context, h *Harness, op Op) error {
		key, err := guestKey(ctx, h.Store, op.Target)
		if err != nil {
			return err
		}
		domain := key.Namespace + "_" + key.Name
		for _, n := range h.Nodes() {
			infos, err := h.Host(n).List(ctx)
			if err != nil {
				return err
			}
			for _, d := range infos {
				if d.Name == domain && d.State.IsActive() {
					if err := fault(ctx, h, n, domain); err != nil {
						return err
					}
				}
			}
		}
		return nil
	}
}

func setLink(m linkMode) func(context.Context, *Harness, Op) error {
	return func(_ context.Context, h *Harness, op Op) error {
		h.links[op.Target].set(m)
		return nil
	}
}

// guestKey resolves a guest name of the pools: "rs-0#1" is the second of
// rs-0's VMIs by name (not found when it has fewer).
func guestKey(ctx context.Context, st store.Store, target string) (store.Key, error) {
	rs, idx, ok := strings.Cut(target, "#")
	if !ok {
		return store.Key{Namespace: Namespace, Name: target}, nil
	}
	var list virtkit.VirtualMachineInstanceList
	if err := st.List(ctx, &list, store.ListOptions{Namespace: Namespace}); err != nil {
		return store.Key{}, err
	}
	var names []string
	for _, vmi := range list.Items {
		if ref := metav1.GetControllerOf(&vmi); ref != nil && ref.Name == rs && ref.Kind == virtkit.KindVirtualMachineInstanceReplicaSet {
			names = append(names, vmi.Name)
		}
	}
	sort.Strings(names)
	var i int
	if _, err := fmt.Sscan(idx, &i); err != nil || i >= len(names) {
		return store.Key{}, fmt.Errorf("%s: %w", target, store.ErrNotFound)
	}
	return store.Key{Namespace: Namespace, Name: names[i]}, nil
}

func deleteKey(ctx context.Context, st store.Store, key store.Key, obj virtkit.Object) error {
	if err := st.Get(ctx, key, obj); err != nil {
		return err
	}
	return st.Delete(ctx, obj, store.DeleteOptions{})
}

// activeMigration is the newest migration of the VMI at key that has not
// ended, or nil.
func activeMigration(ctx context.Context, st store.Store, key store.Key) (*virtkit.VirtualMachineInstanceMigration, error) {
	var list virtkit.VirtualMachineInstanceMigrationList
	if err := st.List(ctx, &list, store.ListOptions{Namespace: key.Namespace}); err != nil {
		return nil, err
	}
	var found *virtkit.VirtualMachineInstanceMigration
	for i := range list.Items {
		m := &list.Items[i]
		if m.Spec.VMIName != key.Name || m.IsFinal() || m.DeletionTimestamp != nil {
			continue
		}
		if found == nil || found.CreationTimestamp.Before(&m.CreationTimestamp) {
			found = m
		}
	}
	return found, nil
}

// expected reports whether an op's error is one a user can get back for a
// request that does not fit the cluster's state.
func expected(err error) bool {
	return err == nil || errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrConflict) ||
		errors.Is(err, store.ErrAlreadyExists) || errors.Is(err, store.ErrInvalid) ||
		errors.Is(err, actions.ErrConflictingAction) || errors.Is(err, actions.ErrInvalidAction) ||
		errors.Is(err, actions.ErrActionForbidden)
}
