package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/migration/bench"
)

func newBenchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Benchmarks on the simulated hypervisor",
	}
	cmd.AddCommand(withRealQEMU(newBenchMigrateCmd()))
	cmd.AddCommand(newBenchScaleCmd())
	return cmd
}

func newBenchMigrateCmd() *cobra.Command {
	var (
		profilesFile string
		policies     string
		output       string
		plotFile     string
		plotProfile  string
		plotSummary  string
		capsName     string
		autoConverge string
	)
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Compare live-migration policies side by side on the simulated hypervisor",
		Long: `Runs every workload profile under every policy on the simulated hypervisor with a
virtual clock (deterministic, seconds of wall time for hours of simulated time) and
reports outcome, total time against the lower bound memory/bandwidth, downtime, data
sent, decision time and throttle. Without --profiles it runs the eight built-in
workload profiles (P1 to P8).

With virtkit and at least one baseline among --policies, the table output ends
with the comparison per profile: virtkit's total against the fastest baseline that
kept its pause within the profile's downtime limit (rule WithinDowntimeLimit) and
against the fastest baseline regardless of its pause, with the ratios, then the
median virtkit total/(M/B) over the profiles some strategy can move, with the rule
and without it.

A profiles file is a YAML list of objects: name, memory, bandwidth, dirtyRate,
workingSet, shape (uniform|hotset|bursty; sequential too), burstPeriod, burstFactor,
throttleSensitivity, dips [{at, duration, factor}], allowPostCopy, allowAutoConverge,
downtimeLimit (ms, default 300).

--capabilities libvirt (the default) gives the engine exactly what libvirt offers:
a dirty-rate measurement before the start only, QEMU's auto-converge (enabled at the
start) as the only throttle, and a job dirty rate that reads 0 until QEMU's first
sync. --capabilities full adds what only the simulator has (dirty-rate probes during
the job, a direct vCPU throttle); every row says which one it ran with.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			profiles := bench.BuiltinProfiles()
			if profilesFile != "" {
				data, err := os.ReadFile(profilesFile)
				if err != nil {
					return fmt.Errorf("--profiles: %w", err)
				}
				if profiles, err = bench.DecodeProfiles(data); err != nil {
					return fmt.Errorf("--profiles %s: %w", profilesFile, err)
				}
			}
			var names []string
			for _, p := range strings.Split(policies, ",") {
				if p = strings.TrimSpace(p); p != "" {
					names = append(names, p)
				}
			}
			if len(names) == 0 {
				return fmt.Errorf("--policies: empty")
			}
			for _, n := range names {
				if _, err := bench.NewPolicy(n); err != nil {
					return fmt.Errorf("--policies: %w", err)
				}
			}
			caps, err := bench.ParseCapabilities(capsName)
			if err != nil {
				return fmt.Errorf("--capabilities: %w", err)
			}
			ac := sim.AutoConvergeSchedule(autoConverge)
			if ac != sim.AutoConvergeLegacy && ac != sim.AutoConvergeQEMU92 {
				return fmt.Errorf("--qemu-auto-converge: %q is not %s or %s", autoConverge, sim.AutoConvergeLegacy, sim.AutoConvergeQEMU92)
			}
			if output != "table" && output != "json" {
				return fmt.Errorf("--output: %q is not table or json", output)
			}
			if plotProfile != "" && !slices.ContainsFunc(profiles, func(p bench.Profile) bool { return p.Name == plotProfile }) {
				return fmt.Errorf("--plot-profile: no profile %q", plotProfile)
			}
			rows, err := bench.Run(cmd.Context(), profiles, names, bench.Options{Samples: plotFile != "", Capabilities: caps, AutoConverge: ac})
			if err != nil {
				return err
			}
			if plotFile != "" {
				if plotProfile == "" {
					plotProfile = bench.InformativeProfile(rows)
				}
				if err := writeFile(plotFile, func(w io.Writer) error { return bench.WritePlot(w, plotProfile, rows) }); err != nil {
					return fmt.Errorf("--plot: %w", err)
				}
			}
			if plotSummary != "" {
				if err := writeFile(plotSummary, func(w io.Writer) error { return bench.WriteSummaryPlot(w, rows) }); err != nil {
					return fmt.Errorf("--plot-summary: %w", err)
				}
			}
			out := cmd.OutOrStdout()
			if output == "json" {
				return bench.WriteJSON(out, rows)
			}
			if err := bench.WriteTable(out, rows); err != nil {
				return err
			}
			if !slices.Contains(names, "virtkit") || len(names) < 2 {
				return nil
			}
			// The comparison the held-out tests hold virtkit to.
			if _, err := fmt.Fprintln(out); err != nil {
				return err
			}
			return bench.WriteVersus(out, profiles, rows)
		},
	}
	f := cmd.Flags()
	f.StringVar(&profilesFile, "profiles", "", "YAML file with workload profiles (default: the eight built-in profiles)")
	f.StringVar(&policies, "policies", strings.Join(bench.PolicyNames(), ","), "comma-separated policies: "+strings.Join(bench.PolicyNames(), ", "))
	f.StringVar(&output, "output", "table", "output format: table or json")
	f.StringVar(&plotFile, "plot", "", "write an SVG of remaining data against time for every policy on one profile")
	f.StringVar(&plotProfile, "plot-profile", "", "the profile to plot (default: the one whose policies differ most)")
	f.StringVar(&plotSummary, "plot-summary", "", "write an SVG of total time / lower bound and downtime per policy on every profile")
	f.StringVar(&capsName, "capabilities", string(bench.CapabilitiesLibvirt), "what the simulated backend offers the engine: libvirt or full")
	f.StringVar(&autoConverge, "qemu-auto-converge", string(sim.AutoConvergeQEMU92), "QEMU's auto-converge schedule: qemu-9.2 (5 s background syncs) or legacy")
	return cmd
}

// writeFile creates path and writes it with write, closing it either way.
func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
