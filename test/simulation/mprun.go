package simulation

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sort"
	"syscall"
	"time"
)

// mpLeftOut are the operations of the table the multi-process mode leaves
// out, with why: they need the embedded cluster's hooks, which separate
// processes do not expose. (The guest faults reach the simulated hosts
// inside the node processes through their fault endpoints: mpfaults.go.)
func mpLeftOut() map[string]string {
	return map[string]string{
		"store-conflicts": "needs the in-process fault store between the components and the store (injected write conflicts): " +
			"a TCP proxy cannot make etcd refuse a transaction",
		"slow-migration-network": "needs the simulated hosts' shared network, which separate node processes do not share",
	}
}

// onProcesses adapts a fault of the multi-process mode.
func onProcesses(run func(ctx context.Context, m *multiProcess, op Op) error) func(context.Context, system, Op) error {
	return func(ctx context.Context, s system, op Op) error {
		m, ok := s.(*multiProcess)
		if !ok {
			return fmt.Errorf("operation %s: only in the multi-process mode", op.Name)
		}
		return run(ctx, m, op)
	}
}

// nodeProc runs f on the op's node process (none: nothing to do).
func nodeProc(f func(p *proc) error) func(context.Context, system, Op) error {
	return onProcesses(func(_ context.Context, m *multiProcess, op Op) error {
		n := m.nodes[op.Target]
		if n == nil {
			return nil
		}
		return f(n.proc)
	})
}

// mpOperations is the operation table of the multi-process mode: the same
// rows in the same order (the generator draws the same way), the faults
// that act on the embedded cluster turned into signals to the processes,
// the rows of mpLeftOut dropped, and a controller restart added.
func mpOperations() []opSpec {
	faults := map[string]func(context.Context, system, Op) error{
		// SIGKILL: the agent dies at once; its host's guests outlive it
		// (--sim-state), as real guests outlive virt-handler.
		"crash-agent": onProcesses(func(_ context.Context, m *multiProcess, op Op) error {
			n := m.nodes[op.Target]
			if n == nil {
				return nil
			}
			err := n.proc.kill9(30 * time.Second)
			m.forgetHostFaults(op.Target)
			return err
		}),
		"restart-agent": nodeProc(func(p *proc) error {
			return p.start()
		}),
		"freeze": nodeProc(func(p *proc) error { return p.signal(syscall.SIGSTOP) }),
		// The node's TCP link to etcd stops carrying bytes (its proxy
		// holds them, and new connections wait): requests time out, as
		// across a real partition; the process runs on.
		"partition": onProcesses(func(_ context.Context, m *multiProcess, op Op) error {
			m.partition(op.Target)
			return nil
		}),
		// Real latency on every process's TCP link to etcd (the proxies
		// hold each chunk that long before forwarding it, each direction):
		// the drawn virtual latency scaled like the pauses
		// (-mp-time-scale, -mp-max-pause) and capped at mpMaxLatency. It
		// slows reads, watches and lease renewals too, where the embedded
		// cluster's fault store delays the components' writes on virtual
		// time; the simulation's own reads and writes go straight to etcd,
		// as a user's do there.
		"store-latency": onProcesses(func(_ context.Context, m *multiProcess, op Op) error {
			m.setLatency(m.opts.pause(Millis(op.N)))
			return nil
		}),
		// Heal ends a partition and a freeze of the node, as in the
		// embedded cluster.
		"heal": onProcesses(func(_ context.Context, m *multiProcess, op Op) error {
			n := m.nodes[op.Target]
			if n == nil {
				return nil
			}
			n.proxy.Heal()
			return n.proc.signal(syscall.SIGCONT)
		}),
	}
	maps.Copy(faults, mpGuestFaults())
	left := mpLeftOut()
	var out []opSpec
	for _, s := range operations() {
		if _, drop := left[s.name]; drop {
			continue
		}
		if run, ok := faults[s.name]; ok {
			s.run = run
		}
		out = append(out, s)
	}
	return append(out, opSpec{name: "restart-controller", fault: true, weight: 1,
		gen: func(*rand.Rand) Op { return Op{} },
		run: onProcesses(func(_ context.Context, m *multiProcess, _ Op) error {
			if err := m.ctrl.kill9(30 * time.Second); err != nil {
				return err
			}
			return m.ctrl.start()
		})})
}

// tableOf is the operation table of cfg's mode.
func tableOf(cfg Config) []opSpec {
	if cfg.MultiProcess {
		return mpOperations()
	}
	return operations()
}

// RunMultiProcess runs ops against a control plane of separate processes
// (see the package documentation): each op, then a real pause standing for
// its advance of time, then the invariants on the recorded history; then
// every fault is healed and the final invariants are checked until they
// hold or o.Converge has passed. Outcome.Logs has the processes' log
// tails when the run failed or ended with an error.
func RunMultiProcess(ctx context.Context, cfg Config, ops []Op, o MultiProcessOptions) (out Outcome, err error) {
	cfg = cfg.withDefaults()
	cfg.MultiProcess = true
	o = o.withDefaults()
	o.Converge = max(o.Converge, acpiConverge(ops))
	// A hang guard: every step may take a call's bound, then convergence.
	ctx, cancel := context.WithTimeout(ctx, time.Duration(len(ops)+4)*mpCallTimeout+o.Converge)
	defer cancel()
	m, err := startMultiProcess(ctx, o, cfg.Nodes)
	if err != nil {
		if m != nil {
			out.Logs = m.logTails(40)
		}
		return out, err
	}
	defer m.close()
	table := map[string]opSpec{}
	for _, s := range mpOperations() {
		table[s.name] = s
	}
	chk := newChecker(m)
	// Separate processes cannot be read at one instant: the hosts are
	// checked against the store at quiescence only.
	chk.perStepGroundTruth = false
	add := func(vs []Violation) {
		for _, v := range vs {
			v.Seed = cfg.Seed
			out.Violations = append(out.Violations, v)
		}
	}
	defer func() {
		if out.Failed() || err != nil {
			out.Logs = m.logTails(60)
		}
	}()
	for i, op := range ops {
		spec, ok := table[op.Name]
		if !ok {
			return out, fmt.Errorf("step %d: operation %q: not in the multi-process table", i, op.Name)
		}
		// Not a per-operation deadline: a drain goes on in the background.
		err := spec.run(asUser(ctx), m, op)
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
		if errors.Is(err, errInProcessOnly) {
			return out, fmt.Errorf("step %d: %w (name it in mpLeftOut or give it a process fault)", i, err)
		}
		if !expected(err) {
			out.Errors = append(out.Errors, fmt.Sprintf("step %d %s: %v", i, op, err))
		}
		chk.afterOp(i, op, spec.fault)
		if err := sleep(ctx, o.pause(op.Advance)); err != nil {
			return out, err
		}
		vs, err := chk.step(ctx, i)
		if err != nil {
			return out, err
		}
		add(vs)
	}
	if err := m.heal(ctx); err != nil {
		return out, err
	}
	m.life.mu.Lock()
	out.Errors = append(out.Errors, m.life.errs...)
	m.life.mu.Unlock()
	// Convergence: the final checks until they pass or the bound passes.
	// What the history shows (step) counts at once; what the store and
	// the hosts show (settled) only at its last try.
	healed := time.Now()
	deadline := healed.Add(o.Converge)
	for {
		vs, err := chk.step(ctx, len(ops))
		if err != nil {
			return out, err
		}
		add(vs)
		saved := maps.Clone(chk.reported)
		var got []Violation
		cctx, cancel := context.WithTimeout(ctx, mpCallTimeout)
		err = chk.settled(cctx, len(ops), &got)
		cancel()
		if err == nil && len(got) == 0 {
			out.Summary = m.summary(ctx, time.Since(healed))
			break
		}
		if time.Now().After(deadline) {
			if err != nil {
				got = append(got, Violation{Step: len(ops), Invariant: InvStuck,
					Message: fmt.Sprintf("the hosts or the store could not be read %s after the faults healed: %v", o.Converge, err)})
			}
			sort.SliceStable(got, func(i, j int) bool { return got[i].Invariant+got[i].Message < got[j].Invariant+got[j].Message })
			add(got)
			break
		}
		chk.reported = saved
		if err := sleep(ctx, time.Second); err != nil {
			return out, err
		}
	}
	return out, nil
}

// acpiConverge is the convergence bound a log with a guest that ignores
// ACPI or takes its time to power off needs (0 for others): on real time,
// a stop of such a guest takes up to the longest grace period apply-vm
// draws before the guest is destroyed, and its VM then starts again.
func acpiConverge(ops []Op) time.Duration {
	for _, op := range ops {
		if op.Name == "acpi-ignore" || op.Name == "acpi-delay" {
			return time.Duration(slices.Max(gracePeriods))*time.Second + stopPollSlack + 45*time.Second
		}
	}
	return 0
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
