package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/virtkit/virtkit/cluster"
)

const churnHelp = `--churn-duration D runs each count on a virtual clock instead: the fleet is
created and brought to Running by advancing the clock, then D of virtual time
passes while, every --churn-interval (1m), --restart-rate of the VMs (0.01) are
restarted and --migrate-rate of them (0.01) live migrated, picked at random
among VMs with none of these operations in flight, through the library's
restart and migrate actions as a user's would be. The clock moves
--churn-resolution (1s) at a time and the cluster settles after each step
(0 settles at every due instant). It prints the wall time the fleet took to
run and the virtual time took, the speed (virtual over wall time: above 1 is
faster than real time), the operations asked and completed, CPU and peak RSS.`

// churnFlags are bench scale's churn options.
type churnFlags struct {
	duration, interval, resolution time.Duration
	restartRate, migrateRate       float64
	seed                           uint64
}

func (c *churnFlags) register(f *pflag.FlagSet) {
	f.DurationVar(&c.duration, "churn-duration", 0, "advance this much virtual time with background restarts and migrations after the fleet runs (virtual clock; see above)")
	f.DurationVar(&c.interval, "churn-interval", time.Minute, "with --churn-duration: the churn's period")
	f.Float64Var(&c.restartRate, "restart-rate", 0.01, "with --churn-duration: fraction of the VMs restarted every --churn-interval (0 for none)")
	f.Float64Var(&c.migrateRate, "migrate-rate", 0.01, "with --churn-duration: fraction of the VMs live migrated every --churn-interval (0 for none)")
	f.DurationVar(&c.resolution, "churn-resolution", time.Second, "with --churn-duration: how far the virtual clock moves between settles (0: every due instant)")
	f.Uint64Var(&c.seed, "churn-seed", 1, "with --churn-duration: seed of the random picks")
}

func (c churnFlags) set() bool { return c.duration > 0 }

func (c churnFlags) options(vms, nodes, workers int) (cluster.ChurnOptions, error) {
	switch {
	case c.restartRate < 0 || c.restartRate > 1:
		return cluster.ChurnOptions{}, fmt.Errorf("--restart-rate: %v is not a fraction between 0 and 1", c.restartRate)
	case c.migrateRate < 0 || c.migrateRate > 1:
		return cluster.ChurnOptions{}, fmt.Errorf("--migrate-rate: %v is not a fraction between 0 and 1", c.migrateRate)
	case c.interval <= 0:
		return cluster.ChurnOptions{}, fmt.Errorf("--churn-interval: %v is not positive", c.interval)
	case c.resolution < 0:
		return cluster.ChurnOptions{}, fmt.Errorf("--churn-resolution: %v is negative", c.resolution)
	}
	o := cluster.ChurnOptions{VMs: vms, Nodes: nodes, Workers: workers, Duration: c.duration, Interval: c.interval,
		RestartRate: rateOption(c.restartRate), MigrateRate: rateOption(c.migrateRate), Resolution: c.resolution, Seed: c.seed}
	if c.resolution == 0 {
		o.Resolution = -1 // every due instant
	}
	if err := o.Validate(); err != nil {
		return cluster.ChurnOptions{}, fmt.Errorf("--restart-rate, --migrate-rate: %w", err)
	}
	return o, nil
}

// rateOption maps a flag's 0 ("none") to the option's negative.
func rateOption(r float64) float64 {
	if r == 0 {
		return -1
	}
	return r
}

func runChurn(ctx context.Context, out io.Writer, output string, timeout time.Duration, counts []int, nodes, workers int, memProfile string, flags churnFlags) error {
	var results []cluster.ChurnResult
	for _, n := range counts {
		if n <= 0 {
			return fmt.Errorf("--vms: %d is not positive", n)
		}
		o, err := flags.options(n, nodes, workers)
		if err != nil {
			return err
		}
		cctx, cancel := ctx, context.CancelFunc(func() {})
		if timeout > 0 {
			cctx, cancel = context.WithTimeout(ctx, timeout+flags.duration)
		}
		r, err := cluster.MeasureChurn(cctx, o)
		cancel()
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
	if output == "json" {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(results)
	}
	fmt.Fprintf(out, "# %d nodes (simulated, virtual time), churn every %v: %.2f%% restarted, %.2f%% migrated; GOMAXPROCS=%d, %s\n",
		nodes, flags.interval, 100*flags.restartRate, 100*flags.migrateRate, runtime.GOMAXPROCS(0), time.Now().UTC().Format(time.RFC3339))
	tw := tabwriter.NewWriter(out, 0, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "VMS\tTO RUNNING (WALL)\tVIRTUAL\tWALL\tSPEED\tRESTARTS\tDONE\tMIGRATIONS\tSUCCEEDED\tFAILED\tREFUSED\tCPU\tPEAK RSS\t")
	for _, r := range results {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%.1fx\t%d\t%d\t%d\t%d\t%d\t%d\t%.1fs\t%.0f MiB\t\n", r.VMs, r.RunningWall.Round(time.Millisecond),
			r.Virtual, r.Wall.Round(time.Millisecond), r.Speed, r.Restarts, r.RestartsDone, r.Migrations, r.MigrationsSucceeded,
			r.MigrationsFailed, r.Refused, r.CPU.Seconds(), float64(r.PeakRSS)/(1<<20))
	}
	return tw.Flush()
}
