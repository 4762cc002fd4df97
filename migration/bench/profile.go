package bench

import (
	"errors"
	"fmt"
	"math"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/migration"
)

// ErrInvalidProfile wraps every profile decoding or validation error.
var ErrInvalidProfile = errors.New("invalid benchmark profile")

// Profile is one workload on one link, with the permissions every policy
// gets. The YAML form is the one `virtkit bench migrate --profiles` reads.
type Profile struct {
	Name string `json:"name"`
	// Memory is the guest memory (a quantity: "8Gi").
	Memory resource.Quantity `json:"memory"`
	// Bandwidth is the link's throughput in bytes per second ("1250M").
	Bandwidth resource.Quantity `json:"bandwidth"`
	// DirtyRate is the guest's raw write rate in bytes per second ("300M").
	DirtyRate resource.Quantity `json:"dirtyRate"`
	// WorkingSet is the part of memory being dirtied; unset = all memory.
	WorkingSet *resource.Quantity `json:"workingSet,omitempty"`
	// Shape is uniform (default), hotset or bursty; sequential (a sweep,
	// as in the build-box, memory-hog and I/O profiles) is accepted too.
	Shape sim.Shape `json:"shape,omitempty"`
	// BurstPeriod (seconds) and BurstFactor shape a bursty workload: for
	// BurstDuration seconds (default a quarter of the period) of every
	// period, the rate is BurstFactor × DirtyRate, the extra over BurstSet
	// (default the working set).
	BurstPeriod   float64            `json:"burstPeriod,omitempty"`
	BurstFactor   float64            `json:"burstFactor,omitempty"`
	BurstDuration float64            `json:"burstDuration,omitempty"`
	BurstSet      *resource.Quantity `json:"burstSet,omitempty"`
	// ThrottleSensitivity (0..1) is the share of the dirtying that slows
	// down with the vCPUs; unset = 1, 0 = I/O-driven dirtying.
	ThrottleSensitivity *float64 `json:"throttleSensitivity,omitempty"`
	// Dips multiply the bandwidth for a while.
	Dips []Dip `json:"dips,omitempty"`
	// AllowPostCopy and AllowAutoConverge are the permissions every policy
	// gets.
	AllowPostCopy     bool `json:"allowPostCopy,omitempty"`
	AllowAutoConverge bool `json:"allowAutoConverge,omitempty"`
	// DowntimeLimit in milliseconds; unset = 300.
	DowntimeLimit *float64 `json:"downtimeLimit,omitempty"`
}

// Dip multiplies the bandwidth by Factor from At for Duration seconds
// (counted from the start of the migration).
type Dip struct {
	At       float64 `json:"at"`
	Duration float64 `json:"duration"`
	Factor   float64 `json:"factor"`
}

// DecodeProfiles reads a YAML (or JSON) list of profiles strictly: an
// unknown field is an error naming its path.
func DecodeProfiles(data []byte) ([]Profile, error) {
	var ps []Profile
	if err := yaml.UnmarshalStrict(data, &ps); err != nil {
		return nil, fmt.Errorf("profiles: %v: %w", err, ErrInvalidProfile)
	}
	if len(ps) == 0 {
		return nil, fmt.Errorf("profiles: the list is empty: %w", ErrInvalidProfile)
	}
	if errs := ValidateProfiles(ps); len(errs) > 0 {
		return nil, fmt.Errorf("%v: %w", errs.ToAggregate(), ErrInvalidProfile)
	}
	return ps, nil
}

// ValidateProfiles checks every profile; errors carry field paths like
// profiles[2].bandwidth.
func ValidateProfiles(ps []Profile) field.ErrorList {
	var errs field.ErrorList
	names := map[string]bool{}
	for i, p := range ps {
		path := field.NewPath("profiles").Index(i)
		errs = append(errs, p.validate(path)...)
		if names[p.Name] {
			errs = append(errs, field.Duplicate(path.Child("name"), p.Name))
		}
		names[p.Name] = true
	}
	return errs
}

func (p Profile) validate(path *field.Path) field.ErrorList {
	var errs field.ErrorList
	positive := func(name string, q resource.Quantity) {
		if q.Sign() <= 0 {
			errs = append(errs, field.Invalid(path.Child(name), q.String(), "must be > 0"))
		}
	}
	if p.Name == "" {
		errs = append(errs, field.Required(path.Child("name"), ""))
	}
	positive("memory", p.Memory)
	positive("bandwidth", p.Bandwidth)
	if p.DirtyRate.Sign() < 0 {
		errs = append(errs, field.Invalid(path.Child("dirtyRate"), p.DirtyRate.String(), "must be >= 0"))
	}
	if p.WorkingSet != nil && (p.WorkingSet.Sign() <= 0 || p.WorkingSet.Cmp(p.Memory) > 0) {
		errs = append(errs, field.Invalid(path.Child("workingSet"), p.WorkingSet.String(), "must be > 0 and at most memory"))
	}
	if p.BurstSet != nil && (p.BurstSet.Sign() <= 0 || p.BurstSet.Cmp(p.Memory) > 0) {
		errs = append(errs, field.Invalid(path.Child("burstSet"), p.BurstSet.String(), "must be > 0 and at most memory"))
	}
	switch p.Shape {
	case "", sim.ShapeUniform, sim.ShapeHotset, sim.ShapeSequential:
		if p.BurstPeriod != 0 || p.BurstFactor != 0 {
			errs = append(errs, field.Invalid(path.Child("burstPeriod"), p.BurstPeriod, "only for shape bursty"))
		}
	case sim.ShapeBursty:
		if !(p.BurstPeriod > 0) {
			errs = append(errs, field.Invalid(path.Child("burstPeriod"), p.BurstPeriod, "a bursty profile needs a period > 0 seconds"))
		} else {
			errs = append(errs, checkSeconds(path.Child("burstPeriod"), p.BurstPeriod, false)...)
		}
		if !(p.BurstFactor >= 1) || math.IsInf(p.BurstFactor, 0) {
			errs = append(errs, field.Invalid(path.Child("burstFactor"), p.BurstFactor, "must be >= 1"))
		}
		if p.BurstDuration < 0 || (p.BurstPeriod > 0 && p.BurstDuration > p.BurstPeriod) || math.IsNaN(p.BurstDuration) {
			errs = append(errs, field.Invalid(path.Child("burstDuration"), p.BurstDuration, "must be 0..burstPeriod"))
		} else {
			errs = append(errs, checkSeconds(path.Child("burstDuration"), p.BurstDuration, true)...)
		}
	default:
		errs = append(errs, field.NotSupported(path.Child("shape"), p.Shape, []string{"uniform", "hotset", "bursty", "sequential"}))
	}
	if s := p.ThrottleSensitivity; s != nil && (*s < 0 || *s > 1 || math.IsNaN(*s)) {
		errs = append(errs, field.Invalid(path.Child("throttleSensitivity"), *s, "must be 0..1"))
	}
	for i, d := range p.Dips {
		dp := path.Child("dips").Index(i)
		if d.At < 0 || math.IsNaN(d.At) {
			errs = append(errs, field.Invalid(dp.Child("at"), d.At, "must be >= 0 seconds"))
		} else {
			errs = append(errs, checkSeconds(dp.Child("at"), d.At, true)...)
		}
		if !(d.Duration > 0) {
			errs = append(errs, field.Invalid(dp.Child("duration"), d.Duration, "must be > 0 seconds"))
		} else {
			errs = append(errs, checkSeconds(dp.Child("duration"), d.Duration, false)...)
		}
		if d.Factor < 0 || d.Factor > 1 || math.IsNaN(d.Factor) {
			errs = append(errs, field.Invalid(dp.Child("factor"), d.Factor, "must be 0..1"))
		}
	}
	if d := p.DowntimeLimit; d != nil && !(*d >= minDowntimeMillis && *d <= maxDowntimeMillis) {
		errs = append(errs, field.Invalid(path.Child("downtimeLimit"), *d,
			fmt.Sprintf("must be %g..%g milliseconds", minDowntimeMillis, maxDowntimeMillis)))
	}
	return errs
}

// Bounds of the duration fields, so that every accepted value converts to a
// time.Duration without overflow or rounding to zero.
const (
	minSeconds        = 0.001
	maxSeconds        = 1e6
	minDowntimeMillis = 1.0
	maxDowntimeMillis = 3.6e6
)

// checkSeconds bounds a non-negative duration field given in seconds: at
// most maxSeconds, and, unless zero is allowed, at least a millisecond.
func checkSeconds(path *field.Path, v float64, zeroOK bool) field.ErrorList {
	if (zeroOK && v == 0) || (v >= minSeconds && v <= maxSeconds) {
		return nil
	}
	return field.ErrorList{field.Invalid(path, v, fmt.Sprintf("must be %g..%g seconds", minSeconds, maxSeconds))}
}

// MemoryBytes, BandwidthBytes and so on read the quantities.
func (p Profile) MemoryBytes() uint64     { return uint64(p.Memory.Value()) }
func (p Profile) BandwidthBytes() float64 { return float64(p.Bandwidth.Value()) }

// Downtime is the profile's downtime limit.
func (p Profile) Downtime() time.Duration {
	if p.DowntimeLimit == nil {
		return 300 * time.Millisecond
	}
	return time.Duration(*p.DowntimeLimit * float64(time.Millisecond))
}

// LowerBound is M/B, the time no policy beats.
func (p Profile) LowerBound() time.Duration {
	return time.Duration(float64(p.MemoryBytes()) / p.BandwidthBytes() * float64(time.Second))
}

// Workload is the profile as the simulator's memory model.
func (p Profile) Workload() sim.Workload {
	w := sim.Workload{
		DirtyRate:           uint64(p.DirtyRate.Value()),
		Shape:               p.Shape,
		BurstFactor:         p.BurstFactor,
		BurstPeriod:         secs(p.BurstPeriod),
		BurstDuration:       secs(p.BurstDuration),
		ThrottleSensitivity: 1,
		CPUUsage:            0.5,
	}
	if p.WorkingSet != nil {
		w.WorkingSet = uint64(p.WorkingSet.Value())
	}
	if p.BurstSet != nil {
		w.BurstSet = uint64(p.BurstSet.Value())
	}
	if p.ThrottleSensitivity != nil {
		w.ThrottleSensitivity = *p.ThrottleSensitivity
	}
	return w
}

// Link is the profile's migration link.
func (p Profile) Link() sim.Link {
	l := sim.Link{Bandwidth: uint64(p.Bandwidth.Value())}
	for _, d := range p.Dips {
		l.Dips = append(l.Dips, sim.Dip{At: secs(d.At), Duration: secs(d.Duration), Factor: d.Factor})
	}
	return l
}

func secs(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

func q(s string) resource.Quantity { return resource.MustParse(s) }

func qp(s string) *resource.Quantity { v := resource.MustParse(s); return &v }

func fp(v float64) *float64 { return &v }

// BuiltinProfiles are eight reference workloads. The
// permissions are chosen so the set covers each remedy: none needed (P1,
// P2), throttling (P3, P4, P6), post-copy (P5), both with a throttle that
// cannot work (P8), and nothing allowed that could converge (P7).
func BuiltinProfiles() []Profile {
	return []Profile{
		{Name: "P1-idle", Memory: q("4Gi"), Bandwidth: q("1150M"), DirtyRate: q("5M"), WorkingSet: qp("64Mi")},
		{Name: "P2-web", Memory: q("8Gi"), Bandwidth: q("115M"), DirtyRate: q("50M"), WorkingSet: qp("512Mi")},
		{Name: "P3-build", Memory: q("8Gi"), Bandwidth: q("115M"), DirtyRate: q("150M"), WorkingSet: qp("2Gi"),
			Shape: sim.ShapeSequential, AllowAutoConverge: true},
		{Name: "P4-kv-dip", Memory: q("16Gi"), Bandwidth: q("575M"), DirtyRate: q("450M"), WorkingSet: qp("12Gi"),
			Dips: []Dip{{At: 20, Duration: 60, Factor: 0.5}}, AllowAutoConverge: true},
		{Name: "P5-oltp", Memory: q("32Gi"), Bandwidth: q("575M"), DirtyRate: q("400M"), WorkingSet: qp("1Gi"),
			Shape: sim.ShapeBursty, BurstPeriod: 30, BurstDuration: 8, BurstFactor: 4.75, BurstSet: qp("8Gi"),
			AllowPostCopy: true},
		{Name: "P6-jvm", Memory: q("64Gi"), Bandwidth: q("300M"), DirtyRate: q("280M"), WorkingSet: qp("48Gi"),
			AllowAutoConverge: true},
		{Name: "P7-hog", Memory: q("8Gi"), Bandwidth: q("1150M"), DirtyRate: q("2G"), WorkingSet: qp("4Gi"),
			Shape: sim.ShapeSequential},
		{Name: "P8-io-ingest", Memory: q("16Gi"), Bandwidth: q("575M"), DirtyRate: q("800M"), WorkingSet: qp("8Gi"),
			Shape: sim.ShapeSequential, ThrottleSensitivity: fp(0.2), AllowAutoConverge: true, AllowPostCopy: true},
	}
}

// switchoverCost is the simulator's default fixed part of a pause.
const switchoverCost = 30 * time.Millisecond

// Feasible tells, from the closed-form model, whether anything the
// profile's permissions allow can make the migration converge: post-copy
// always can; otherwise pre-copy at the burst-free dirty rate, or with a
// throttle of at most 99 % when auto-converge is allowed.
func (p Profile) Feasible() (bool, string) {
	if p.AllowPostCopy {
		return true, "post-copy is allowed"
	}
	// The pause is the switchover threshold plus the switchover's fixed
	// cost (the simulator's 30 ms): only a threshold that leaves room for it
	// keeps the pause within the limit.
	threshold := p.Downtime() - switchoverCost
	if threshold < time.Millisecond {
		return false, fmt.Sprintf("the %v downtime limit leaves no room for the %v switchover cost", p.Downtime(), switchoverCost)
	}
	in := migration.ModelInput{
		Memory:        p.MemoryBytes(),
		Bandwidth:     p.BandwidthBytes(),
		DirtyRate:     float64(p.DirtyRate.Value()),
		DowntimeLimit: threshold,
	}
	if p.WorkingSet != nil {
		in.WorkingSet = uint64(p.WorkingSet.Value())
	}
	if p.ThrottleSensitivity != nil {
		in.ThrottleSensitivity = hypervisor.Some(*p.ThrottleSensitivity)
	}
	pred, err := migration.Predict(in)
	if err != nil {
		return false, err.Error()
	}
	switch {
	case pred.Converges:
		return true, "pre-copy converges"
	case p.AllowAutoConverge && pred.MinThrottle >= 0:
		return true, fmt.Sprintf("a %d%% throttle converges", pred.MinThrottle)
	}
	return false, pred.Why
}
