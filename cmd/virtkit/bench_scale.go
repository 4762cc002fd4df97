package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/virtkit/virtkit/cluster"
)

func newBenchScaleCmd() *cobra.Command {
	var (
		counts     []int
		nodes      int
		workers    int
		output     string
		timeout    time.Duration
		cpuProfile string
		memProfile string
		plotFile   string
	)
	cmd := &cobra.Command{
		Use:   "scale",
		Short: "Measure create-to-Running for fleets of VMs on simulated hosts",
		Long: `scale starts a fresh embedded control plane for each count, creates that many
VirtualMachines (runStrategy Always) and measures how long each takes from
its create call to its VMI reporting Running: total, throughput, p50/p90/p99
latency, CPU seconds and CPU per VM, VM and VMI store writes and reconciles
per VM, live heap per VMI, peak resident set and peak goroutines.

--cpu-profile writes a CPU profile of all counts; --mem-profile writes a heap
profile (in-use and allocated) after the last count.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "table" && output != "json" {
				return fmt.Errorf("--output: want table or json, got %q", output)
			}
			if cpuProfile != "" {
				f, err := os.Create(cpuProfile)
				if err != nil {
					return fmt.Errorf("--cpu-profile: %w", err)
				}
				defer f.Close()
				if err := pprof.StartCPUProfile(f); err != nil {
					return fmt.Errorf("--cpu-profile: %w", err)
				}
				defer pprof.StopCPUProfile()
			}
			var results []cluster.ScaleResult
			for _, n := range counts {
				r, err := measureScale(cmd.Context(), timeout, cluster.ScaleOptions{VMs: n, Nodes: nodes, Workers: workers})
				if err != nil {
					return fmt.Errorf("%d VMs: %w", n, err)
				}
				results = append(results, r)
			}
			if memProfile != "" {
				if err := writeHeapProfile(memProfile); err != nil {
					return fmt.Errorf("--mem-profile: %w", err)
				}
			}
			if plotFile != "" {
				if err := writeFile(plotFile, func(w io.Writer) error { return writeScalePlot(w, nodes, results) }); err != nil {
					return fmt.Errorf("--plot: %w", err)
				}
			}
			out := cmd.OutOrStdout()
			if output == "json" {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(results)
			}
			fmt.Fprintf(out, "# %d nodes (simulated, real time), GOMAXPROCS=%d, %s\n", nodes, runtime.GOMAXPROCS(0), time.Now().UTC().Format(time.RFC3339))
			tw := tabwriter.NewWriter(out, 0, 8, 2, ' ', tabwriter.AlignRight)
			fmt.Fprintln(tw, "VMS\tTOTAL\tVMS/S\tP50\tP90\tP99\tCPU\tCPU/VM\tWRITES/VM\tRECONCILES/VM\tHEAP/VMI\tPEAK RSS\tPEAK GOROUTINES\t")
			for _, r := range results {
				fmt.Fprintf(tw, "%d\t%s\t%.0f\t%s\t%s\t%s\t%.2fs\t%.2fms\t%.1f\t%.1f\t%.1f KiB\t%.0f MiB\t%d\t\n", r.VMs, r.Total.Round(time.Millisecond),
					r.Throughput, r.P50.Round(time.Millisecond), r.P90.Round(time.Millisecond), r.P99.Round(time.Millisecond),
					r.CPU.Seconds(), float64(r.CPUPerVM)/float64(time.Millisecond), r.WritesPerVM, r.ReconcilesPerVM,
					float64(r.HeapPerVMI)/1024, float64(r.PeakRSS)/(1<<20), r.PeakGoroutines)
			}
			return tw.Flush()
		},
	}
	f := cmd.Flags()
	f.IntSliceVar(&counts, "vms", []int{1000}, "fleet sizes to measure, one fresh cluster each")
	f.IntVar(&nodes, "nodes", 4, "simulated hosts")
	f.IntVar(&workers, "workers", 8, "workers per controller and per node agent")
	f.StringVarP(&output, "output", "o", "table", "table or json")
	f.DurationVar(&timeout, "timeout", 10*time.Minute, "give up on one count after this long")
	f.StringVar(&cpuProfile, "cpu-profile", "", "write a CPU profile of the whole run to this file")
	f.StringVar(&memProfile, "mem-profile", "", "write a heap profile after the last count to this file")
	f.StringVar(&plotFile, "plot", "", "write an SVG of latency percentiles and CPU per VM against the fleet size")
	return cmd
}

func measureScale(ctx context.Context, timeout time.Duration, o cluster.ScaleOptions) (cluster.ScaleResult, error) {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	return cluster.MeasureScale(ctx, o)
}

func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	runtime.GC()
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
