package realqemu

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/migration"
	"github.com/virtkit/virtkit/migration/bench"
)

// Host is what the runner needs of the source host.
type Host interface {
	hypervisor.Hypervisor
	hypervisor.Migrator
	hypervisor.AgentCommander
}

// Capabilities is the Row.Capabilities of real runs.
const Capabilities = "libvirt-real"

// ErrTimeCap is the cause of a run that the benchmark stopped at
// Options.MaxTime (a policy that would wait longer on a hopeless guest).
var ErrTimeCap = errors.New("the benchmark's time cap")

// Options configure [Run]. Source, Target, TargetURI, Kernel and Initrd are
// required.
type Options struct {
	// Source boots the guest and migrates it; Target receives it (used to
	// clean up).
	Source Host
	Target hypervisor.Hypervisor
	// TargetURI is the target as the source's daemon reaches it
	// (MigrationParams.DestinationURI); MigrateURI the data connection
	// ("tcp://127.0.0.1"; empty lets libvirt choose).
	TargetURI  string
	MigrateURI string
	// Guest is the real guest the profiles run on: GuestTiny (the
	// default) or GuestDebian.
	Guest string
	// Kernel and Initrd are the tiny guest (hack/realstack/build-guest.sh),
	// readable by the QEMU user; required for GuestTiny.
	Kernel, Initrd string
	// CloudImage is the Debian guest (hack/realstack/build-cloud-image.sh),
	// required for GuestDebian; every run boots a raw copy of its disk
	// written to ScratchDir (a directory QEMU's user can reach; removed
	// after the run).
	CloudImage CloudImage
	ScratchDir string
	// MaxTime bounds one migration; the engine aborts it at the cap. 0 = 90 s.
	MaxTime time.Duration
	// BootTimeout bounds booting the guest until its agent answers; 0 = 90 s.
	BootTimeout time.Duration
	// ParallelConnections > 1 migrates with multifd and TLS encrypts the
	// stream, the same for every policy.
	ParallelConnections int
	TLS                 bool
	// LinkBandwidth is the capacity of the link the migrations cross in
	// bytes/s (MeasureLink on the migrate URI's address), given to every
	// engine as migration.Request.LinkBandwidth; 0 = unknown.
	LinkBandwidth float64
	// SamplePasses, when positive, reads the job's stats at this period
	// beside the engine's polls and records where each iteration began
	// (bench.Row.Passes): the data behind the simulator's validation.
	// Every policy's job is sampled alike.
	SamplePasses time.Duration
	// Logger receives the engine's decisions; nil = discard.
	Logger *slog.Logger
	// Progress, when set, gets one line per run as it ends.
	Progress io.Writer
}

func (o Options) withDefaults() (Options, error) {
	switch {
	case o.Source == nil:
		return o, errors.New("realqemu: Options.Source is required")
	case o.Target == nil:
		return o, errors.New("realqemu: Options.Target is required")
	case o.TargetURI == "":
		return o, errors.New("realqemu: Options.TargetURI is required")
	}
	switch o.Guest {
	case "", GuestTiny:
		o.Guest = GuestTiny
		if o.Kernel == "" || o.Initrd == "" {
			return o, errors.New("realqemu: Options.Kernel and Options.Initrd are required")
		}
	case GuestDebian:
		if o.CloudImage.Disk == "" || o.CloudImage.Kernel == "" || o.CloudImage.Initrd == "" || o.ScratchDir == "" {
			return o, errors.New("realqemu: Options.CloudImage and Options.ScratchDir are required for the Debian guest")
		}
	default:
		return o, fmt.Errorf("realqemu: Options.Guest: %q is not %s or %s", o.Guest, GuestTiny, GuestDebian)
	}
	if o.MaxTime <= 0 {
		o.MaxTime = 90 * time.Second
	}
	if o.BootTimeout <= 0 {
		o.BootTimeout = 90 * time.Second
		if o.Guest == GuestDebian {
			// systemd under TCG on a shared machine: 40 s to minutes.
			o.BootTimeout = 6 * time.Minute
		}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return o, nil
}

// Realisable checks every profile against the tiny real guest.
func Realisable(profiles []bench.Profile) error { return RealisableOn(GuestTiny, profiles) }

// realiseOn maps profile i onto the guest kind.
func realiseOn(kind string, i int, p bench.Profile) (Guest, field.ErrorList) {
	if kind == GuestDebian {
		return RealiseDebian(i, p)
	}
	return Realise(i, p)
}

// RealisableOn checks every profile against the real guest kind
// (GuestTiny or GuestDebian).
func RealisableOn(kind string, profiles []bench.Profile) error {
	if kind != GuestTiny && kind != GuestDebian {
		return fmt.Errorf("guest %q is not %s or %s", kind, GuestTiny, GuestDebian)
	}
	if errs := bench.ValidateProfiles(profiles); len(errs) > 0 {
		return fmt.Errorf("%v: %w", errs.ToAggregate(), bench.ErrInvalidProfile)
	}
	var all []error
	for i, p := range profiles {
		if _, errs := realiseOn(kind, i, p); len(errs) > 0 {
			all = append(all, errs.ToAggregate())
		}
	}
	if len(all) > 0 {
		return fmt.Errorf("%w: %w", errors.Join(all...), bench.ErrInvalidProfile)
	}
	return nil
}

// Run migrates the real guest once per (profile, policy), in profile-major
// order, and returns the rows in the simulated benchmark's format.
func Run(ctx context.Context, profiles []bench.Profile, policies []string, opts Options) ([]bench.Row, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := RealisableOn(opts.Guest, profiles); err != nil {
		return nil, err
	}
	for _, name := range policies {
		if _, err := bench.NewPolicy(name); err != nil {
			return nil, err
		}
	}
	var rows []bench.Row
	for i, p := range profiles {
		g, _ := realiseOn(opts.Guest, i, p)
		for _, name := range policies {
			row, err := runOne(ctx, p, g, name, opts)
			if err != nil {
				return rows, fmt.Errorf("profile %s, policy %s: %w", p.Name, name, err)
			}
			rows = append(rows, row)
		}
	}
	return rows, nil
}

// runOne boots the guest, lets the engine with the policy migrate it, and
// removes the guest from both hosts.
func runOne(ctx context.Context, p bench.Profile, g Guest, policyName string, opts Options) (bench.Row, error) {
	policy, err := bench.NewPolicy(policyName)
	if err != nil {
		return bench.Row{}, err
	}
	name := domainName(p.Name, policyName)
	remove := func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		for _, h := range []hypervisor.Hypervisor{opts.Source, opts.Target} {
			_ = h.Destroy(cctx, name)
			_ = h.Undefine(cctx, name)
		}
	}
	remove()
	defer remove()

	var disk string
	if g.Kind == GuestDebian {
		if disk, err = prepareDisk(ctx, opts.CloudImage, opts.ScratchDir, name); err != nil {
			return bench.Row{}, err
		}
		defer func() { _ = os.Remove(disk) }()
	}
	if err := boot(ctx, opts, g, name, disk); err != nil {
		return bench.Row{}, err
	}
	_, isVirtkit := policy.(*migration.VirtkitPolicy)
	// As in the simulated benchmark: only virtkit measures before the
	// start (the baselines do not), and the node agent's KubeVirt limits
	// (150 s per GB, 150 s without progress) bound virtkit.
	eopts := migration.Options{Policy: policy, SkipMeasurement: !isVirtkit,
		Logger: opts.Logger.With("profile", p.Name, "policy", policyName)}
	req := migration.Request{
		Domain: name,
		Memory: p.MemoryBytes(),
		Params: hypervisor.MigrationParams{
			DestinationURI: opts.TargetURI, MigrateURI: opts.MigrateURI, Bandwidth: g.Bandwidth,
			ParallelConnections: opts.ParallelConnections, TLS: opts.TLS, Persist: true, UndefineSource: true,
		},
		AllowPostCopy:     p.AllowPostCopy,
		AllowAutoConverge: p.AllowAutoConverge,
		DowntimeLimit:     p.Downtime(),
		LinkBandwidth:     opts.LinkBandwidth,
	}
	var acceptable time.Duration
	if isVirtkit {
		acceptable = 150 * time.Second * time.Duration((p.MemoryBytes()+1e9-1)/1e9)
		req.CompletionTimeout = acceptable
	}
	calls := &callLog{}
	if m, ok := opts.Source.(hypervisor.DirtyRateMeasurer); ok {
		eopts.Measurer = &recordingMeasurer{m: m, log: calls}
	}
	rm := &recordingMigrator{m: opts.Source, log: calls}
	var (
		passes bench.PassRecorder
		wg     sync.WaitGroup
	)
	sctx, stopSampling := context.WithCancel(ctx)
	defer stopSampling()
	if opts.SamplePasses > 0 {
		rm.started = make(chan hypervisor.MigrationJob, 1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			samplePasses(sctx, rm.started, opts.SamplePasses, &passes)
		}()
	}
	eng, err := migration.NewEngine(rm, req, eopts)
	if err != nil {
		return bench.Row{}, err
	}
	row := bench.Row{
		Profile: p.Name, Policy: policy.Name(), Capabilities: Capabilities,
		MemoryBytes: p.MemoryBytes(), DowntimeLimit: p.Downtime(),
		LowerBoundSeconds: round(float64(p.MemoryBytes())/float64(g.Bandwidth), 3),
	}
	uctx, ucancel := context.WithTimeout(ctx, 15*time.Second)
	uptimeBefore, hostBefore, uerr := guestUptime(uctx, opts.Source, name)
	ucancel()
	var tl timeline
	calls.began = time.Now()
	res, err := drive(ctx, eng, &row, acceptable, opts.MaxTime, &tl)
	stopSampling()
	wg.Wait()
	if err != nil {
		return bench.Row{}, err
	}
	if uerr == nil {
		uerr = checkGuestClock(ctx, opts, name, res.Outcome == migration.OutcomeSucceeded, uptimeBefore, hostBefore, &row)
	}
	row.Passes = passes.Passes()
	snap := eng.Snapshot()
	row.Outcome = string(res.Outcome)
	row.Reason, row.Rule = res.Reason, res.Rule
	row.Mode = string(res.Mode)
	row.BytesSent = res.BytesSent
	row.Iterations = res.Job.Stats.MemoryIteration.Or(snap.Iteration.Or(0))
	row.DecisionSeconds = round(res.DecisionAt.Seconds(), 3)
	row.MaxThrottlePercent = res.MaxThrottle
	if n, ok := res.Job.Stats.PostcopyRequests.Get(); ok && res.Mode == hypervisor.ModePostCopy {
		row.PostCopyFaults = n
	}
	row.Decisions = res.Decisions
	if d, ok := res.Downtime.Get(); ok && res.Outcome == migration.OutcomeSucceeded {
		ms := round(float64(d)/float64(time.Millisecond), 1)
		row.DowntimeMs = &ms
	}
	row.ApplyDowntimeRule()
	if opts.Progress != nil {
		down := "-"
		if row.DowntimeMs != nil {
			down = fmt.Sprintf("%.0f ms", *row.DowntimeMs)
		}
		before := "not measured"
		if d, ok := snap.DirtyRateBefore.Get(); ok {
			before = fmt.Sprintf("%.1f MiB/s", d/mib)
		}
		fmt.Fprintf(opts.Progress, "%s/%s: %s %s in %.1f s, downtime %s, sent %.1f MiB, dirty rate before start %s, max throttle %d%%, %d iterations\n",
			p.Name, row.Policy, row.Outcome, row.Mode, row.TotalSeconds, down, float64(row.BytesSent)/mib, before,
			row.MaxThrottlePercent, res.Job.Stats.MemoryIteration.Or(snap.Iteration.Or(0)))
		if res.Mode == hypervisor.ModePostCopy {
			fmt.Fprintf(opts.Progress, "  post-copy: %.1f s, %d page faults served from the source\n", row.PostCopySeconds, row.PostCopyFaults)
		}
		if row.FinishSeconds > 0 {
			fmt.Fprintf(opts.Progress, "  libvirt's finish and the source's clean-up after the job: %.1f s (not in the total)\n", row.FinishSeconds)
		}
		if len(tl) > 0 {
			fmt.Fprintf(opts.Progress, "  timeline (s from the engine's start): %s\n", strings.Join(tl, ", "))
		}
		fmt.Fprintf(opts.Progress, "  migration calls (s from the engine's start): %s\n", calls)
		switch {
		case uerr != nil:
			fmt.Fprintf(opts.Progress, "  guest clock not checked: %v\n", uerr)
		case row.GuestRebooted:
			fmt.Fprintf(opts.Progress, "  WARNING: the guest rebooted during the run (its uptime went back)\n")
		case row.GuestClockLostSeconds >= 1:
			fmt.Fprintf(opts.Progress, "  WARNING: the guest's clock stood still for %.1f s of the run\n", row.GuestClockLostSeconds)
		}
	}
	return row, nil
}

// checkGuestClock reads the guest's uptime where it runs after the job
// (the target when it moved and the target has an agent, else the source)
// and records in row what its clock says of the run.
func checkGuestClock(ctx context.Context, opts Options, name string, moved bool, uptimeBefore time.Duration, hostBefore time.Time, row *bench.Row) error {
	var a hypervisor.AgentCommander = opts.Source
	if moved {
		t, ok := opts.Target.(hypervisor.AgentCommander)
		if !ok {
			return errors.New("the target has no guest agent access")
		}
		a = t
	}
	uctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	after, hostAfter, err := guestUptime(uctx, a, name)
	if err != nil {
		return err
	}
	c := checkClock(uptimeBefore, after, hostAfter.Sub(hostBefore))
	row.GuestRebooted = c.rebooted
	row.GuestClockLostSeconds = round(c.lost.Seconds(), 1)
	return nil
}

// drive runs the engine on the wall clock, one Step per NextPoll, as
// the node agent does: it aborts at the completion timeout (acceptable, 0 =
// none), at the progress timeout of 150 s, and at the benchmark's cap
// maxTime; it accounts the guest's throttle (one vCPU) and post-copy time
// into row and sets the row's times.
// timeline notes when the job's iteration and the guest's throttle changed.
type timeline []string

func (tl *timeline) note(at time.Duration, what string) {
	*tl = append(*tl, fmt.Sprintf("%.1f %s", at.Seconds(), what))
}

func drive(ctx context.Context, eng *migration.Engine, row *bench.Row, acceptable, maxTime time.Duration, tl *timeline) (migration.Result, error) {
	const progressTimeout = 150 * time.Second
	began := time.Now()
	if err := eng.Start(ctx); err != nil && !errors.Is(err, migration.ErrRefused) {
		return migration.Result{}, err
	}
	// As the node agent's Engine.Run: the next Step after NextPoll, which
	// for virtkit is shorter than its period while a pass is about to end.
	tick := time.NewTimer(eng.NextPoll())
	defer tick.Stop()
	last := began
	lastProgress := began
	var lastRemaining uint64
	haveRemaining, stopped := false, false
	var lastIter uint64
	lastThrottle := 0
	for !eng.Result().Refused {
		select {
		case <-ctx.Done():
			if !stopped {
				_ = eng.Abort(context.WithoutCancel(ctx), "the benchmark was interrupted")
			}
			return migration.Result{}, ctx.Err()
		case <-tick.C:
		}
		done, err := eng.Step(ctx)
		tick.Reset(eng.NextPoll())
		if err != nil && ctx.Err() != nil {
			return migration.Result{}, ctx.Err()
		}
		now := time.Now()
		s := eng.Snapshot()
		if it, ok := s.Iteration.Get(); ok && it != lastIter {
			lastIter = it
			tl.note(now.Sub(began), fmt.Sprintf("iteration %d", it))
		}
		if s.Throttle != lastThrottle {
			lastThrottle = s.Throttle
			tl.note(now.Sub(began), fmt.Sprintf("throttle %d%%", s.Throttle))
		}
		dt := now.Sub(last).Seconds()
		last = now
		row.ThrottleCPUSeconds += float64(s.Throttle) / 100 * dt
		if s.Phase == migration.PhasePostCopy && !done {
			row.PostCopySeconds += dt
		}
		if done {
			break
		}
		if r, ok := s.Remaining.Get(); ok {
			if !haveRemaining || r < lastRemaining {
				lastProgress = now
			}
			lastRemaining, haveRemaining = r, true
		}
		switch {
		case stopped || s.Phase == migration.PhasePostCopy || s.Phase == migration.PhasePlanning:
		case now.Sub(began) > maxTime:
			stopped = true
			_ = eng.Abort(ctx, fmt.Sprintf("%v of %v", ErrTimeCap, maxTime))
		case acceptable > 0 && now.Sub(began) > acceptable:
			stopped = true
			_ = eng.Abort(ctx, fmt.Sprintf("node agent: live migration is not completed after %d s", int(acceptable.Seconds())))
		case now.Sub(lastProgress) > progressTimeout:
			stopped = true
			_ = eng.Abort(ctx, fmt.Sprintf("node agent: live migration is stuck for %d s", int(progressTimeout.Seconds())))
		}
	}
	res := eng.Result()
	total := time.Since(began)
	if !res.Job.Started.IsZero() {
		row.MeasureSeconds = round(res.Job.Started.Sub(began).Seconds(), 3)
		if !res.Job.Ended.IsZero() {
			total = res.Job.Ended.Sub(began)
		}
		// The job ends when libvirt's completed job says (its elapsed
		// time, from its own start a few ms after ours): the guest runs
		// on the target with all its memory. libvirt's finish and the
		// source's clean-up after that (1-2 s on the tiny guest, the same
		// for every policy) are reported apart.
		if el, ok := res.Job.Stats.Elapsed.Get(); ok && res.Job.Succeeded {
			if end := res.Job.Started.Add(el); end.Before(res.Job.Ended) {
				row.FinishSeconds = round(res.Job.Ended.Sub(end).Seconds(), 3)
				total = end.Sub(began)
			}
		}
	}
	row.TotalSeconds = round(total.Seconds(), 3)
	row.ThrottleCPUSeconds = round(row.ThrottleCPUSeconds, 1)
	row.PostCopySeconds = round(row.PostCopySeconds, 1)
	return res, nil
}

// boot defines and starts the guest and waits until its agent answers;
// on the Debian guest it then starts stress-ng; then it gives the workload
// time to fill its working set. disk is the Debian guest's root disk.
func boot(ctx context.Context, opts Options, g Guest, name, disk string) error {
	bctx, cancel := context.WithTimeout(ctx, opts.BootTimeout)
	defer cancel()
	xml := g.DomainXML(name, opts.Kernel, opts.Initrd)
	if g.Kind == GuestDebian {
		xml = g.DebianDomainXML(name, opts.CloudImage.Kernel, opts.CloudImage.Initrd, disk)
	}
	if _, err := opts.Source.Define(bctx, xml); err != nil {
		return fmt.Errorf("define the guest: %w", err)
	}
	if err := opts.Source.Start(bctx, name, hypervisor.StartOptions{}); err != nil {
		return fmt.Errorf("start the guest: %w", err)
	}
	delay := 200 * time.Millisecond
	for {
		actx, acancel := context.WithTimeout(bctx, 5*time.Second)
		_, err := opts.Source.AgentCommand(actx, name, `{"execute":"guest-ping"}`)
		acancel()
		if err == nil {
			break
		}
		if !errors.Is(err, hypervisor.ErrAgentUnavailable) && !errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("guest agent: %w", err)
		}
		select {
		case <-bctx.Done():
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("guest agent did not answer within %v: %w", opts.BootTimeout, err)
		case <-time.After(delay):
		}
		delay = min(2*delay, time.Second)
	}
	if args := g.StressArgs(); g.Kind == GuestDebian && len(args) > 0 {
		if err := startStress(bctx, opts.Source, name, args); err != nil {
			return err
		}
	}
	// The dirtier fills its working set with random data before it starts
	// its rate (about 50 MiB/s under TCG), plus a second to reach it.
	settle := time.Second + time.Duration(float64(g.DirtyMiB)/50*float64(time.Second))
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(settle):
	}
	return nil
}

func round(v float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}

// samplePasses waits for the job, then reads its stats every period until
// ctx ends, recording where each iteration began.
func samplePasses(ctx context.Context, started <-chan hypervisor.MigrationJob, period time.Duration, rec *bench.PassRecorder) {
	var job hypervisor.MigrationJob
	select {
	case job = <-started:
	case <-ctx.Done():
		return
	}
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		st, err := job.Stats(ctx)
		if err != nil {
			continue
		}
		if el, ok := st.Elapsed.Get(); ok {
			rec.Observe(el, st)
		}
	}
}
