package controller

import (
	"sync"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/reconcile"
	"github.com/virtkit/virtkit/store"
)

// migrationIndex maps each VMI to the migrations of it the migration
// watch has shown, so a VMI event finds its migrations without listing
// every migration of the namespace (which the VMI watch did per event).
// The watch feeds it every migration it delivers; a reconcile that finds a
// migration gone drops it. Level-triggered as before: a migration the
// index does not know yet is enqueued by its own event, and its reconcile
// reads the VMI.
type migrationIndex struct {
	mu    sync.Mutex
	byVMI map[store.Key]map[string]bool // VMI -> migration name -> wants VMI events
	vmiOf map[store.Key]store.Key       // migration -> its VMI
}

func newMigrationIndex() *migrationIndex {
	return &migrationIndex{byVMI: map[store.Key]map[string]bool{}, vmiOf: map[store.Key]store.Key{}}
}

// observe records a migration as the watch delivered it.
func (x *migrationIndex) observe(mig *virtkit.VirtualMachineInstanceMigration) {
	if mig.Spec.VMIName == "" {
		return
	}
	key := store.Key{Namespace: mig.Namespace, Name: mig.Name}
	vmi := store.Key{Namespace: mig.Namespace, Name: mig.Spec.VMIName}
	active := !mig.IsFinal() || mig.DeletionTimestamp != nil
	x.mu.Lock()
	defer x.mu.Unlock()
	if old, ok := x.vmiOf[key]; ok && old != vmi {
		x.dropLocked(key)
	}
	x.vmiOf[key] = vmi
	set := x.byVMI[vmi]
	if set == nil {
		set = map[string]bool{}
		x.byVMI[vmi] = set
	}
	set[mig.Name] = active
}

// forget drops a migration that no longer exists.
func (x *migrationIndex) forget(key store.Key) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.dropLocked(key)
}

func (x *migrationIndex) dropLocked(key store.Key) {
	vmi, ok := x.vmiOf[key]
	if !ok {
		return
	}
	delete(x.vmiOf, key)
	if set := x.byVMI[vmi]; set != nil {
		delete(set, key.Name)
		if len(set) == 0 {
			delete(x.byVMI, vmi)
		}
	}
}

// requests are the migrations of a VMI that still follow it: not final,
// or final but being deleted.
func (x *migrationIndex) requests(namespace, vmiName string) []reconcile.Request {
	x.mu.Lock()
	defer x.mu.Unlock()
	set := x.byVMI[store.Key{Namespace: namespace, Name: vmiName}]
	var out []reconcile.Request
	for name, active := range set {
		if active {
			out = append(out, reconcile.Request{Namespace: namespace, Name: name})
		}
	}
	return out
}
