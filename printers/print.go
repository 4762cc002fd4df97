package printers

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Printer writes Tables as kubectl prints them: the priority-0 columns
// (every column with Wide), a NAMESPACE column first with WithNamespace,
// upper-cased headers once, "<none>" for an empty cell. Print may be
// called again with the Tables of a watch's events, which carry no column
// definitions: the last ones seen are kept.
type Printer struct {
	// W receives the output.
	W io.Writer
	// Wide prints every column (kubectl -o wide).
	Wide bool
	// WithNamespace prints each row's namespace first (kubectl -A).
	WithNamespace bool
	// Escape makes a cell safe for the terminal (object names and messages
	// are untrusted); nil prints cells as they are.
	Escape func(string) string

	columns    []metav1.TableColumnDefinition
	headerDone bool
}

// Print writes t's rows, after the header the first time.
func (p *Printer) Print(t *metav1.Table) error {
	if len(t.ColumnDefinitions) > 0 {
		p.columns = t.ColumnDefinitions
	}
	esc := p.Escape
	if esc == nil {
		esc = func(s string) string { return s }
	}
	tw := tabwriter.NewWriter(p.W, 0, 8, 3, ' ', 0)
	if !p.headerDone {
		var hdr []string
		if p.WithNamespace {
			hdr = append(hdr, "NAMESPACE")
		}
		for _, c := range p.columns {
			if c.Priority == 0 || p.Wide {
				hdr = append(hdr, strings.ToUpper(c.Name))
			}
		}
		fmt.Fprintln(tw, strings.Join(hdr, "\t"))
		p.headerDone = true
	}
	for _, r := range t.Rows {
		var cells []string
		if p.WithNamespace {
			cells = append(cells, esc(rowNamespace(r)))
		}
		for i, c := range p.columns {
			if i >= len(r.Cells) || (c.Priority != 0 && !p.Wide) {
				continue
			}
			s := ""
			if cell := r.Cells[i]; cell != nil {
				s = fmt.Sprint(cell)
			}
			if s == "" {
				s = "<none>"
			}
			cells = append(cells, esc(s))
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

// rowNamespace is the namespace of a row's object: decoded (a Table built
// in this process) or as the server sent it (PartialObjectMetadata).
func rowNamespace(r metav1.TableRow) string {
	if r.Object.Object != nil {
		if m, err := meta.Accessor(r.Object.Object); err == nil {
			return m.GetNamespace()
		}
	}
	var pom metav1.PartialObjectMetadata
	if len(r.Object.Raw) > 0 && json.Unmarshal(r.Object.Raw, &pom) == nil {
		return pom.Namespace
	}
	return ""
}
