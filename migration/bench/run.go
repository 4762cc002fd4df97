package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/migration"
)

// ErrUnknownPolicy: a policy name the benchmark does not know.
var ErrUnknownPolicy = errors.New("unknown policy")

// ErrMaxTime: a run had not ended after Options.MaxTime of simulated time.
var ErrMaxTime = errors.New("run exceeded its simulated time limit")

// PolicyNames are the policies the benchmark knows, in report order.
var policyNames = []string{"virtkit", "kubevirt", "kubevirt-ac-pc", "kubevirt-stall", "kubevirt-stall-pc", "nova", "nova-ac", "nova-pc"}

// PolicyNames returns the known policy names.
func PolicyNames() []string { return append([]string(nil), policyNames...) }

// NewPolicy returns the policy called name.
func NewPolicy(name string) (migration.Policy, error) {
	switch name {
	case "virtkit":
		return migration.NewPolicy(migration.PolicyOptions{}), nil
	case "kubevirt":
		return migration.NewKubeVirtPolicy(migration.KubeVirtOptions{}), nil
	case "kubevirt-ac-pc":
		return migration.NewKubeVirtPolicy(migration.KubeVirtOptions{AllowAutoConverge: true, AllowPostCopy: true}), nil
	case "kubevirt-stall":
		return migration.NewStallPolicy(migration.StallOptions{}), nil
	case "kubevirt-stall-pc":
		return migration.NewStallPolicy(migration.StallOptions{AllowPostCopy: true}), nil
	case "nova":
		return migration.NewNovaPolicy(migration.NovaOptions{}), nil
	case "nova-ac":
		return migration.NewNovaPolicy(migration.NovaOptions{PermitAutoConverge: true}), nil
	case "nova-pc":
		return migration.NewNovaPolicy(migration.NovaOptions{PermitPostCopy: true, TimeoutAction: migration.NovaForceComplete}), nil
	}
	return nil, fmt.Errorf("policy %q (want one of %s): %w", name, strings.Join(policyNames, ", "), ErrUnknownPolicy)
}

// Capabilities is the face the simulated backend presents to the engine.
type Capabilities string

const (
	// CapabilitiesLibvirt is exactly what libvirt offers: a dirty-rate
	// measurement before the start only, no direct throttle (QEMU's
	// auto-converge, enabled at the start), a job dirty rate of 0 until
	// QEMU's first sync. The default, and what published figures use.
	CapabilitiesLibvirt Capabilities = "libvirt"
	// CapabilitiesFull adds what only the simulator has: dirty-rate probes
	// during the job and a direct vCPU throttle.
	CapabilitiesFull Capabilities = "full"
)

// ErrUnknownCapabilities: a capabilities name other than libvirt or full.
var ErrUnknownCapabilities = errors.New("unknown capabilities")

// ParseCapabilities reads "libvirt" or "full".
func ParseCapabilities(s string) (Capabilities, error) {
	switch c := Capabilities(s); c {
	case CapabilitiesLibvirt, CapabilitiesFull:
		return c, nil
	}
	return "", fmt.Errorf("capabilities %q (want libvirt or full): %w", s, ErrUnknownCapabilities)
}

// Options configure [Run]; the zero value is the default.
type Options struct {
	// Capabilities is the backend's face; "" = CapabilitiesLibvirt.
	Capabilities Capabilities
	// AutoConverge is the QEMU auto-converge schedule every run gets;
	// "" = sim.AutoConvergeQEMU92.
	AutoConverge sim.AutoConvergeSchedule
	// CompletionTimeoutPerGB and ProgressTimeout are the migration
	// configuration's limits that the node agent applies to the virtkit
	// engine (KubeVirt's defaults: 150 s per GB, 150 s); negative disables.
	CompletionTimeoutPerGB time.Duration
	ProgressTimeout        time.Duration
	// MaxCompletionTimeoutPerGB is the operator's upper bound on how long
	// the node agent lets a migration that the virtkit engine predicts to
	// converge run past the completion timeout
	// ([migration.Engine.CompletionDeadline]); 0 = 800 s per GB (Nova's
	// completion timeout), negative = the completion timeout is final.
	MaxCompletionTimeoutPerGB time.Duration
	// Virtkit configures the virtkit policy (its zero value is the
	// default the published figures use); for comparisons.
	Virtkit migration.PolicyOptions
	// MaxTime stops a run that has not ended after this much simulated
	// time (a policy without timeouts on a hopeless guest); 0 = 6 h.
	MaxTime time.Duration
	// Samples keeps the remaining-memory curve of each run (for plots).
	Samples bool
	// SamplePasses, when positive, reads the job's stats at this period
	// of simulated time between the engine's polls and records where each
	// iteration began (Row.Passes), as the real bench does with the same
	// option. The engine sees nothing of it.
	SamplePasses time.Duration
	// Host and Workload, when set, adjust the simulated hosts' options and
	// the guest's workload (calibration against a real run: setup time,
	// zero memory).
	Host     func(*sim.Options)
	Workload func(*sim.Workload)
	// LinkCapacity, when set, is the link's speed and the profile's
	// bandwidth becomes the job's max speed, as on the real-QEMU bench
	// (a fast loopback capped by libvirt's max speed).
	LinkCapacity uint64
}

// Sample is one point of a run's curve.
type Sample struct {
	Seconds   float64 `json:"seconds"`
	Remaining uint64  `json:"remaining"`
}

// Row is one (profile, policy) result; the JSON field names are the
// benchmark's output format.
type Row struct {
	Profile      string `json:"profile"`
	Policy       string `json:"policy"`
	Capabilities string `json:"capabilities"`
	// Run is the repetition (from 1) of a repeated real benchmark; 0 in a
	// single run.
	Run     int    `json:"run,omitempty"`
	Outcome string `json:"outcome"`
	Reason  string `json:"reason"`
	// Rule names the policy's rule that refused or aborted the migration.
	Rule         string   `json:"rule,omitempty"`
	Mode         string   `json:"mode"`
	TotalSeconds float64  `json:"totalSeconds"`
	DowntimeMs   *float64 `json:"downtimeMs"`
	// DowntimeLimitMs is the downtime limit configured for the migration
	// (the profile's), and WithinDowntimeLimit whether a completed run's
	// pause stayed within it ([RuleWithinDowntimeLimit]; nil for a run
	// that did not complete). Set by [Row.ApplyDowntimeRule].
	DowntimeLimitMs     float64 `json:"downtimeLimitMs,omitempty"`
	WithinDowntimeLimit *bool   `json:"withinDowntimeLimit,omitempty"`
	BytesSent           uint64  `json:"bytesSent"`
	// Iterations is the job's last memory iteration (QEMU's bitmap syncs
	// plus one).
	Iterations         uint64  `json:"iterations,omitempty"`
	LowerBoundSeconds  float64 `json:"lowerBoundSeconds"`
	DecisionSeconds    float64 `json:"decisionSeconds"`
	MaxThrottlePercent int     `json:"maxThrottlePercent"`
	// MeasureSeconds is the pre-start measurement, counted in TotalSeconds.
	MeasureSeconds float64 `json:"measureSeconds"`
	// FinishSeconds is, on a real backend, the time from the end of the
	// job (the guest runs on the target with all its memory there) to
	// the return of the migrate call: libvirt's finish on the target and
	// clean-up on the source, the same work for every policy. Not counted
	// in TotalSeconds; the simulator has none.
	FinishSeconds float64 `json:"finishSeconds,omitempty"`
	// Guest cost: vCPU-seconds taken by the throttle (∫ throttle × vCPUs
	// dt) and seconds the guest ran on the target in post-copy (faulting
	// pages back over the link).
	ThrottleCPUSeconds float64 `json:"throttleCpuSeconds"`
	PostCopySeconds    float64 `json:"postCopySeconds"`
	// PostCopyFaults counts the pages the guest faulted on in post-copy,
	// each fetched from the source over the link while a vCPU waited
	// (libvirt's memory_postcopy_requests); set by the real benchmark for
	// jobs that ran in post-copy.
	PostCopyFaults uint64 `json:"postCopyFaults,omitempty"`
	// GuestRebooted and GuestClockLostSeconds are, on a real backend, what
	// the guest's own clock says of the run: its uptime went back (it
	// rebooted), or it moved that much less than the host's over the
	// migration (the guest stood still, its workload with it). Such a run
	// did not migrate the workload its profile describes.
	GuestRebooted         bool    `json:"guestRebooted,omitempty"`
	GuestClockLostSeconds float64 `json:"guestClockLostSeconds,omitempty"`

	// Not in the JSON: the data behind the table and plots.
	MemoryBytes   uint64               `json:"-"`
	DowntimeLimit time.Duration        `json:"-"`
	Decisions     []migration.Decision `json:"-"`
	Samples       []Sample             `json:"-"`

	// Passes is where each pre-copy iteration began, when the run sampled
	// them (Options.SamplePasses).
	Passes []Pass `json:"passes,omitempty"`
}

// Ratio is total time over the lower bound.
func (r Row) Ratio() float64 {
	if r.LowerBoundSeconds == 0 {
		return 0
	}
	return r.TotalSeconds / r.LowerBoundSeconds
}

// Run migrates one guest per (profile, policy) on the simulated hypervisor
// with a virtual clock, the engine stepping after every poll interval, and
// returns the rows in profile-major order. It is deterministic.
func Run(ctx context.Context, profiles []Profile, policies []string, opts Options) ([]Row, error) {
	if errs := ValidateProfiles(profiles); len(errs) > 0 {
		return nil, fmt.Errorf("%v: %w", errs.ToAggregate(), ErrInvalidProfile)
	}
	for _, name := range policies {
		if _, err := NewPolicy(name); err != nil {
			return nil, err
		}
	}
	var rows []Row
	for _, p := range profiles {
		for _, name := range policies {
			row, err := RunOne(ctx, p, name, opts)
			if err != nil {
				return nil, fmt.Errorf("profile %s, policy %s: %w", p.Name, name, err)
			}
			rows = append(rows, row)
		}
	}
	return rows, nil
}

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// simProbe adapts the simulator's non-blocking dirty-rate calculation.
type simProbe struct{ h *sim.Host }

func (s simProbe) StartDirtyRateProbe(ctx context.Context, name string, period time.Duration) (migration.PendingDirtyRate, error) {
	return s.h.StartDirtyRateCalc(ctx, name, period)
}

// benchVCPUs is the bench guest's vCPU count, the unit of the throttle's
// CPU-seconds.
const benchVCPUs = 4

// RunOne runs one profile under one policy.
func RunOne(ctx context.Context, p Profile, policyName string, opts Options) (Row, error) {
	policy, err := NewPolicy(policyName)
	if err != nil {
		return Row{}, err
	}
	if policyName == "virtkit" {
		policy = migration.NewPolicy(opts.Virtkit)
	}
	if opts.MaxTime <= 0 {
		opts.MaxTime = 6 * time.Hour
	}
	if opts.Capabilities == "" {
		opts.Capabilities = CapabilitiesLibvirt
	}
	if _, err := ParseCapabilities(string(opts.Capabilities)); err != nil {
		return Row{}, err
	}
	if opts.AutoConverge == "" {
		opts.AutoConverge = sim.AutoConvergeQEMU92
	}
	if opts.CompletionTimeoutPerGB == 0 {
		opts.CompletionTimeoutPerGB = 150 * time.Second
	}
	if opts.ProgressTimeout == 0 {
		opts.ProgressTimeout = 150 * time.Second
	}
	if opts.MaxCompletionTimeoutPerGB == 0 {
		opts.MaxCompletionTimeoutPerGB = 800 * time.Second
	}
	libvirt := opts.Capabilities == CapabilitiesLibvirt
	clock := sim.NewVirtualClock(epoch)
	hostOpts := func(name string) sim.Options {
		o := sim.Options{Name: name, Clock: clock, CPUs: 64, MemoryBytes: 1 << 40,
			AutoConvergeSchedule: opts.AutoConverge, LibvirtFace: libvirt}
		if opts.Host != nil {
			opts.Host(&o)
		}
		return o
	}
	src := sim.New(hostOpts("src"))
	dst := sim.New(hostOpts("dst"))
	link := p.Link()
	if opts.LinkCapacity > 0 {
		link.Bandwidth = opts.LinkCapacity
	}
	if err := sim.NewNetwork().Connect(src, dst, link); err != nil {
		return Row{}, err
	}
	const name = "bench_guest"
	xml := fmt.Sprintf(`<domain type='qemu'><name>%s</name><memory unit='b'>%d</memory><vcpu>%d</vcpu></domain>`, name, p.MemoryBytes(), benchVCPUs)
	if _, err := src.Define(ctx, xml); err != nil {
		return Row{}, err
	}
	if err := src.Start(ctx, name, hypervisor.StartOptions{}); err != nil {
		return Row{}, err
	}
	wl := p.Workload()
	if opts.Workload != nil {
		opts.Workload(&wl)
	}
	if err := src.SetWorkload(name, wl); err != nil {
		return Row{}, err
	}
	req := migration.Request{
		Domain:            name,
		Memory:            p.MemoryBytes(),
		Params:            hypervisor.MigrationParams{DestinationURI: "dst", Persist: true, UndefineSource: true},
		AllowPostCopy:     p.AllowPostCopy,
		AllowAutoConverge: p.AllowAutoConverge,
		DowntimeLimit:     p.Downtime(),
	}
	if opts.LinkCapacity > 0 {
		req.Params.Bandwidth = uint64(p.BandwidthBytes())
		// As the real bench measures its loopback link.
		req.LinkBandwidth = float64(opts.LinkCapacity)
	}
	_, isVirtkit := policy.(*migration.VirtkitPolicy)
	if isVirtkit {
		// The node agent knows the migration link's speed (the NIC's); the
		// engine uses it to skip the pre-start measurement when the first
		// pass is short and to refuse a hopeless guest before the start.
		req.BandwidthHint = p.BandwidthBytes()
		if opts.CompletionTimeoutPerGB > 0 {
			// And the completion timeout it will apply.
			req.CompletionTimeout = opts.CompletionTimeoutPerGB * time.Duration((p.MemoryBytes()+1e9-1)/1e9)
			if opts.MaxCompletionTimeoutPerGB > 0 {
				req.MaxCompletionTimeout = opts.MaxCompletionTimeoutPerGB * time.Duration((p.MemoryBytes()+1e9-1)/1e9)
			}
		}
	}
	eopts := migration.Options{Policy: policy, Clock: clock, Probe: simProbe{src}, SkipMeasurement: !isVirtkit}
	sh := &samplingHost{Host: src}
	eng, err := migration.NewEngine(sh, req, eopts)
	if err != nil {
		return Row{}, err
	}
	row := Row{Profile: p.Name, Policy: policy.Name(), Capabilities: string(opts.Capabilities),
		MemoryBytes: p.MemoryBytes(), DowntimeLimit: p.Downtime(),
		LowerBoundSeconds: round(p.LowerBound().Seconds(), 3)}
	// The node agent bounds the engine with the configuration's timeouts,
	// as KubeVirt bounds every migration.
	var acceptable, progressTimeout time.Duration
	if isVirtkit && opts.CompletionTimeoutPerGB > 0 {
		acceptable = opts.CompletionTimeoutPerGB * time.Duration((p.MemoryBytes()+1e9-1)/1e9)
	}
	if isVirtkit && opts.ProgressTimeout > 0 {
		progressTimeout = opts.ProgressTimeout
	}
	began := clock.Now()
	if err := eng.Start(ctx); err != nil && !errors.Is(err, migration.ErrRefused) {
		return Row{}, err
	}
	lastProgress := began
	var passes PassRecorder
	var lastRemaining uint64
	haveRemaining, timedOut := false, false
	for start := clock.Now(); ; {
		if err := ctx.Err(); err != nil {
			return Row{}, err
		}
		if eng.Result().Refused {
			break
		}
		if clock.Now().Sub(start) > opts.MaxTime {
			return Row{}, fmt.Errorf("still running after %v of simulated time: %w", opts.MaxTime, ErrMaxTime)
		}
		poll := eng.NextPoll()
		if err := advance(ctx, clock, poll, opts.SamplePasses, sh, &passes); err != nil {
			return Row{}, err
		}
		done, err := eng.Step(ctx)
		if err != nil {
			return Row{}, err
		}
		s := eng.Snapshot()
		row.ThrottleCPUSeconds += float64(s.Throttle) / 100 * benchVCPUs * poll.Seconds()
		if s.Phase == migration.PhasePostCopy && !done {
			row.PostCopySeconds += poll.Seconds()
		}
		if opts.Samples {
			if r, ok := s.Remaining.Get(); ok {
				row.Samples = append(row.Samples, Sample{Seconds: s.Elapsed.Seconds(), Remaining: r})
			}
		}
		if done {
			break
		}
		if r, ok := s.Remaining.Get(); ok {
			if !haveRemaining || r < lastRemaining {
				lastProgress = clock.Now()
			}
			lastRemaining, haveRemaining = r, true
		}
		now := clock.Now()
		switch {
		case timedOut || s.Phase == migration.PhasePostCopy || s.Phase == migration.PhasePlanning:
		case acceptable > 0 && now.Sub(began) > max(acceptable, deadline(eng)):
			timedOut = true
			_ = eng.Abort(ctx, fmt.Sprintf("node agent: live migration is not completed after %d s", int(now.Sub(began).Seconds())))
		case progressTimeout > 0 && now.Sub(lastProgress) > progressTimeout:
			timedOut = true
			_ = eng.Abort(ctx, fmt.Sprintf("node agent: live migration is stuck for %d s", int(progressTimeout.Seconds())))
		}
	}
	res := eng.Result()
	row.Outcome = string(res.Outcome)
	row.Reason, row.Rule = res.Reason, res.Rule
	row.Mode = string(res.Mode)
	total := res.Total
	if !res.Job.Started.IsZero() {
		row.MeasureSeconds = round(res.Job.Started.Sub(began).Seconds(), 3)
		if !res.Job.Ended.IsZero() {
			total = res.Job.Ended.Sub(began)
		}
	} else if res.Refused {
		total = clock.Now().Sub(began)
	}
	row.TotalSeconds = round(total.Seconds(), 3)
	row.ThrottleCPUSeconds = round(row.ThrottleCPUSeconds, 1)
	row.PostCopySeconds = round(row.PostCopySeconds, 1)
	if d, ok := res.Downtime.Get(); ok && res.Outcome == migration.OutcomeSucceeded {
		ms := round(float64(d)/float64(time.Millisecond), 1)
		row.DowntimeMs = &ms
	}
	row.BytesSent = res.BytesSent
	row.Iterations = res.Job.Stats.MemoryIteration.Or(eng.Snapshot().Iteration.Or(0))
	row.DecisionSeconds = round(res.DecisionAt.Seconds(), 3)
	row.MaxThrottlePercent = res.MaxThrottle
	row.Decisions = res.Decisions
	row.Passes = passes.Passes()
	row.ApplyDowntimeRule()
	if opts.Samples && res.Outcome == migration.OutcomeSucceeded {
		row.Samples = append(row.Samples, Sample{Seconds: res.Total.Seconds(), Remaining: 0})
	}
	return row, nil
}

// deadline is the engine's completion deadline: the completion timeout,
// extended while the engine predicts that pre-copy converges. The harness
// counts it from its own start, as it does the timeout.
func deadline(eng *migration.Engine) time.Duration { return eng.CompletionDeadline() }

func round(v float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}

// MedianRatio returns the median total/lowerBound of rows.
func MedianRatio(rows []Row) float64 {
	if len(rows) == 0 {
		return 0
	}
	rs := make([]float64, len(rows))
	for i, r := range rows {
		rs[i] = r.Ratio()
	}
	return median(rs)
}

// samplingHost is the source host as the engine sees it, keeping the job
// it starts so that the bench can sample the job's stats by itself.
type samplingHost struct {
	*sim.Host
	job hypervisor.MigrationJob
}

func (h *samplingHost) StartMigration(ctx context.Context, name string, p hypervisor.MigrationParams) (hypervisor.MigrationJob, error) {
	j, err := h.Host.StartMigration(ctx, name, p)
	h.job = j
	return j, err
}

// advance moves the virtual clock by d; with a sampling period it stops
// every period on the way to record the job's passes.
func advance(ctx context.Context, clock *sim.VirtualClock, d, period time.Duration, h *samplingHost, rec *PassRecorder) error {
	if period <= 0 || h.job == nil {
		clock.Advance(d)
		return nil
	}
	for d > 0 {
		step := min(period, d)
		clock.Advance(step)
		d -= step
		st, err := h.job.Stats(ctx)
		if err != nil {
			return fmt.Errorf("sample the job's passes: %w", err)
		}
		if el, ok := st.Elapsed.Get(); ok {
			rec.Observe(el, st)
		}
	}
	return nil
}
