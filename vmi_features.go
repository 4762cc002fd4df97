package virtkit

// FeatureState enables (default) or disables a feature.
type FeatureState struct {
	// Enabled switches the feature on or off; true by default.
	Enabled *bool `json:"enabled,omitempty"`
}

// Features are hypervisor features exposed to the guest.
type Features struct {
	// ACPI exposes ACPI to the guest; it is on unless enabled is false.
	ACPI FeatureState `json:"acpi,omitempty"`
	// APIC exposes the advanced programmable interrupt controller.
	APIC *FeatureAPIC `json:"apic,omitempty"`
	// Hyperv exposes Hyper-V enlightenments, for Windows guests.
	Hyperv *FeatureHyperv `json:"hyperv,omitempty"`
	// SMM enables System Management Mode, needed by Secure Boot.
	SMM *FeatureState `json:"smm,omitempty"`
	// KVM configures the KVM paravirtual features the guest sees.
	KVM *FeatureKVM `json:"kvm,omitempty"`
	// Pvspinlock exposes paravirtual spinlocks.
	Pvspinlock *FeatureState `json:"pvspinlock,omitempty"`
}

// FeatureAPIC is the APIC and its EOI setting.
type FeatureAPIC struct {
	// Enabled switches the APIC on or off; true by default.
	Enabled *bool `json:"enabled,omitempty"`
	// EndOfInterrupt enables the paravirtual end-of-interrupt.
	EndOfInterrupt bool `json:"endOfInterrupt,omitempty"`
}

// FeatureKVM hides the KVM signature from the guest.
type FeatureKVM struct {
	// Hidden hides the KVM signature from the guest.
	Hidden bool `json:"hidden,omitempty"`
}

// FeatureSpinlocks sets the Hyper-V spinlock retry count (>= 4096).
type FeatureSpinlocks struct {
	// Enabled switches the enlightenment on or off; true by default.
	Enabled *bool `json:"enabled,omitempty"`
	// Retries (JSON spinlocks) is how many times the guest spins before it
	// notifies the hypervisor; at least 4096.
	Retries *uint32 `json:"spinlocks,omitempty"`
}

// FeatureVendorID sets the Hyper-V vendor id string.
type FeatureVendorID struct {
	// Enabled switches the vendor ID on or off; true by default.
	Enabled *bool `json:"enabled,omitempty"`
	// VendorID is the hypervisor vendor ID shown to the guest, at most 12
	// characters.
	VendorID string `json:"vendorid,omitempty"`
}

// SyNICTimer is the Hyper-V synthetic timer.
type SyNICTimer struct {
	// Enabled switches the timers on or off; true by default.
	Enabled *bool `json:"enabled,omitempty"`
	// Direct enables direct-mode synthetic timers.
	Direct *FeatureState `json:"direct,omitempty"`
}

// TLBFlush is the Hyper-V paravirtual TLB flush.
type TLBFlush struct {
	// Enabled switches the enlightenment on or off; true by default.
	Enabled *bool `json:"enabled,omitempty"`
	// Direct enables direct TLB flushes.
	Direct *FeatureState `json:"direct,omitempty"`
	// Extended enables extended TLB flushes.
	Extended *FeatureState `json:"extended,omitempty"`
}

// FeatureHyperv are the Hyper-V enlightenments.
type FeatureHyperv struct {
	// Relaxed disables watchdog timeouts that fire under host load.
	Relaxed *FeatureState `json:"relaxed,omitempty"`
	// VAPIC enables the virtual APIC.
	VAPIC *FeatureState `json:"vapic,omitempty"`
	// Spinlocks configures spinlock retries.
	Spinlocks *FeatureSpinlocks `json:"spinlocks,omitempty"`
	// VPIndex lets the guest identify virtual processors.
	VPIndex *FeatureState `json:"vpindex,omitempty"`
	// Runtime exposes processor time spent in the guest and the hypervisor.
	Runtime *FeatureState `json:"runtime,omitempty"`
	// SyNIC enables the synthetic interrupt controller.
	SyNIC *FeatureState `json:"synic,omitempty"`
	// SyNICTimer enables synthetic timers; needs SyNIC.
	SyNICTimer *SyNICTimer `json:"synictimer,omitempty"`
	// Reset lets the guest reset the virtual machine.
	Reset *FeatureState `json:"reset,omitempty"`
	// VendorID sets the hypervisor vendor ID.
	VendorID *FeatureVendorID `json:"vendorid,omitempty"`
	// Frequencies exposes the TSC and APIC frequencies.
	Frequencies *FeatureState `json:"frequencies,omitempty"`
	// Reenlightenment notifies the guest of TSC frequency changes, as after a
	// migration.
	Reenlightenment *FeatureState `json:"reenlightenment,omitempty"`
	// TLBFlush enables paravirtual TLB flushes.
	TLBFlush *TLBFlush `json:"tlbflush,omitempty"`
	// IPI enables paravirtual inter-processor interrupts.
	IPI *FeatureState `json:"ipi,omitempty"`
	// EVMCS enables the enlightened VMCS, for nested virtualization.
	EVMCS *FeatureState `json:"evmcs,omitempty"`
}
