package promcheck

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Family is one expected metric family: its name, type and label names.
type Family struct {
	Name string
	Type string // counter, gauge, histogram, summary
	// Labels are the label names every series carries; nil with
	// AnyLabels when they were not recorded.
	Labels    []string
	AnyLabels bool
	// VMILabels: kubernetes_vmi_label_<key> labels may follow;
	// VMLabels: label_<key> labels may follow.
	VMILabels, VMLabels bool
}

// maxListBytes bounds a family list.
const maxListBytes = 1 << 20

// ParseFamilies reads a family list: one "<name> <type> <labels>" per
// line, '#' comments, labels comma-separated, "-" for none, "?" for not
// recorded, "+vmi" and "+vm" for the copied label sets.
func ParseFamilies(r io.Reader) ([]Family, error) {
	sc := bufio.NewScanner(io.LimitReader(r, maxListBytes))
	var out []Family
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 3 {
			return nil, fmt.Errorf("line %d: want <name> <type> <labels>, got %q", n, line)
		}
		fam := Family{Name: f[0], Type: f[1]}
		switch f[1] {
		case "counter", "gauge", "histogram", "summary":
		default:
			return nil, fmt.Errorf("line %d: unknown type %q", n, f[1])
		}
		switch f[2] {
		case "-":
		case "?":
			fam.AnyLabels = true
		default:
			for _, l := range strings.Split(f[2], ",") {
				switch l {
				case "+vmi":
					fam.VMILabels = true
				case "+vm":
					fam.VMLabels = true
				default:
					fam.Labels = append(fam.Labels, l)
				}
			}
		}
		out = append(out, fam)
	}
	return out, sc.Err()
}

// Report is how an exposition serves a list of families.
type Report struct {
	// Served have at least one series, the expected type and labels.
	Served []string
	// Missing have no series.
	Missing []string
	// Mismatched have series of another type or with other labels; each
	// entry says why.
	Mismatched []string
}

// Compare checks exposition against want. extra lists, per family, label
// names the exposition may add beyond the expected ones.
func Compare(want []Family, exposition []byte, extra map[string][]string) Report {
	types := map[string]string{}
	labels := map[string][][]string{}
	sc := bufio.NewScanner(bytes.NewReader(exposition))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			if f := strings.Fields(rest); len(f) == 2 {
				types[f[0]] = f[1]
			}
			continue
		}
		if line == "" || line[0] == '#' {
			continue
		}
		name, ls := line, []string(nil)
		if i := strings.IndexAny(line, "{ "); i >= 0 {
			name = line[:i]
			if line[i] == '{' {
				ls = labelNames(line[i+1:])
			}
		}
		if _, ok := types[name]; !ok {
			name = baseName(name)
		}
		labels[name] = append(labels[name], ls)
	}
	var r Report
	for _, f := range want {
		series := labels[f.Name]
		if len(series) == 0 {
			r.Missing = append(r.Missing, f.Name)
			continue
		}
		if typ := types[f.Name]; typ != f.Type {
			r.Mismatched = append(r.Mismatched, fmt.Sprintf("%s: type %s, want %s", f.Name, typ, f.Type))
			continue
		}
		if why := labelMismatch(f, series, extra[f.Name]); why != "" {
			r.Mismatched = append(r.Mismatched, f.Name+": "+why)
			continue
		}
		r.Served = append(r.Served, f.Name)
	}
	return r
}

// labelMismatch says how a series' labels differ from f's, or "".
func labelMismatch(f Family, series [][]string, extra []string) string {
	if f.AnyLabels {
		return ""
	}
	for _, ls := range series {
		for _, want := range f.Labels {
			if !slices.Contains(ls, want) {
				return fmt.Sprintf("a series lacks label %q (has %v)", want, ls)
			}
		}
		for _, l := range ls {
			switch {
			case l == "le" && f.Type == "histogram", l == "quantile" && f.Type == "summary":
			case slices.Contains(f.Labels, l), slices.Contains(extra, l):
			case f.VMILabels && strings.HasPrefix(l, "kubernetes_vmi_label_"):
			case f.VMLabels && strings.HasPrefix(l, "label_"):
			default:
				return fmt.Sprintf("a series has label %q, which KubeVirt's has not", l)
			}
		}
	}
	return ""
}
