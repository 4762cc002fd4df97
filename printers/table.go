package printers

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/virtkit/virtkit"
)

// Include says what a Table row carries besides its cells, as the
// includeObject parameter of a Table request does.
type Include string

// The values of Include.
const (
	// IncludeMetadata: each row's object is its PartialObjectMetadata
	// (the API's default).
	IncludeMetadata Include = "Metadata"
	// IncludeObject: each row's object is the object itself.
	IncludeObject Include = "Object"
	// IncludeNone: rows carry no object.
	IncludeNone Include = "None"
)

// TableOptions tune [NewTable]. The zero value renders at the zero time
// with column definitions and each row's metadata.
type TableOptions struct {
	// Now is the time ages are computed at.
	Now time.Time
	// NoHeaders leaves out the column definitions (a request's
	// TableOptions.NoHeaders, a watch's events after the first).
	NoHeaders bool
	// Include is what each row carries; "" is IncludeMetadata.
	Include Include
}

// NewTable renders objs as a meta.k8s.io Table with cols. Rows are in the
// order of objs.
func NewTable(cols []Column, objs []virtkit.Object, o TableOptions) *metav1.Table {
	t := &metav1.Table{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "Table"}}
	if !o.NoHeaders {
		for _, c := range cols {
			t.ColumnDefinitions = append(t.ColumnDefinitions, c.Definition)
		}
	}
	t.Rows = make([]metav1.TableRow, 0, len(objs))
	for _, obj := range objs {
		row := metav1.TableRow{Cells: make([]any, len(cols))}
		for i, c := range cols {
			row.Cells[i] = c.Cell(obj, o.Now)
		}
		switch o.Include {
		case IncludeNone:
		case IncludeObject:
			row.Object.Object = obj
		default:
			pom := &metav1.PartialObjectMetadata{
				TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"},
			}
			if a, ok := obj.(metav1.ObjectMetaAccessor); ok {
				if om, ok := a.GetObjectMeta().(*metav1.ObjectMeta); ok {
					pom.ObjectMeta = *om.DeepCopy()
				}
			}
			row.Object.Object = pom
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// Age renders the time since t as kubectl does (45s, 3m12s, 5h, 3d);
// "<unknown>" for a zero time.
func Age(t metav1.Time, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t.Time))
}
