package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/migration"
)

// ErrUnknownPolicy: a policy name the benchmark does not know.
var ErrUnknownPolicy = errors.New("unknown policy")

// PolicyNames are the policies the benchmark knows, in report order.
var policyNames = []string{"virtkit", "kubevirt", "kubevirt-ac-pc", "nova"}

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
	case "nova":
		return migration.NewNovaPolicy(migration.NovaOptions{}), nil
	}
	return nil, fmt.Errorf("policy %q (want one of %s): %w", name, strings.Join(policyNames, ", "), ErrUnknownPolicy)
}

// Options configure [Run]; the zero value is the default.
type Options struct {
	// MaxTime stops a run that has not ended after this much simulated
	// time (a policy without timeouts on a hopeless guest); 0 = 6 h.
	MaxTime time.Duration
	// Samples keeps the remaining-memory curve of each run (for plots).
	Samples bool
}

// Sample is one point of a run's curve.
type Sample struct {
	Seconds   float64 `json:"seconds"`
	Remaining uint64  `json:"remaining"`
}

// Row is one (profile, policy) result; the JSON field names are the
// benchmark's output format.
type Row struct {
	Profile            string   `json:"profile"`
	Policy             string   `json:"policy"`
	Outcome            string   `json:"outcome"`
	Reason             string   `json:"reason"`
	Mode               string   `json:"mode"`
	TotalSeconds       float64  `json:"totalSeconds"`
	DowntimeMs         *float64 `json:"downtimeMs"`
	BytesSent          uint64   `json:"bytesSent"`
	LowerBoundSeconds  float64  `json:"lowerBoundSeconds"`
	DecisionSeconds    float64  `json:"decisionSeconds"`
	MaxThrottlePercent int      `json:"maxThrottlePercent"`

	// Not in the JSON: the data behind the table and plots.
	MemoryBytes   uint64               `json:"-"`
	DowntimeLimit time.Duration        `json:"-"`
	Decisions     []migration.Decision `json:"-"`
	Samples       []Sample             `json:"-"`
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

// RunOne runs one profile under one policy.
func RunOne(ctx context.Context, p Profile, policyName string, opts Options) (Row, error) {
	policy, err := NewPolicy(policyName)
	if err != nil {
		return Row{}, err
	}
	if opts.MaxTime <= 0 {
		opts.MaxTime = 6 * time.Hour
	}
	clock := sim.NewVirtualClock(epoch)
	src := sim.New(sim.Options{Name: "src", Clock: clock, CPUs: 64, MemoryBytes: 1 << 40})
	dst := sim.New(sim.Options{Name: "dst", Clock: clock, CPUs: 64, MemoryBytes: 1 << 40})
	if err := sim.NewNetwork().Connect(src, dst, p.Link()); err != nil {
		return Row{}, err
	}
	const name = "bench_guest"
	xml := fmt.Sprintf(`<domain type='qemu'><name>%s</name><memory unit='b'>%d</memory><vcpu>4</vcpu></domain>`, name, p.MemoryBytes())
	if _, err := src.Define(ctx, xml); err != nil {
		return Row{}, err
	}
	if err := src.Start(ctx, name, hypervisor.StartOptions{}); err != nil {
		return Row{}, err
	}
	if err := src.SetWorkload(name, p.Workload()); err != nil {
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
	eng, err := migration.NewEngine(src, req, migration.Options{Policy: policy, Clock: clock, Probe: simProbe{src}})
	if err != nil {
		return Row{}, err
	}
	row := Row{Profile: p.Name, Policy: policy.Name(), MemoryBytes: p.MemoryBytes(), DowntimeLimit: p.Downtime(),
		LowerBoundSeconds: round(p.LowerBound().Seconds(), 3)}
	if err := eng.Start(ctx); err != nil && !errors.Is(err, migration.ErrRefused) {
		return Row{}, err
	}
	poll := eng.PollInterval()
	for start := clock.Now(); ; {
		if err := ctx.Err(); err != nil {
			return Row{}, err
		}
		if eng.Result().Refused {
			break
		}
		if clock.Now().Sub(start) > opts.MaxTime {
			return Row{}, fmt.Errorf("still running after %v of simulated time", opts.MaxTime)
		}
		clock.Advance(poll)
		done, err := eng.Step(ctx)
		if err != nil {
			return Row{}, err
		}
		if opts.Samples {
			s := eng.Snapshot()
			if r, ok := s.Remaining.Get(); ok {
				row.Samples = append(row.Samples, Sample{Seconds: s.Elapsed.Seconds(), Remaining: r})
			}
		}
		if done {
			break
		}
	}
	res := eng.Result()
	row.Outcome = string(res.Outcome)
	row.Reason = res.Reason
	row.Mode = string(res.Mode)
	row.TotalSeconds = round(res.Total.Seconds(), 3)
	if d, ok := res.Downtime.Get(); ok && res.Outcome == migration.OutcomeSucceeded {
		ms := round(float64(d)/float64(time.Millisecond), 1)
		row.DowntimeMs = &ms
	}
	row.BytesSent = res.BytesSent
	row.DecisionSeconds = round(res.DecisionAt.Seconds(), 3)
	row.MaxThrottlePercent = res.MaxThrottle
	row.Decisions = res.Decisions
	if opts.Samples && res.Outcome == migration.OutcomeSucceeded {
		row.Samples = append(row.Samples, Sample{Seconds: res.Total.Seconds(), Remaining: 0})
	}
	return row, nil
}

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
	sort.Float64s(rs)
	n := len(rs)
	if n%2 == 1 {
		return rs[n/2]
	}
	return (rs[n/2-1] + rs[n/2]) / 2
}
