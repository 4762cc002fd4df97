package simulation

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/internal/etcdproc"
	"github.com/virtkit/virtkit/internal/testenv"
)

var (
	flagMultiProcess = flag.Bool("multiprocess", false,
		"TestMultiProcess runs -seeds (or -seed) with -ops instead of its CI budget; TestSimulation then skips")
	flagMPConverge = flag.Duration("mp-converge", 90*time.Second, "multi-process mode: how long the cluster has to converge once the faults heal")
	flagMPScale    = flag.Int("mp-time-scale", 10, "multi-process mode: an operation's advance of time divided by this is the real pause after it")
	flagMPMaxPause = flag.Duration("mp-max-pause", 2*time.Second, "multi-process mode: the longest real pause after an operation")
	flagMPShrink   = flag.Int("mp-shrink-runs", 12, "multi-process mode with -multiprocess: most runs (each on fresh processes) one shrink of a failing seed may spend; 0 with -shrink=false does not shrink")
	flagMPShrinkW  = flag.Duration("mp-shrink-wall", 20*time.Minute, "multi-process mode: most wall time one shrink may spend")
)

// binaryEnv names a prebuilt virtkit command for the multi-process mode.
const binaryEnv = "VIRTKIT_BIN"

// mpBudget is the multi-process CI budget: one seed, ten operations.
const (
	mpBudgetSeeds = 1
	mpBudgetOps   = 10
)

// TestMultiProcess runs the seeded operations against separate processes:
// a real etcd server, `virtkit controller` and three `virtkit node` agents
// on the simulated hypervisor. go test ./test/simulation -run
// TestMultiProcess -args -multiprocess -seeds FROM:TO -ops N.
func TestMultiProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process simulation: not in -short")
	}
	etcdBin, bin := mpBinaries(t)
	disabled := mpSwitches(t)
	for name, why := range disabled {
		t.Logf("disabled: %s (%s)", name, why)
	}
	left := mpLeftOut()
	for _, name := range slices.Sorted(maps.Keys(left)) {
		t.Logf("not in this mode: %s (%s)", name, left[name])
	}
	from, to, ops := int64(1), int64(mpBudgetSeeds), mpBudgetOps
	if *flagMultiProcess {
		ops = *flagOps
		switch {
		case *flagSeed != 0:
			from, to = *flagSeed, *flagSeed
		case *flagSeeds != "":
			var err error
			from, to, err = parseSeeds(*flagSeeds)
			require.NoError(t, err)
		}
	}
	base := t.TempDir()
	runs := 0
	// runner runs an op log on fresh processes in a directory of its own.
	runner := func(cfg Config) Runner {
		return func(ctx context.Context, opLog []Op) (Outcome, error) {
			runs++
			dir := filepath.Join(base, fmt.Sprintf("seed-%d-run-%d", cfg.Seed, runs))
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return Outcome{}, err
			}
			return RunMultiProcess(ctx, cfg, opLog,
				MultiProcessOptions{Binary: bin, EtcdBinary: etcdBin, Dir: dir, Converge: *flagMPConverge,
					TimeScale: *flagMPScale, MaxPause: *flagMPMaxPause})
		}
	}
	if *flagReplay != "" {
		r, err := ReadRepro(*flagReplay)
		require.NoError(t, err)
		cfg := Config{Seed: r.Seed, Disabled: disabled, MultiProcess: true}
		out, err := runner(cfg)(context.Background(), r.Ops)
		if err != nil || out.Failed() {
			t.Logf("seed=%d processes' logs:\n%s", r.Seed, out.Logs)
		}
		require.NoError(t, err)
		report(t, cfg, r.Ops, out, false)
		return
	}
	start := time.Now()
	passed, failed, steps := 0, 0, 0
	for seed := from; seed <= to; seed++ {
		cfg := Config{Seed: seed, Ops: ops, Disabled: disabled, MultiProcess: true}
		opLog := Generate(cfg)
		steps += len(opLog)
		began := time.Now()
		out, err := runner(cfg)(context.Background(), opLog)
		if err != nil {
			t.Logf("seed=%d processes' logs:\n%s", seed, out.Logs)
		}
		require.NoError(t, err, "seed %d", seed)
		t.Logf("seed=%d: %d ops in %s; %s", seed, len(opLog), time.Since(began).Round(time.Millisecond), out.Summary)
		if report(t, cfg, opLog, out, false) {
			t.Logf("seed=%d processes' logs:\n%s", seed, out.Logs)
			failed++
			if *flagMultiProcess && *flagShrink && *flagMPShrink > 0 {
				shrinkMP(t, cfg, opLog, out, runner(cfg))
			}
		} else {
			passed++
		}
	}
	el := time.Since(start)
	t.Logf("multi-process: %d seeds, %d ops in %s", passed+failed, steps, el.Round(time.Millisecond))
	fmt.Printf("multi-process: %d passed, %d failed\n", passed, failed)
	if failed > 0 {
		t.Fail()
	}
}

// virtkitBinary is $VIRTKIT_BIN or the virtkit command built for this test.
func virtkitBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv(binaryEnv); p != "" {
		_, err := os.Stat(p)
		require.NoError(t, err, "$%s", binaryEnv)
		return p
	}
	bin := filepath.Join(t.TempDir(), "virtkit")
	build := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "github.com/virtkit/virtkit/cmd/virtkit")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "building virtkit: %s", out)
	return bin
}

// mpSwitches is the disabled set of the multi-process mode: -enable and
// -disable name rows of its table.
func mpSwitches(t *testing.T) map[string]string {
	t.Helper()
	disabled := DefaultDisabled()
	known := map[string]bool{}
	for _, s := range mpOperations() {
		known[s.name] = true
	}
	for _, n := range split(*flagEnable) {
		if n == "all" {
			disabled = map[string]string{}
			continue
		}
		require.True(t, known[n], "-enable: %q is not an operation of the multi-process mode", n)
		delete(disabled, n)
	}
	for _, n := range split(*flagDisable) {
		require.True(t, known[n], "-disable: %q is not an operation of the multi-process mode", n)
		disabled[n] = "disabled by -disable"
	}
	return disabled
}

// TestMultiProcessTable checks the multi-process table: the embedded
// cluster's rows in the same order, those left out gone, every fault
// acting on the processes.
func TestMultiProcessTable(t *testing.T) {
	left := mpLeftOut()
	var want []string
	for _, s := range operations() {
		if _, drop := left[s.name]; !drop {
			want = append(want, s.name)
		}
	}
	var got []string
	for _, s := range mpOperations() {
		got = append(got, s.name)
	}
	require.Equal(t, append(want, "restart-controller"), got)
	for name := range left {
		require.NotContains(t, got, name)
	}
	ops := Generate(Config{Seed: 7, Ops: 400, MultiProcess: true})
	for _, op := range ops {
		_, drop := left[op.Name]
		require.False(t, drop, "%s drawn", op)
	}
	require.True(t, strings.Contains(fmt.Sprint(ops), "restart-controller"), "400 draws include a controller restart")
	// The guest faults run against the node processes' fault endpoints
	// (not the embedded cluster's hooks), and the generator draws them.
	guestFaults := []string{"crash-guest", "guest-agent-gone", "cut-migration", "acpi-ignore", "acpi-delay"}
	table := map[string]opSpec{}
	for _, s := range mpOperations() {
		table[s.name] = s
	}
	for _, name := range guestFaults {
		require.Contains(t, got, name)
		require.NotContains(t, left, name)
		// No node process: nothing to act on, and no errInProcessOnly.
		require.NoError(t, table[name].run(t.Context(), &multiProcess{}, Op{Name: name, Target: "vm-0", N: 3}), name)
		require.Contains(t, fmt.Sprint(ops), name+" ", "400 draws include %s", name)
	}
	// A row of the embedded cluster's hooks run against processes is an
	// error that ends the run, not a user's refused request.
	err := inProcess(func(context.Context, *Harness, Op) error { return nil })(t.Context(), &multiProcess{}, Op{Name: "x"})
	require.ErrorIs(t, err, errInProcessOnly)
	require.False(t, expected(err))
	// The embedded cluster never draws the processes' own fault.
	for _, op := range Generate(Config{Seed: 7, Ops: 200}) {
		require.NotEqual(t, "restart-controller", op.Name)
	}
}

// shrinkMP shrinks a failing multi-process seed (each candidate on fresh
// processes) and prints its reproduction for -multiprocess -replay.
func shrinkMP(t *testing.T, cfg Config, opLog []Op, out Outcome, run Runner) {
	t.Helper()
	inv := out.Violations[0].Invariant
	if *flagShrinkInv != "" {
		inv = *flagShrinkInv
	}
	small, n := ShrinkWith(context.Background(), run, opLog, inv, ShrinkBudget{Runs: *flagMPShrink, Wall: *flagMPShrinkW})
	r := Repro{Seed: cfg.Seed, Invariant: inv, Ops: small}
	t.Logf("seed=%d %s: shrunk %d ops to %d in %d runs on fresh processes (real time: a shorter log that failed once);"+
		" replay with -run TestMultiProcess -args -multiprocess -replay FILE holding:\n%s", cfg.Seed, inv, len(opLog), len(small), n, r.JSON())
}

// runWrittenLog runs a written op log (seed 1, real time) against the
// processes and requires it to end with no violation and no error.
func runWrittenLog(t *testing.T, etcdBin, bin string, ops []Op) Outcome {
	t.Helper()
	out, err := RunMultiProcess(t.Context(), Config{Seed: 1}, ops, MultiProcessOptions{Binary: bin, EtcdBinary: etcdBin,
		Dir: t.TempDir(), TimeScale: 1, MaxPause: 20 * time.Second})
	if err != nil || out.Failed() || len(out.Errors) > 0 {
		t.Logf("processes' logs:\n%s", out.Logs)
	}
	require.NoError(t, err)
	require.Empty(t, out.Violations)
	require.Empty(t, out.Errors)
	t.Log(out.Summary)
	return out
}

// TestMultiProcessGuestFaults runs the guest faults against node processes
// on a written log: a crashed guest its VM restarts, a migration cut, a
// guest agent gone, and a stop of a guest told to ignore ACPI, which its
// node destroys at the end of its 5 s grace period (the acpi-stop
// invariant: Failed, not Succeeded as a guest that answers would end).
func TestMultiProcessGuestFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process simulation: not in -short")
	}
	etcdBin, bin := mpBinaries(t)
	const always5s = 4 // apply-vm's n: RunStrategy Always with a 5 s grace period
	ops := []Op{
		{Name: "apply-vm", Target: "vm-0", N: always5s, Advance: 6000},
		{Name: "apply-vm", Target: "vm-1", N: always5s, Advance: 6000},
		{Name: "crash-guest", Target: "vm-1", Advance: 8000},
		{Name: "migrate", Target: "vm-1"},
		{Name: "cut-migration", Target: "vm-1", Advance: 3000},
		{Name: "guest-agent-gone", Target: "vm-0", Advance: 1000},
		{Name: "acpi-ignore", Target: "vm-0", Advance: 1000},
		{Name: "stop", Target: "vm-0", Advance: 20000},
	}
	out := runWrittenLog(t, etcdBin, bin, ops)
	m := regexp.MustCompile(`(\d+) guest faults injected, (\d+) stops followed \((\d+) of guests ignoring ACPI\)`).FindStringSubmatch(out.Summary)
	require.NotNil(t, m, out.Summary)
	injected, _ := strconv.Atoi(m[1])
	require.GreaterOrEqual(t, injected, 4, "crash-guest, cut-migration, guest-agent-gone and acpi-ignore each reached a host")
	require.Equal(t, []string{"1", "1"}, m[2:], "the stop of vm-0 was followed, its guest ignoring ACPI")
}

// mpBinaries finds the etcd server (or reports it unavailable) and builds
// the virtkit command for a multi-process run.
func mpBinaries(t *testing.T) (etcdBin, bin string) {
	t.Helper()
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	etcdBin, err = etcdproc.FindBinary(root)
	if err != nil {
		testenv.Unavailable(t, "multi-process simulation needs an etcd server: "+err.Error())
	}
	return etcdBin, virtkitBinary(t)
}
