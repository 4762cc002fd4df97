package cluster

import (
	"fmt"
	"strings"

	"github.com/virtkit/virtkit"
)

// Predicate is a condition a wait checks on each state of an object;
// found is false (and obj a zero object) while the object does not exist.
// A plain func(obj T, found bool) bool converts to it implicitly.
type Predicate[T virtkit.Object] func(obj T, found bool) bool

// All holds when every p holds (and for no p at all, once the object
// exists).
func All[T virtkit.Object](ps ...Predicate[T]) Predicate[T] {
	return func(obj T, found bool) bool {
		if len(ps) == 0 {
			return found
		}
		for _, p := range ps {
			if !p(obj, found) {
				return false
			}
		}
		return true
	}
}

// Any holds when some p holds.
func Any[T virtkit.Object](ps ...Predicate[T]) Predicate[T] {
	return func(obj T, found bool) bool {
		for _, p := range ps {
			if p(obj, found) {
				return true
			}
		}
		return false
	}
}

// Not holds when p does not (a missing object included).
func Not[T virtkit.Object](p Predicate[T]) Predicate[T] {
	return func(obj T, found bool) bool { return !p(obj, found) }
}

// Exists holds once the object exists.
func Exists[T virtkit.Object]() Predicate[T] {
	return func(_ T, found bool) bool { return found }
}

// HasCondition holds when the object exists and has a condition of type t
// with status s. It works for every kind with status.conditions (VMIs,
// VMs, migrations, replica sets, nodes); the kind is named at the call:
//
//	cluster.HasCondition[*virtkit.VirtualMachineInstance](virtkit.VirtualMachineInstanceReady, virtkit.ConditionTrue)
func HasCondition[T virtkit.Object](t virtkit.ConditionType, s virtkit.ConditionStatus) Predicate[T] {
	return func(obj T, found bool) bool {
		if !found {
			return false
		}
		conds, ok := conditionsOf(obj)
		return ok && virtkit.HasCondition(conds, t, s, "")
	}
}

// VMIPhase holds for a VMI in phase p.
func VMIPhase(p virtkit.VirtualMachineInstancePhase) Predicate[*virtkit.VirtualMachineInstance] {
	return func(vmi *virtkit.VirtualMachineInstance, found bool) bool { return found && vmi.Status.Phase == p }
}

// VMIReady holds for a VMI whose Ready condition is True.
func VMIReady() Predicate[*virtkit.VirtualMachineInstance] {
	return HasCondition[*virtkit.VirtualMachineInstance](virtkit.VirtualMachineInstanceReady, virtkit.ConditionTrue)
}

// VMIOnNode holds for a VMI whose status.nodeName is node.
func VMIOnNode(node string) Predicate[*virtkit.VirtualMachineInstance] {
	return func(vmi *virtkit.VirtualMachineInstance, found bool) bool {
		return found && vmi.Status.NodeName == node
	}
}

// VMPrintableStatus holds for a VM whose printableStatus is s.
func VMPrintableStatus(s virtkit.VirtualMachinePrintableStatus) Predicate[*virtkit.VirtualMachine] {
	return func(vm *virtkit.VirtualMachine, found bool) bool { return found && vm.Status.PrintableStatus == s }
}

// MigrationPhase holds for a migration in phase p.
func MigrationPhase(p virtkit.VirtualMachineInstanceMigrationPhase) Predicate[*virtkit.VirtualMachineInstanceMigration] {
	return func(m *virtkit.VirtualMachineInstanceMigration, found bool) bool { return found && m.Status.Phase == p }
}

// MigrationSucceeded holds for a migration in phase Succeeded.
func MigrationSucceeded() Predicate[*virtkit.VirtualMachineInstanceMigration] {
	return MigrationPhase(virtkit.MigrationSucceeded)
}

// MigrationFinished holds for a migration in a final phase (Succeeded or
// Failed).
func MigrationFinished() Predicate[*virtkit.VirtualMachineInstanceMigration] {
	return Any(MigrationPhase(virtkit.MigrationSucceeded), MigrationPhase(virtkit.MigrationFailed))
}

// ReplicaSetReady holds for a replica set whose status reports n replicas,
// all ready.
func ReplicaSetReady(n int32) Predicate[*virtkit.VirtualMachineInstanceReplicaSet] {
	return func(rs *virtkit.VirtualMachineInstanceReplicaSet, found bool) bool {
		return found && rs.Status.Replicas == n && rs.Status.ReadyReplicas == n
	}
}

// conditionsOf returns status.conditions of the kinds that have them.
func conditionsOf(obj any) ([]virtkit.Condition, bool) {
	switch o := obj.(type) {
	case *virtkit.VirtualMachineInstance:
		return o.Status.Conditions, true
	case *virtkit.VirtualMachine:
		return o.Status.Conditions, true
	case *virtkit.VirtualMachineInstanceMigration:
		return o.Status.Conditions, true
	case *virtkit.VirtualMachineInstanceReplicaSet:
		return o.Status.Conditions, true
	case *virtkit.Node:
		return o.Status.Conditions, true
	}
	return nil, false
}

// describe is the part of an object's state a timed-out wait reports.
func describe(obj any) string {
	var parts []string
	switch o := obj.(type) {
	case *virtkit.VirtualMachineInstance:
		parts = append(parts, "phase "+orNone(string(o.Status.Phase)))
		if o.Status.NodeName != "" {
			parts = append(parts, "node "+o.Status.NodeName)
		}
	case *virtkit.VirtualMachine:
		parts = append(parts, "printableStatus "+orNone(string(o.Status.PrintableStatus)))
	case *virtkit.VirtualMachineInstanceMigration:
		parts = append(parts, "phase "+orNone(string(o.Status.Phase)))
	case *virtkit.VirtualMachineInstanceReplicaSet:
		parts = append(parts, fmt.Sprintf("replicas %d, ready %d", o.Status.Replicas, o.Status.ReadyReplicas))
	case *virtkit.Node:
	case virtkit.Object:
		parts = append(parts, "resourceVersion "+orNone(o.GetResourceVersion()))
	}
	if conds, ok := conditionsOf(obj); ok {
		cs := make([]string, 0, len(conds))
		for _, c := range conds {
			s := fmt.Sprintf("%s=%s", c.Type, c.Status)
			if c.Reason != "" {
				s += " (" + c.Reason + ")"
			}
			cs = append(cs, s)
		}
		parts = append(parts, "conditions ["+strings.Join(cs, ", ")+"]")
	}
	return strings.Join(parts, ", ")
}

func orNone(s string) string {
	if s == "" {
		return `""`
	}
	return s
}
