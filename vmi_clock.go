package virtkit

// Clock is the guest clock offset and timers.
type Clock struct {
	ClockOffset `json:",inline"`
	// Timer configures the guest's timer devices.
	Timer *Timer `json:"timer,omitempty"`
}

// ClockOffset is UTC (with an optional offset) or a timezone; exactly one.
type ClockOffset struct {
	// UTC sets the guest's clock to UTC, with an optional offset.
	UTC *ClockOffsetUTC `json:"utc,omitempty"`
	// Timezone sets the guest's clock to the local time of a time zone.
	Timezone *ClockOffsetTimezone `json:"timezone,omitempty"`
}

// ClockOffsetUTC sets the guest clock to UTC plus OffsetSeconds.
type ClockOffsetUTC struct {
	// OffsetSeconds is added to UTC.
	OffsetSeconds *int `json:"offsetSeconds,omitempty"`
}

// ClockOffsetTimezone sets the guest clock to a timezone, e.g. "Europe/Rome".
type ClockOffsetTimezone string

// Timer configures the emulated timers.
type Timer struct {
	// HPET configures the high precision event timer.
	HPET *HPETTimer `json:"hpet,omitempty"`
	// KVM configures the KVM paravirtual clock.
	KVM *KVMTimer `json:"kvm,omitempty"`
	// PIT configures the programmable interval timer.
	PIT *PITTimer `json:"pit,omitempty"`
	// RTC configures the real time clock.
	RTC *RTCTimer `json:"rtc,omitempty"`
	// Hyperv configures the Hyper-V reference time counter.
	Hyperv *HypervTimer `json:"hyperv,omitempty"`
}

// TickPolicy is what happens when the guest misses ticks.
type TickPolicy string

// Tick policies.
const (
	TickPolicyDelay    TickPolicy = "delay"
	TickPolicyCatchup  TickPolicy = "catchup"
	TickPolicyMerge    TickPolicy = "merge"
	TickPolicyDiscard  TickPolicy = "discard"
	TickPolicyTerminal TickPolicy = "terminal" // not valid; kept for rejection messages
)

// HPETTimer is the high-precision event timer.
type HPETTimer struct {
	// TickPolicy is what happens to ticks the guest missed: delay, catchup,
	// merge or discard.
	TickPolicy TickPolicy `json:"tickPolicy,omitempty"`
	// Enabled (JSON present) exposes the timer; true by default.
	Enabled *bool `json:"present,omitempty"`
}

// PITTimer is the programmable interval timer.
type PITTimer struct {
	// TickPolicy is what happens to ticks the guest missed: delay, catchup or
	// discard.
	TickPolicy TickPolicy `json:"tickPolicy,omitempty"`
	// Enabled (JSON present) exposes the timer; true by default.
	Enabled *bool `json:"present,omitempty"`
}

// RTCTimer is the real-time clock.
type RTCTimer struct {
	// TickPolicy is what happens to ticks the guest missed: delay or catchup.
	TickPolicy TickPolicy `json:"tickPolicy,omitempty"`
	// Enabled (JSON present) exposes the timer; true by default.
	Enabled *bool `json:"present,omitempty"`
	// Track is the time source the RTC follows: guest or wall.
	Track string `json:"track,omitempty"`
}

// KVMTimer is the kvmclock paravirtual clock.
type KVMTimer struct {
	// Enabled (JSON present) exposes the timer; true by default.
	Enabled *bool `json:"present,omitempty"`
}

// HypervTimer is the Hyper-V reference clock.
type HypervTimer struct {
	// Enabled (JSON present) exposes the timer; true by default.
	Enabled *bool `json:"present,omitempty"`
}
