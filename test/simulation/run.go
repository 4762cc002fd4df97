package simulation

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/internal/seeded"
	"github.com/virtkit/virtkit/store"
)

// Config is one simulation's budget and switches.
type Config struct {
	// Seed picks the operations, the cluster's random choices and the
	// faults' (must not be zero for the cluster; Generate and Run map
	// any seed to a non-zero cluster seed).
	Seed int64
	// Ops is how many steps Generate draws.
	Ops int
	// Nodes is how many hosts the cluster has (default 3).
	Nodes int
	// Disabled switches operations off by name, with the reason (printed
	// with every run so that nothing is hidden).
	Disabled map[string]string
	// Quiesce is how long the cluster runs after the last step with every
	// fault healed before the final checks (default 10 minutes).
	Quiesce time.Duration
	// NoWatchdog runs the hosts without their watchdogs armed, as the
	// cluster's default does (see HarnessOptions.NoWatchdog).
	NoWatchdog bool
	// Trace, when set, receives the run's per-instant trace (see
	// Recorder.Trace) when it ends, for diagnosis.
	Trace func(string)
	// Timeout bounds one run's wall time (default 2 minutes): a cluster
	// that never settles is a violation (InvStuck), not a hung test.
	Timeout time.Duration
	// MultiProcess draws from the multi-process mode's table (see
	// RunMultiProcess): the same rows, without those that need the
	// embedded cluster, and a controller restart.
	MultiProcess bool
}

func (c Config) withDefaults() Config {
	if c.Nodes <= 0 {
		c.Nodes = poolNodes
	}
	if c.Quiesce <= 0 {
		c.Quiesce = 10 * time.Minute
	}
	if c.Timeout <= 0 {
		c.Timeout = 2 * time.Minute
	}
	return c
}

// clusterSeed maps a simulation seed to a non-zero cluster seed.
func clusterSeed(seed int64) int64 {
	k := seeded.Key(seed, "cluster")
	s := int64(k[0]) | int64(k[1])<<8 | int64(k[2])<<16 | int64(k[3])<<24 | int64(k[4])<<32 | int64(k[5])<<40 | int64(k[6])<<48
	if s == 0 {
		s = 1
	}
	return s
}

// operationsByName is the operation table keyed by operation name.
func operationsByName() map[string]opSpec {
	table := map[string]opSpec{}
	for _, s := range operations() {
		table[s.name] = s
	}
	return table
}

// OpNames lists every operation of the table, user operations first.
func OpNames() (user, faults []string) {
	for _, s := range operations() {
		if s.fault {
			faults = append(faults, s.name)
		} else {
			user = append(user, s.name)
		}
	}
	return user, faults
}

// Generate draws cfg.Ops steps from cfg.Seed over the enabled operations.
// The same seed and switches give the same log.
func Generate(cfg Config) []Op {
	r := rand.New(rand.NewPCG(uint64(cfg.Seed), 0x5eed))
	var specs []opSpec
	total := 0
	for _, s := range tableOf(cfg) {
		if _, off := cfg.Disabled[s.name]; off {
			continue
		}
		specs = append(specs, s)
		total += s.weight
	}
	ops := make([]Op, 0, cfg.Ops)
	// A populated cluster first (as ordinary, shrinkable steps), so that
	// the drawn operations find guests to act on.
	for _, op := range []Op{
		{Name: "apply-vm", Target: "vm-0", N: 8}, {Name: "apply-vm", Target: "vm-1", N: 12},
		{Name: "apply-vm", Target: "vm-2", N: 6}, {Name: "apply-vm", Target: "vm-3", N: 3},
		{Name: "apply-vmi", Target: "vmi-0"}, {Name: "apply-rs", Target: "rs-0", N: 2},
	} {
		if _, off := cfg.Disabled[op.Name]; !off && len(ops) < cfg.Ops {
			op.Advance = Millis(r.IntN(3000))
			ops = append(ops, op)
		}
	}
	for len(ops) < cfg.Ops {
		if total == 0 {
			break
		}
		w := r.IntN(total)
		var spec opSpec
		for _, s := range specs {
			if w < s.weight {
				spec = s
				break
			}
			w -= s.weight
		}
		op := spec.gen(r)
		op.Name = spec.name
		// Mostly short steps (several ops within one boot or one
		// migration), sometimes long ones (timeouts, backoff, fencing).
		switch p := r.IntN(100); {
		case p < 50:
			op.Advance = Millis(r.IntN(2000))
		case p < 85:
			op.Advance = Millis(2000 + r.IntN(28000))
		default:
			op.Advance = Millis(30000 + r.IntN(150000))
		}
		ops = append(ops, op)
	}
	return ops
}

// Outcome is what a run did: each step's error (a user's request the
// cluster refused is fine) and the violations found.
type Outcome struct {
	Errors     []string
	Violations []Violation
	// Logs are the processes' log tails of a failed multi-process run.
	Logs string
	// Summary says how a multi-process run converged (what the final
	// checks read).
	Summary string
}

// Failed reports whether any invariant broke.
func (o Outcome) Failed() bool { return len(o.Violations) > 0 }

// Run runs ops on a fresh seeded cluster: each op, then its advance of
// virtual time, then the per-step invariants; then every fault is healed,
// the cluster runs cfg.Quiesce more and the final invariants are checked.
func Run(ctx context.Context, cfg Config, ops []Op) (Outcome, error) {
	cfg = cfg.withDefaults()
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	var out Outcome
	stuck := func(step int, err error) (Outcome, error) {
		if errors.Is(err, context.DeadlineExceeded) {
			out.Violations = append(out.Violations, Violation{Seed: cfg.Seed, Step: step, Invariant: InvStuck,
				Message: fmt.Sprintf("the cluster did not settle within %s of wall time: %v", cfg.Timeout, err)})
			return out, nil
		}
		return out, err
	}
	h, err := NewHarness(ctx, HarnessOptions{Seed: clusterSeed(cfg.Seed), Nodes: cfg.Nodes, NoWatchdog: cfg.NoWatchdog})
	if err != nil {
		return stuck(0, err)
	}
	defer func() { _ = h.Close() }()
	if cfg.Trace != nil {
		defer func() {
			tr, err := h.Recorder.Trace()
			if err != nil {
				tr = err.Error()
			}
			cfg.Trace(tr)
		}()
	}
	table := operationsByName()
	chk := newChecker(h)
	uctx := asUser(ctx)
	add := func(vs []Violation) {
		for _, v := range vs {
			v.Seed = cfg.Seed
			out.Violations = append(out.Violations, v)
		}
	}
	for i, op := range ops {
		spec, ok := table[op.Name]
		if !ok {
			return out, fmt.Errorf("step %d: unknown operation %q", i, op.Name)
		}
		err := spec.run(uctx, h, op)
		switch {
		case ctx.Err() != nil:
			return stuck(i, ctx.Err())
		case !expected(err):
			out.Errors = append(out.Errors, fmt.Sprintf("step %d %s: %v", i, op, err))
		}
		chk.afterOp(i, op, spec.fault)
		if err := h.Advance(ctx, op.Advance.Duration()); err != nil {
			return stuck(i, err)
		}
		vs, err := chk.step(uctx, i)
		if err != nil {
			return stuck(i, err)
		}
		add(vs)
	}
	// Quiescence: end the drains, heal every fault, uncordon every node,
	// let the cluster converge. The store's faults go first, so a write
	// a thawed or restarted agent makes is not delayed or refused or not
	// by whether it reads the fault settings before or after they are
	// cleared; and the cluster settles after each change, so what the
	// components do about one (an uncordon, a thaw) does not race the
	// next.
	h.life.cancelDrains()
	h.faults.setConflicts(0)
	h.faults.setLatency(0)
	if err := h.setMigrationBandwidth(0); err != nil {
		return out, err
	}
	settle := func() error { return h.Advance(ctx, 0) }
	for _, n := range h.Nodes() {
		if err := h.Cluster.Uncordon(uctx, n); err != nil {
			return out, err
		}
		if err := settle(); err != nil {
			return stuck(len(ops), err)
		}
		h.links[n].set(linkUp)
		if err := settle(); err != nil {
			return stuck(len(ops), err)
		}
		if !h.Cluster.AgentRunning(n) {
			if err := h.restartAgent(ctx, n); err != nil {
				return out, err
			}
			if err := settle(); err != nil {
				return stuck(len(ops), err)
			}
		}
	}
	if err := h.Advance(ctx, cfg.Quiesce); err != nil {
		return stuck(len(ops), err)
	}
	// A migration in post-copy has no timeout and cannot be aborted: it
	// ends when the last page has crossed, which on a congested link can
	// take longer than the quiescence (3 GiB at 4 MiB/s is 13 minutes).
	// Give it the time, bounded.
	for range postCopyGrace {
		running, err := postCopyRunning(uctx, h)
		if err != nil {
			return out, err
		}
		if !running {
			break
		}
		if err := h.Advance(ctx, time.Minute); err != nil {
			return stuck(len(ops), err)
		}
	}
	h.life.waitDrains(10 * time.Second)
	h.life.mu.Lock()
	out.Errors = append(out.Errors, h.life.errs...)
	h.life.mu.Unlock()
	vs, err := chk.final(uctx, len(ops))
	if err != nil {
		return stuck(len(ops), err)
	}
	add(vs)
	return out, nil
}

// postCopyGrace is how many more virtual minutes the final checks wait
// for post-copy migrations: a 12 GiB guest (the largest the generator
// makes) at 4 MiB/s, with room to spare.
const postCopyGrace = 60

// postCopyRunning reports whether a VMI's migration is in post-copy and
// has not ended.
func postCopyRunning(ctx context.Context, h *Harness) (bool, error) {
	var vmis virtkit.VirtualMachineInstanceList
	if err := h.Store.List(ctx, &vmis, store.ListOptions{}); err != nil {
		return false, err
	}
	for _, v := range vmis.Items {
		if ms := v.Status.MigrationState; ms != nil && ms.Mode == virtkit.MigrationPostCopy && !ms.Completed && !ms.Failed {
			return true, nil
		}
	}
	return false, nil
}
