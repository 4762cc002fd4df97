package simulation

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/store"
)

// refused marks an admission refusal (a restore into a running VM, of a
// missing snapshot) as the invalid request it is to the user.
func refused(err error) error {
	if errors.Is(err, cluster.ErrInvalidObject) && !errors.Is(err, store.ErrInvalid) {
		return fmt.Errorf("%w: %w", store.ErrInvalid, err)
	}
	return err
}

// poolSnapshots is how many snapshot (and restore) names each VM has.
const poolSnapshots = 2

// snapshotName is the n-th snapshot name of VM vm; restoreName the n-th
// restore name into it.
func snapshotName(vm string, n int) string { return fmt.Sprintf("%s-snap-%d", vm, n) }
func restoreName(vm string, n int) string  { return fmt.Sprintf("%s-restore-%d", vm, n) }

// snapshotOps are the rows of the snapshot and restore operations: take
// a snapshot of a VM, delete one, and restore one into its VM (refused by
// admission while the VM runs or the snapshot is missing, which is part of
// the game; a restore admitted waits while the VM is started again).
func snapshotOps() []opSpec {
	gen := func(r *rand.Rand) Op { return Op{Target: pick(r, "vm", poolVMs), N: r.IntN(poolSnapshots)} }
	group := virtkit.GroupName
	ref := func(name string) virtkit.TypedLocalObjectReference {
		return virtkit.TypedLocalObjectReference{APIGroup: &group, Kind: virtkit.KindVirtualMachine, Name: name}
	}
	return []opSpec{
		{name: "snapshot-vm", weight: 2, gen: gen,
			run: func(ctx context.Context, s system, op Op) error {
				return refused(s.apply(ctx, &virtkit.VirtualMachineSnapshot{
					TypeMeta:   metav1.TypeMeta{APIVersion: virtkit.SnapshotSchemeGroupVersion.String(), Kind: virtkit.KindVirtualMachineSnapshot},
					ObjectMeta: metav1.ObjectMeta{Name: snapshotName(op.Target, op.N), Namespace: Namespace},
					Spec:       virtkit.VirtualMachineSnapshotSpec{Source: ref(op.Target)},
				}))
			}},
		{name: "delete-snapshot", weight: 1, gen: gen,
			run: func(ctx context.Context, s system, op Op) error {
				return deleteKey(ctx, s.st(), store.Key{Namespace: Namespace, Name: snapshotName(op.Target, op.N)}, &virtkit.VirtualMachineSnapshot{})
			}},
		{name: "restore-vm", weight: 1, gen: gen,
			run: func(ctx context.Context, s system, op Op) error {
				return refused(s.apply(ctx, &virtkit.VirtualMachineRestore{
					TypeMeta:   metav1.TypeMeta{APIVersion: virtkit.SnapshotSchemeGroupVersion.String(), Kind: virtkit.KindVirtualMachineRestore},
					ObjectMeta: metav1.ObjectMeta{Name: restoreName(op.Target, op.N), Namespace: Namespace},
					Spec: virtkit.VirtualMachineRestoreSpec{VirtualMachineSnapshotName: snapshotName(op.Target, op.N),
						Target: ref(op.Target)},
				}))
			}},
	}
}
