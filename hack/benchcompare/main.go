package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"text/tabwriter"
	"time"
)

// result is the part of one `virtkit bench scale -o json` entry compared.
type result struct {
	VMs             int
	Nodes           int
	Backend         string
	Total           time.Duration
	CPUPerVM        time.Duration
	PeakRSS         uint64
	WritesPerVM     float64
	ReconcilesPerVM float64
}

// maxResultBytes bounds one results file.
const maxResultBytes = 16 << 20

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: benchcompare DIR RUNS")
		os.Exit(2)
	}
	runs, err := strconv.Atoi(os.Args[2])
	if err != nil || runs <= 0 {
		fmt.Fprintf(os.Stderr, "benchcompare: RUNS: %q is not a positive number\n", os.Args[2])
		os.Exit(2)
	}
	sets := map[string][][]result{}
	for _, name := range []string{"old", "new"} {
		for i := 1; i <= runs; i++ {
			rs, err := load(filepath.Join(os.Args[1], fmt.Sprintf("%s-%d.json", name, i)))
			if err != nil {
				fmt.Fprintln(os.Stderr, "benchcompare:", err)
				os.Exit(1)
			}
			sets[name] = append(sets[name], rs)
		}
	}
	if err := summarize(os.Stdout, sets["old"], sets["new"]); err != nil {
		fmt.Fprintln(os.Stderr, "benchcompare:", err)
		os.Exit(1)
	}
}

func load(path string) ([]result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var rs []result
	if err := json.NewDecoder(io.LimitReader(f, maxResultBytes)).Decode(&rs); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return rs, nil
}

// summarize writes every run and, per fleet size, the medians and their
// ratios new/old. old and new hold one result list per run.
func summarize(w io.Writer, old, new [][]result) error {
	byVMs := func(runs [][]result) (map[int][]result, []int) {
		m := map[int][]result{}
		var sizes []int
		for _, rs := range runs {
			for _, r := range rs {
				if _, ok := m[r.VMs]; !ok {
					sizes = append(sizes, r.VMs)
				}
				m[r.VMs] = append(m[r.VMs], r)
			}
		}
		slices.Sort(sizes)
		return m, sizes
	}
	o, sizes := byVMs(old)
	n, newSizes := byVMs(new)
	for _, size := range newSizes {
		if _, ok := o[size]; !ok {
			sizes = append(sizes, size)
		}
	}
	slices.Sort(sizes)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TREE\tVMS\tNODES\tSTORE\tTOTAL\tCPU/VM\tPEAK RSS\tWRITES/VM\tRECONCILES/VM")
	for _, size := range sizes {
		for _, tree := range []struct {
			name string
			rs   []result
		}{{"old", o[size]}, {"new", n[size]}} {
			for _, r := range tree.rs {
				fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%.2fs\t%.2fms\t%d MiB\t%.2f\t%.2f\n", tree.name, r.VMs, r.Nodes, r.Backend,
					r.Total.Seconds(), float64(r.CPUPerVM.Microseconds())/1000, r.PeakRSS>>20, r.WritesPerVM, r.ReconcilesPerVM)
			}
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "VMS\tMEDIAN TOTAL old→new\tRATIO\tCPU/VM RATIO\tPEAK RSS RATIO\tWRITES/VM RATIO\tRECONCILES/VM RATIO")
	for _, size := range sizes {
		if len(o[size]) == 0 || len(n[size]) == 0 {
			return fmt.Errorf("%d VMs: measured by one tree only", size)
		}
		med := func(rs []result, f func(result) float64) float64 {
			v := make([]float64, len(rs))
			for i, r := range rs {
				v[i] = f(r)
			}
			slices.Sort(v)
			if len(v)%2 == 1 {
				return v[len(v)/2]
			}
			return (v[len(v)/2-1] + v[len(v)/2]) / 2
		}
		ratio := func(f func(result) float64) string {
			a, b := med(o[size], f), med(n[size], f)
			if a == 0 {
				return "n/a"
			}
			return fmt.Sprintf("%.2f×", b/a)
		}
		total := func(r result) float64 { return r.Total.Seconds() }
		fmt.Fprintf(tw, "%d\t%.2fs → %.2fs\t%s\t%s\t%s\t%s\t%s\n", size, med(o[size], total), med(n[size], total), ratio(total),
			ratio(func(r result) float64 { return float64(r.CPUPerVM) }),
			ratio(func(r result) float64 { return float64(r.PeakRSS) }),
			ratio(func(r result) float64 { return r.WritesPerVM }),
			ratio(func(r result) float64 { return r.ReconcilesPerVM }))
	}
	if len(sizes) == 0 {
		return errors.New("no results")
	}
	return tw.Flush()
}
