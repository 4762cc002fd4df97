package main

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/virtkit/virtkit/cluster"
)

func newBenchScaleCmd() *cobra.Command {
	var (
		counts  []int
		nodes   int
		workers int
		output  string
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "scale",
		Short: "Measure create-to-Running for fleets of VMs on simulated hosts",
		Long: `scale starts a fresh embedded control plane for each count, creates that many
VirtualMachines (runStrategy Always) and measures how long each takes from
its create call to its VMI reporting Running: throughput, p50/p90/p99
latency, live heap per VMI and reconciles per second.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "table" && output != "json" {
				return fmt.Errorf("--output: want table or json, got %q", output)
			}
			var results []cluster.ScaleResult
			for _, n := range counts {
				ctx := cmd.Context()
				if timeout > 0 {
					var cancel func()
					ctx, cancel = context.WithTimeout(ctx, timeout)
					defer cancel()
				}
				r, err := cluster.MeasureScale(ctx, cluster.ScaleOptions{VMs: n, Nodes: nodes, Workers: workers})
				if err != nil {
					return fmt.Errorf("%d VMs: %w", n, err)
				}
				results = append(results, r)
			}
			out := cmd.OutOrStdout()
			if output == "json" {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(results)
			}
			fmt.Fprintf(out, "# %d nodes (simulated, real time), GOMAXPROCS=%d, %s\n", nodes, runtime.GOMAXPROCS(0), time.Now().UTC().Format(time.RFC3339))
			tw := tabwriter.NewWriter(out, 0, 8, 2, ' ', tabwriter.AlignRight)
			fmt.Fprintln(tw, "VMS\tTOTAL\tVMS/S\tP50\tP90\tP99\tMAX\tHEAP/VMI\tRECONCILES/S\t")
			for _, r := range results {
				fmt.Fprintf(tw, "%d\t%s\t%.0f\t%s\t%s\t%s\t%s\t%.1f KiB\t%.0f\t\n", r.VMs, r.Total.Round(time.Millisecond),
					r.Throughput, r.P50.Round(time.Millisecond), r.P90.Round(time.Millisecond), r.P99.Round(time.Millisecond),
					r.Max.Round(time.Millisecond), float64(r.HeapPerVMI)/1024, r.ReconcilesPerSec)
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
	return cmd
}
