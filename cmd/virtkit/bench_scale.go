package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
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
		storeKind  string
		endpoints  []string
		api        bool
		churn      churnFlags
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
profile (in-use and allocated) after the last count.

--store etcd runs the control plane as separate processes against a real
etcd: one ` + "`virtkit controller`" + ` and --nodes ` + "`virtkit node`" + ` processes (default 3)
on simulated hosts. The bench starts an etcd server (build/bin/etcd, see
hack/etcd.sh, or $VIRTKIT_ETCD_BIN) unless --etcd-endpoints names one, and
every process it needs, and stops them after each count. CPU is summed over
all processes (etcd, controller, nodes and the bench's own client), writes are
counted from a watch and reconciles scraped from each process's metrics; with
--cpu-profile FILE every virtkit process also writes FILE-NAME-VMS.pprof.

--api measures each count twice in the same run: through the library
(cluster.Apply, as without it), then with the same embedded cluster serving
the Kubernetes API on a loopback port (as ` + "`virtkit controller`" + ` does: TLS, RBAC,
the watch cache) and client-go creating the VMs and watching their VMIs to
Running through it. It prints both and their ratio; writes per VM are not
counted through the API.

` + churnHelp,
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
			if storeKind != "memory" && storeKind != "etcd" {
				return fmt.Errorf("--store: want memory or etcd, got %q", storeKind)
			}
			if len(endpoints) > 0 && storeKind != "etcd" {
				return errors.New("--etcd-endpoints: only with --store etcd")
			}
			if api && storeKind != "memory" {
				return errors.New("--api: only with --store memory")
			}
			if storeKind == "etcd" && !cmd.Flags().Changed("nodes") {
				nodes = 3
			}
			if nodes <= 0 || workers <= 0 {
				return errors.New("--nodes, --workers: must be positive")
			}
			var eo etcdScaleOptions
			if storeKind == "etcd" {
				bin, err := os.Executable()
				if err != nil {
					return fmt.Errorf("--store etcd: the virtkit executable: %w", err)
				}
				eo = etcdScaleOptions{Endpoints: endpoints, NodeProcs: nodes, Workers: workers, Binary: bin}
				if cpuProfile != "" {
					eo.ProfilePrefix = strings.TrimSuffix(cpuProfile, filepath.Ext(cpuProfile))
				}
			}
			if churn.set() {
				if storeKind != "memory" || api {
					return errors.New("--churn-duration: only with --store memory and without --api")
				}
				return runChurn(cmd.Context(), cmd.OutOrStdout(), output, timeout, counts, nodes, workers, memProfile, churn)
			}
			var results []cluster.ScaleResult
			for _, n := range counts {
				if n <= 0 {
					return fmt.Errorf("--vms: %d is not positive", n)
				}
				var r cluster.ScaleResult
				var err error
				if storeKind == "etcd" {
					r, err = measureScaleEtcdTimeout(cmd.Context(), timeout, n, eo)
				} else {
					r, err = measureScale(cmd.Context(), timeout, cluster.ScaleOptions{VMs: n, Nodes: nodes, Workers: workers})
				}
				if err != nil {
					return fmt.Errorf("%d VMs: %w", n, err)
				}
				results = append(results, r)
				if api {
					r, err := measureScaleAPITimeout(cmd.Context(), timeout, cluster.ScaleOptions{VMs: n, Nodes: nodes, Workers: workers})
					if err != nil {
						return fmt.Errorf("%d VMs through the API: %w", n, err)
					}
					results = append(results, r)
				}
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
			if storeKind == "etcd" {
				fmt.Fprintf(out, "# etcd: 1 controller process, %d node processes (simulated, real time), %d CPUs, %s\n", nodes, runtime.NumCPU(), time.Now().UTC().Format(time.RFC3339))
			} else {
				fmt.Fprintf(out, "# %d nodes (simulated, real time), GOMAXPROCS=%d, %s\n", nodes, runtime.GOMAXPROCS(0), time.Now().UTC().Format(time.RFC3339))
			}
			tw := tabwriter.NewWriter(out, 0, 8, 2, ' ', tabwriter.AlignRight)
			path := func(cluster.ScaleResult) string { return "" }
			if api {
				fmt.Fprint(tw, "PATH\t")
				path = func(r cluster.ScaleResult) string {
					if r.Backend == backendAPI {
						return "api\t"
					}
					return "library\t"
				}
			}
			fmt.Fprintln(tw, "VMS\tTOTAL\tVMS/S\tP50\tP90\tP99\tCPU\tCPU/VM\tWRITES/VM\tRECONCILES/VM\tHEAP/VMI\tPEAK RSS\tPEAK GOROUTINES\t")
			for _, r := range results {
				// Heap per VMI and goroutines are this process's: unknown
				// when the fleet runs in other processes.
				heap, goroutines := fmt.Sprintf("%.1f KiB", float64(r.HeapPerVMI)/1024), strconv.Itoa(r.PeakGoroutines)
				writes, rss := fmt.Sprintf("%.1f", r.WritesPerVM), fmt.Sprintf("%.0f MiB", float64(r.PeakRSS)/(1<<20))
				if len(r.Processes) > 0 {
					heap, goroutines = "-", "-"
				}
				if r.Backend == backendAPI {
					heap, goroutines, writes, rss = "-", "-", "-", "-"
				}
				fmt.Fprintf(tw, "%s%d\t%s\t%.0f\t%s\t%s\t%s\t%.2fs\t%.2fms\t%s\t%.1f\t%s\t%s\t%s\t\n", path(r), r.VMs, r.Total.Round(time.Millisecond),
					r.Throughput, r.P50.Round(time.Millisecond), r.P90.Round(time.Millisecond), r.P99.Round(time.Millisecond),
					r.CPU.Seconds(), float64(r.CPUPerVM)/float64(time.Millisecond), writes, r.ReconcilesPerVM,
					heap, rss, goroutines)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if api {
				writeAPIRatios(out, results)
			}
			return writeProcessTable(out, results)
		},
	}
	f := cmd.Flags()
	f.IntSliceVar(&counts, "vms", []int{1000}, "fleet sizes to measure, one fresh cluster each")
	f.IntVar(&nodes, "nodes", 4, "simulated hosts (node processes with --store etcd, default 3 there)")
	f.StringVar(&storeKind, "store", "memory", "memory (one process) or etcd (a controller and --nodes node processes against etcd)")
	f.StringSliceVar(&endpoints, "etcd-endpoints", nil, "with --store etcd: use this etcd (http://HOST:PORT,...) instead of starting one")
	f.IntVar(&workers, "workers", 8, "workers per controller and per node agent")
	f.StringVarP(&output, "output", "o", "table", "table or json")
	f.DurationVar(&timeout, "timeout", 10*time.Minute, "give up on one count after this long")
	f.StringVar(&cpuProfile, "cpu-profile", "", "write a CPU profile of the whole run to this file")
	f.StringVar(&memProfile, "mem-profile", "", "write a heap profile after the last count to this file")
	f.BoolVar(&api, "api", false, "also measure each count through the Kubernetes API (client-go against the embedded cluster's API server) and print the ratio")
	churn.register(f)
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

func measureScaleAPITimeout(ctx context.Context, timeout time.Duration, o cluster.ScaleOptions) (cluster.ScaleResult, error) {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	return measureScaleAPI(ctx, o)
}

// writeAPIRatios prints, per count, the run through the API against the
// run through the library.
func writeAPIRatios(out io.Writer, results []cluster.ScaleResult) {
	lib := map[int]cluster.ScaleResult{}
	for _, r := range results {
		if r.Backend != backendAPI {
			lib[r.VMs] = r
			continue
		}
		l, ok := lib[r.VMs]
		if !ok || l.Total <= 0 || l.CPUPerVM <= 0 {
			continue
		}
		fmt.Fprintf(out, "# %d VMs: api/library total %.2fx, p99 %.2fx, CPU per VM %.2fx\n", r.VMs,
			r.Total.Seconds()/l.Total.Seconds(), float64(r.P99)/float64(max(l.P99, 1)), float64(r.CPUPerVM)/float64(l.CPUPerVM))
	}
}

func measureScaleEtcdTimeout(ctx context.Context, timeout time.Duration, vms int, o etcdScaleOptions) (cluster.ScaleResult, error) {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	return measureScaleEtcd(ctx, vms, o)
}

// writeProcessTable breaks multi-process runs down per process.
func writeProcessTable(out io.Writer, results []cluster.ScaleResult) error {
	tw := tabwriter.NewWriter(out, 0, 8, 2, ' ', tabwriter.AlignRight)
	header := false
	for _, r := range results {
		if len(r.Processes) == 0 {
			continue
		}
		if !header {
			fmt.Fprintln(out)
			fmt.Fprintln(tw, "VMS\tPROCESS\tCPU\tCPU/VM\tRECONCILES/VM\tPEAK RSS\t")
			header = true
		}
		for _, p := range r.Processes {
			fmt.Fprintf(tw, "%d\t%s\t%.2fs\t%.2fms\t%.1f\t%.0f MiB\t\n", r.VMs, p.Name, p.CPU.Seconds(),
				float64(p.CPU)/float64(r.VMs)/float64(time.Millisecond), float64(p.Reconciles)/float64(r.VMs), float64(p.PeakRSS)/(1<<20))
		}
	}
	return tw.Flush()
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
