package corev1

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/utils/clock"
)

// column is one printer column: its definition and its cell of an object.
type column struct {
	def  metav1.TableColumnDefinition
	cell func(obj runtime.Object, now time.Time) any
}

// table is a TableConvertor with kube-apiserver's printer columns of a kind.
type table struct {
	clock   clock.PassiveClock
	columns []column
}

func nameColumn() column {
	return column{def: metav1.TableColumnDefinition{Name: "Name", Type: "string", Format: "name"},
		cell: func(obj runtime.Object, _ time.Time) any {
			m, _ := meta.Accessor(obj)
			return m.GetName()
		}}
}

func ageColumn() column {
	return column{def: metav1.TableColumnDefinition{Name: "Age", Type: "string"},
		cell: func(obj runtime.Object, now time.Time) any {
			m, _ := meta.Accessor(obj)
			return age(m.GetCreationTimestamp(), now)
		}}
}

func intColumn(name string, f func(runtime.Object) int) column {
	return column{def: metav1.TableColumnDefinition{Name: name, Type: "integer"},
		cell: func(obj runtime.Object, _ time.Time) any { return int64(f(obj)) }}
}

func age(t metav1.Time, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t.Time))
}

// ConvertToTable implements rest.TableConvertor.
func (t table) ConvertToTable(_ context.Context, object runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	out := &metav1.Table{}
	now := t.clock.Now()
	row := func(obj runtime.Object) error {
		if _, err := meta.Accessor(obj); err != nil {
			return err
		}
		cells := make([]any, len(t.columns))
		for i, c := range t.columns {
			cells[i] = c.cell(obj, now)
		}
		out.Rows = append(out.Rows, metav1.TableRow{Cells: cells, Object: runtime.RawExtension{Object: obj}})
		return nil
	}
	if meta.IsListType(object) {
		if err := meta.EachListItem(object, row); err != nil {
			return nil, err
		}
		if m, err := meta.ListAccessor(object); err == nil {
			out.ResourceVersion, out.Continue, out.RemainingItemCount = m.GetResourceVersion(), m.GetContinue(), m.GetRemainingItemCount()
		}
	} else {
		if err := row(object); err != nil {
			return nil, err
		}
		if m, err := meta.Accessor(object); err == nil {
			out.ResourceVersion = m.GetResourceVersion()
		}
	}
	if opt, ok := tableOptions.(*metav1.TableOptions); !ok || !opt.NoHeaders {
		for _, c := range t.columns {
			out.ColumnDefinitions = append(out.ColumnDefinitions, c.def)
		}
	}
	return out, nil
}
