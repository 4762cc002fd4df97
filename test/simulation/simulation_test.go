package simulation

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var (
	flagSeeds      = flag.String("seeds", "", "seeds to run, FROM:TO (inclusive); default: the CI budget (-budget)")
	flagOps        = flag.Int("ops", 80, "operations per seed")
	flagBudget     = flag.Int("budget", 50, "seeds run when -seeds is not given (the CI budget: about 4 minutes with -race on 2 shared cores)")
	flagReplay     = flag.String("replay", "", "replay a reproduction file (JSON printed by a failing run)")
	flagSeed       = flag.Int64("seed", 0, "run this one seed (with -ops-log, print its op log)")
	flagOpsLog     = flag.Bool("ops-log", false, "print the op log of every seed run")
	flagShrink     = flag.Bool("shrink", true, "shrink the op log of a failing seed")
	flagEnable     = flag.String("enable", "", "comma-separated operations to enable although disabled by default ('all' for every one)")
	flagShrinkInv  = flag.String("shrink-invariant", "", "shrink for this invariant (default: the first violated)")
	flagShrinkRuns = flag.Int("shrink-runs", 60, "most runs one shrink may spend")
	flagTrace      = flag.String("trace", "", "write the per-instant trace of the (last) run to this file")
	flagNoWD       = flag.Bool("no-watchdog", false, "run the hosts without their watchdogs (the cluster's default)")
	flagDisable    = flag.String("disable", "", "comma-separated operations to disable")
)

// TestSimulation is the entry point: go test ./test/simulation -args
// -seeds FROM:TO -ops N. It prints one line per violation (seed=N step=K
// invariant: message), the op log and a shrunk reproduction of each
// failing seed, and "N passed, M failed".
func TestSimulation(t *testing.T) {
	if testing.Short() {
		t.Skip("simulation: not in -short")
	}
	if *flagMultiProcess {
		t.Skip("simulation: -multiprocess runs TestMultiProcess only")
	}
	ctx := context.Background()
	disabled := switches(t)
	for name, why := range disabled {
		t.Logf("disabled: %s (%s)", name, why)
	}
	if *flagReplay != "" {
		r, err := ReadRepro(*flagReplay)
		require.NoError(t, err)
		cfg := Config{Seed: r.Seed, Disabled: disabled, NoWatchdog: *flagNoWD || r.NoWatchdog}
		if *flagTrace != "" {
			cfg.Trace = func(tr string) { _ = os.WriteFile(*flagTrace, []byte(tr), 0o644) }
		}
		out, err := Run(ctx, cfg, r.Ops)
		require.NoError(t, err)
		report(t, cfg, r.Ops, out, false)
		return
	}
	from, to := int64(1), int64(*flagBudget)
	switch {
	case *flagSeed != 0:
		from, to = *flagSeed, *flagSeed
	case *flagSeeds != "":
		var err error
		from, to, err = parseSeeds(*flagSeeds)
		require.NoError(t, err)
	}
	traceTo := func(cfg *Config) {
		if *flagTrace != "" {
			cfg.Trace = func(tr string) { _ = os.WriteFile(*flagTrace, []byte(tr), 0o644) }
		}
	}
	start := time.Now()
	passed, failed, steps := 0, 0, 0
	for seed := from; seed <= to; seed++ {
		cfg := Config{Seed: seed, Ops: *flagOps, Disabled: disabled, NoWatchdog: *flagNoWD}
		traceTo(&cfg)
		ops := Generate(cfg)
		steps += len(ops)
		out, err := Run(ctx, cfg, ops)
		require.NoError(t, err, "seed %d", seed)
		if report(t, cfg, ops, out, *flagShrink) {
			failed++
		} else {
			passed++
		}
	}
	el := time.Since(start)
	t.Logf("%d seeds, %d ops in %s: %.1f seeds/min, %.0f ops/min", passed+failed, steps, el.Round(time.Millisecond),
		float64(passed+failed)/el.Minutes(), float64(steps)/el.Minutes())
	fmt.Printf("%d passed, %d failed\n", passed, failed)
	if failed > 0 {
		t.Fail()
	}
}

// report prints a run's violations (and, for a failure, its op log and a
// shrunk reproduction); it reports whether the run failed.
func report(t *testing.T, cfg Config, ops []Op, out Outcome, shrink bool) bool {
	t.Helper()
	if *flagOpsLog || out.Failed() {
		var b strings.Builder
		for i, op := range ops {
			fmt.Fprintf(&b, "  step %d: %s\n", i, op)
		}
		t.Logf("seed=%d op log:\n%s", cfg.Seed, b.String())
	}
	for _, e := range out.Errors {
		t.Logf("seed=%d unexpected op error: %s", cfg.Seed, e)
	}
	if !out.Failed() {
		return false
	}
	for _, v := range out.Violations {
		fmt.Println(v)
	}
	if shrink {
		inv := out.Violations[0].Invariant
		if *flagShrinkInv != "" {
			inv = *flagShrinkInv
		}
		small, runs := Shrink(context.Background(), cfg, ops, inv, ShrinkBudget{Runs: *flagShrinkRuns})
		r := Repro{Seed: cfg.Seed, Invariant: inv, NoWatchdog: cfg.NoWatchdog, Ops: small}
		t.Logf("seed=%d %s: shrunk %d ops to %d in %d runs; replay with -replay FILE holding:\n%s", cfg.Seed, inv, len(ops), len(small), runs, r.JSON())
	}
	return true
}

// switches is the default disabled set adjusted by -enable and -disable.
func switches(t *testing.T) map[string]string {
	t.Helper()
	disabled := DefaultDisabled()
	user, faults := OpNames()
	known := map[string]bool{}
	for _, n := range append(user, faults...) {
		known[n] = true
	}
	for _, n := range split(*flagEnable) {
		if n == "all" {
			disabled = map[string]string{}
			continue
		}
		require.True(t, known[n], "-enable: unknown operation %q", n)
		delete(disabled, n)
	}
	for _, n := range split(*flagDisable) {
		require.True(t, known[n], "-disable: unknown operation %q", n)
		disabled[n] = "disabled by -disable"
	}
	return disabled
}

func split(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func parseSeeds(s string) (from, to int64, err error) {
	a, b, ok := strings.Cut(s, ":")
	if !ok {
		b = a
	}
	if from, err = strconv.ParseInt(a, 10, 64); err != nil {
		return 0, 0, fmt.Errorf("-seeds %q: %w", s, err)
	}
	if to, err = strconv.ParseInt(b, 10, 64); err != nil {
		return 0, 0, fmt.Errorf("-seeds %q: %w", s, err)
	}
	if to < from {
		return 0, 0, fmt.Errorf("-seeds %q: TO before FROM", s)
	}
	return from, to, nil
}

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(m.Run())
}
