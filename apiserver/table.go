package apiserver

import (
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/virtkit/virtkit"
)

// column is one printer column: its definition and how to compute the cell.
type column struct {
	def  metav1.TableColumnDefinition
	cell func(obj virtkit.Object, now time.Time) any
}

func nameColumn() column {
	return column{
		def: metav1.TableColumnDefinition{Name: "Name", Type: "string", Format: "name",
			Description: "Name must be unique within a namespace."},
		cell: func(o virtkit.Object, _ time.Time) any { return o.GetName() },
	}
}

func ageColumn() column {
	return column{
		def: metav1.TableColumnDefinition{Name: "Age", Type: "date",
			Description: "Time since the object was created."},
		cell: func(o virtkit.Object, now time.Time) any {
			ts := o.GetCreationTimestamp()
			if ts.IsZero() {
				return "<unknown>"
			}
			return duration.HumanDuration(now.Sub(ts.Time))
		},
	}
}

func col(name, typ string, priority int32, cell func(virtkit.Object) any) column {
	return column{
		def:  metav1.TableColumnDefinition{Name: name, Type: typ, Priority: priority},
		cell: func(o virtkit.Object, _ time.Time) any { return cell(o) },
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

// columnsOf returns the printer columns of a kind: KubeVirt's and CDI's
// additionalPrinterColumns for theirs, Name and Age for the others.
func columnsOf(kind string) []column {
	cols := []column{nameColumn()}
	switch kind {
	case virtkit.KindVirtualMachine:
		cols = append(cols, ageColumn(),
			col("Status", "string", 0, func(o virtkit.Object) any {
				return string(o.(*virtkit.VirtualMachine).Status.PrintableStatus)
			}),
			col("Ready", "string", 0, func(o virtkit.Object) any {
				return conditionStatus(o.(*virtkit.VirtualMachine).Status.Conditions, virtkit.VirtualMachineReady)
			}))
	case virtkit.KindVirtualMachineInstance:
		vmi := func(o virtkit.Object) *virtkit.VirtualMachineInstance { return o.(*virtkit.VirtualMachineInstance) }
		cols = append(cols, ageColumn(),
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
			}))
	case virtkit.KindVirtualMachineInstanceMigration:
		cols = append(cols,
			col("Phase", "string", 0, func(o virtkit.Object) any {
				return string(o.(*virtkit.VirtualMachineInstanceMigration).Status.Phase)
			}),
			col("VMI", "string", 0, func(o virtkit.Object) any {
				return o.(*virtkit.VirtualMachineInstanceMigration).Spec.VMIName
			}))
	case virtkit.KindVirtualMachineInstanceReplicaSet:
		rs := func(o virtkit.Object) *virtkit.VirtualMachineInstanceReplicaSet {
			return o.(*virtkit.VirtualMachineInstanceReplicaSet)
		}
		cols = append(cols,
			col("Desired", "integer", 0, func(o virtkit.Object) any {
				if r := rs(o).Spec.Replicas; r != nil {
					return int64(*r)
				}
				return nil
			}),
			col("Current", "integer", 0, func(o virtkit.Object) any { return int64(rs(o).Status.Replicas) }),
			col("Ready", "integer", 0, func(o virtkit.Object) any { return int64(rs(o).Status.ReadyReplicas) }),
			ageColumn())
	case virtkit.KindDataVolume:
		dv := func(o virtkit.Object) *virtkit.DataVolume { return o.(*virtkit.DataVolume) }
		cols = append(cols,
			col("Phase", "string", 0, func(o virtkit.Object) any { return string(dv(o).Status.Phase) }),
			col("Progress", "string", 0, func(o virtkit.Object) any { return string(dv(o).Status.Progress) }),
			col("Restarts", "integer", 0, func(o virtkit.Object) any { return int64(dv(o).Status.RestartCount) }),
			ageColumn())
	case virtkit.KindVirtualMachineExport:
		ex := func(o virtkit.Object) *virtkit.VirtualMachineExport { return o.(*virtkit.VirtualMachineExport) }
		cols = append(cols,
			col("SourceKind", "string", 0, func(o virtkit.Object) any { return ex(o).Spec.Source.Kind }),
			col("SourceName", "string", 0, func(o virtkit.Object) any { return ex(o).Spec.Source.Name }),
			col("Phase", "string", 0, func(o virtkit.Object) any {
				if st := ex(o).Status; st != nil {
					return string(st.Phase)
				}
				return nil
			}))
	case virtkit.KindNode:
		cols = append(cols,
			col("Status", "string", 0, func(o virtkit.Object) any {
				if s, ok := conditionStatus(o.(*virtkit.Node).Status.Conditions, virtkit.NodeReady).(string); ok && s == "True" {
					return "Ready"
				}
				return "NotReady"
			}),
			ageColumn(),
			col("Hypervisor", "string", 1, func(o virtkit.Object) any { return o.(*virtkit.Node).Status.Hypervisor }))
	case virtkit.KindEvent:
		ev := func(o virtkit.Object) *virtkit.Event { return o.(*virtkit.Event) }
		cols = append(cols,
			col("Type", "string", 0, func(o virtkit.Object) any { return ev(o).Type }),
			col("Reason", "string", 0, func(o virtkit.Object) any { return ev(o).Reason }),
			col("Object", "string", 0, func(o virtkit.Object) any {
				r := ev(o).Regarding
				return strings.ToLower(r.Kind) + "/" + r.Name
			}),
			col("Note", "string", 0, func(o virtkit.Object) any { return ev(o).Note }),
			ageColumn())
	default:
		cols = append(cols, ageColumn())
	}
	return cols
}

// tableOf renders objs as a Table. include is the request's includeObject:
// "None", "Object" or "Metadata" (the default).
func tableOf(cols []column, objs []virtkit.Object, include string, now time.Time, withColumns bool) *metav1.Table {
	t := &metav1.Table{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "Table"}}
	if withColumns {
		for _, c := range cols {
			t.ColumnDefinitions = append(t.ColumnDefinitions, c.def)
		}
	}
	for _, o := range objs {
		row := metav1.TableRow{Cells: make([]any, len(cols))}
		for i, c := range cols {
			row.Cells[i] = c.cell(o, now)
		}
		switch include {
		case "None":
		case "Object":
			row.Object.Object = o
		default:
			pom := &metav1.PartialObjectMetadata{
				TypeMeta:   metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"},
				ObjectMeta: *o.(metav1.ObjectMetaAccessor).GetObjectMeta().(*metav1.ObjectMeta).DeepCopy(),
			}
			row.Object.Object = pom
		}
		t.Rows = append(t.Rows, row)
	}
	if t.Rows == nil {
		t.Rows = []metav1.TableRow{}
	}
	return t
}
