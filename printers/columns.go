package printers

import (
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
)

// Column is one printer column: its definition in a Table and how to
// compute its cell for an object at a time.
type Column struct {
	Definition metav1.TableColumnDefinition
	Cell       func(obj virtkit.Object, now time.Time) any
}

func nameColumn() Column {
	return Column{
		Definition: metav1.TableColumnDefinition{Name: "Name", Type: "string", Format: "name",
			Description: "Name must be unique within a namespace."},
		Cell: func(o virtkit.Object, _ time.Time) any { return o.GetName() },
	}
}

func ageColumn() Column {
	return Column{
		Definition: metav1.TableColumnDefinition{Name: "Age", Type: "date",
			Description: "Time since the object was created."},
		Cell: func(o virtkit.Object, now time.Time) any { return Age(o.GetCreationTimestamp(), now) },
	}
}

func col(name, typ string, priority int32, cell func(virtkit.Object) any) Column {
	return Column{
		Definition: metav1.TableColumnDefinition{Name: name, Type: typ, Priority: priority},
		Cell:       func(o virtkit.Object, _ time.Time) any { return cell(o) },
	}
}

func conditionStatus(conds []virtkit.Condition, t virtkit.ConditionType) any {
	for _, c := range conds {
		if c.Type == t {
			return string(c.Status)
		}
	}
	return nil
}

// Columns returns the printer columns of a kind: KubeVirt's and CDI's
// additionalPrinterColumns for theirs, kube-apiserver's for events, Name
// and Age for the others.
func Columns(kind string) []Column {
	switch kind {
	case virtkit.KindVirtualMachine:
		return vmColumns()
	case virtkit.KindVirtualMachineInstance:
		return vmiColumns()
	case virtkit.KindVirtualMachineInstanceMigration:
		mig := func(o virtkit.Object) *virtkit.VirtualMachineInstanceMigration {
			return o.(*virtkit.VirtualMachineInstanceMigration)
		}
		return []Column{nameColumn(),
			col("Phase", "string", 0, func(o virtkit.Object) any { return string(mig(o).Status.Phase) }),
			col("VMI", "string", 0, func(o virtkit.Object) any { return mig(o).Spec.VMIName })}
	case virtkit.KindVirtualMachineInstanceReplicaSet:
		return replicaSetColumns()
	case virtkit.KindDataVolume:
		dv := func(o virtkit.Object) *virtkit.DataVolume { return o.(*virtkit.DataVolume) }
		return []Column{nameColumn(),
			col("Phase", "string", 0, func(o virtkit.Object) any { return string(dv(o).Status.Phase) }),
			col("Progress", "string", 0, func(o virtkit.Object) any { return string(dv(o).Status.Progress) }),
			col("Restarts", "integer", 0, func(o virtkit.Object) any { return int64(dv(o).Status.RestartCount) }),
			ageColumn()}
	case virtkit.KindVirtualMachineExport:
		ex := func(o virtkit.Object) *virtkit.VirtualMachineExport { return o.(*virtkit.VirtualMachineExport) }
		return []Column{nameColumn(),
			col("SourceKind", "string", 0, func(o virtkit.Object) any { return ex(o).Spec.Source.Kind }),
			col("SourceName", "string", 0, func(o virtkit.Object) any { return ex(o).Spec.Source.Name }),
			col("Phase", "string", 0, func(o virtkit.Object) any {
				if st := ex(o).Status; st != nil {
					return string(st.Phase)
				}
				return nil
			})}
	case virtkit.KindNode:
		return nodeColumns()
	case virtkit.KindEvent:
		return eventColumns()
	}
	return []Column{nameColumn(), ageColumn()}
}

func vmColumns() []Column {
	vm := func(o virtkit.Object) *virtkit.VirtualMachine { return o.(*virtkit.VirtualMachine) }
	return []Column{nameColumn(), ageColumn(),
		col("Status", "string", 0, func(o virtkit.Object) any { return string(vm(o).Status.PrintableStatus) }),
		col("Ready", "string", 0, func(o virtkit.Object) any {
			return conditionStatus(vm(o).Status.Conditions, virtkit.VirtualMachineReady)
		})}
}

func vmiColumns() []Column {
	vmi := func(o virtkit.Object) *virtkit.VirtualMachineInstance { return o.(*virtkit.VirtualMachineInstance) }
	return []Column{nameColumn(), ageColumn(),
		col("Phase", "string", 0, func(o virtkit.Object) any { return string(vmi(o).Status.Phase) }),
		col("IP", "string", 0, func(o virtkit.Object) any {
			if ifs := vmi(o).Status.Interfaces; len(ifs) > 0 {
				return ifs[0].IP
			}
			return nil
		}),
		col("NodeName", "string", 0, func(o virtkit.Object) any { return vmi(o).Status.NodeName }),
		col("Ready", "string", 0, func(o virtkit.Object) any {
			return conditionStatus(vmi(o).Status.Conditions, virtkit.VirtualMachineInstanceReady)
		}),
		col("Live-Migratable", "string", 1, func(o virtkit.Object) any {
			return conditionStatus(vmi(o).Status.Conditions, virtkit.VirtualMachineInstanceIsMigratable)
		}),
		col("Paused", "string", 1, func(o virtkit.Object) any {
			return conditionStatus(vmi(o).Status.Conditions, virtkit.VirtualMachineInstancePaused)
		})}
}

func replicaSetColumns() []Column {
	rs := func(o virtkit.Object) *virtkit.VirtualMachineInstanceReplicaSet {
		return o.(*virtkit.VirtualMachineInstanceReplicaSet)
	}
	return []Column{nameColumn(),
		col("Desired", "integer", 0, func(o virtkit.Object) any {
			if r := rs(o).Spec.Replicas; r != nil {
				return int64(*r)
			}
			return nil
		}),
		col("Current", "integer", 0, func(o virtkit.Object) any { return int64(rs(o).Status.Replicas) }),
		col("Ready", "integer", 0, func(o virtkit.Object) any { return int64(rs(o).Status.ReadyReplicas) }),
		ageColumn()}
}

// nodeColumns are a Node's: its readiness as kubectl prints a node's
// (with SchedulingDisabled when cordoned), and with -o wide its
// hypervisor, CPUs and memory.
func nodeColumns() []Column {
	n := func(o virtkit.Object) *virtkit.Node { return o.(*virtkit.Node) }
	return []Column{nameColumn(),
		col("Status", "string", 0, func(o virtkit.Object) any {
			status := "NotReady"
			if virtkit.IsConditionTrue(n(o).Status.Conditions, virtkit.NodeReady) {
				status = "Ready"
			}
			if n(o).Spec.Unschedulable {
				status += ",SchedulingDisabled"
			}
			return status
		}),
		ageColumn(),
		col("Hypervisor", "string", 1, func(o virtkit.Object) any { return n(o).Status.Hypervisor }),
		col("CPU", "string", 1, func(o virtkit.Object) any {
			q, ok := n(o).Status.Capacity[virtkit.ResourceCPU]
			if !ok {
				return nil
			}
			return q.String()
		}),
		col("Memory", "string", 1, func(o virtkit.Object) any {
			q, ok := n(o).Status.Capacity[virtkit.ResourceMemory]
			if !ok {
				return nil
			}
			return q.String()
		})}
}

// eventColumns are kube-apiserver's printer columns of Events (kubectl get
// events): LAST SEEN, TYPE, REASON, OBJECT, MESSAGE, and with -o wide
// SUBOBJECT, SOURCE, FIRST SEEN, COUNT, NAME.
func eventColumns() []Column {
	ev := func(o virtkit.Object) *virtkit.Event { return o.(*virtkit.Event) }
	first := func(e *virtkit.Event) metav1.Time {
		if !e.DeprecatedFirstTimestamp.IsZero() {
			return e.DeprecatedFirstTimestamp
		}
		return metav1.NewTime(e.EventTime.Time)
	}
	return []Column{
		{Definition: metav1.TableColumnDefinition{Name: "Last Seen", Type: "string"}, Cell: func(o virtkit.Object, now time.Time) any {
			e := ev(o)
			seen := Age(e.LastSeen(), now)
			if n := e.Count(); n > 1 {
				seen += " (x" + strconv.Itoa(int(n)) + " over " + Age(first(e), now) + ")"
			}
			return seen
		}},
		col("Type", "string", 0, func(o virtkit.Object) any { return ev(o).Type }),
		col("Reason", "string", 0, func(o virtkit.Object) any { return ev(o).Reason }),
		col("Object", "string", 0, func(o virtkit.Object) any {
			r := ev(o).Regarding
			return strings.ToLower(r.Kind) + "/" + r.Name
		}),
		col("Subobject", "string", 1, func(o virtkit.Object) any { return ev(o).Regarding.FieldPath }),
		col("Source", "string", 1, func(o virtkit.Object) any {
			e := ev(o)
			src := e.DeprecatedSource.Component
			if src == "" {
				src = e.ReportingController
			}
			if h := e.DeprecatedSource.Host; h != "" {
				return src + ", " + h
			}
			return src
		}),
		col("Message", "string", 0, func(o virtkit.Object) any { return ev(o).Note }),
		{Definition: metav1.TableColumnDefinition{Name: "First Seen", Type: "string", Priority: 1}, Cell: func(o virtkit.Object, now time.Time) any {
			return Age(first(ev(o)), now)
		}},
		col("Count", "string", 1, func(o virtkit.Object) any { return strconv.Itoa(int(ev(o).Count())) }),
		{Definition: metav1.TableColumnDefinition{Name: "Name", Type: "string", Format: "name", Priority: 1},
			Cell: func(o virtkit.Object, _ time.Time) any { return o.GetName() }},
	}
}
