package virtkit

import (
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Watchdog is an emulated watchdog device: the guest's watchdog driver
// must keep it fed, or QEMU takes its action on the guest. virtkit has
// the i6300esb model (amd64), as KubeVirt's converter writes it; s390x's
// diag288 is refused as NotSupported.
type Watchdog struct {
	// Name identifies the device (its alias in the domain).
	Name string `json:"name"`
	// I6300ESB is Intel's 6300ESB watchdog on the PCI bus.
	I6300ESB *I6300ESBWatchdog `json:"i6300esb,omitempty"`
}

// I6300ESBWatchdog is the i6300esb watchdog's setting.
type I6300ESBWatchdog struct {
	// Action is what a starved watchdog does: poweroff, reset (the
	// default) or shutdown.
	Action WatchdogAction `json:"action,omitempty"`
}

// WatchdogAction is a watchdog's action.
type WatchdogAction string

// Watchdog actions.
const (
	WatchdogActionPoweroff WatchdogAction = "poweroff"
	WatchdogActionReset    WatchdogAction = "reset"
	WatchdogActionShutdown WatchdogAction = "shutdown"
)

// setWatchdogDefaults sets the action KubeVirt's defaulting sets.
func setWatchdogDefaults(d *Devices) {
	if w := d.Watchdog; w != nil && w.I6300ESB != nil && w.I6300ESB.Action == "" {
		w.I6300ESB.Action = WatchdogActionReset
	}
}

// watchdog checks devices.watchdog as KubeVirt's admitter does.
func (v *vmiValidator) watchdog() {
	w := v.spec.Domain.Devices.Watchdog
	if w == nil {
		return
	}
	p := v.sp.Child("domain", "devices", "watchdog")
	if w.Name == "" {
		v.add(field.Required(p.Child("name"), ""))
	} else {
		for _, msg := range validation.IsDNS1123Label(w.Name) {
			v.add(field.Invalid(p.Child("name"), w.Name, msg))
		}
	}
	if w.I6300ESB == nil {
		v.add(field.Required(p, "a watchdog type (i6300esb) is required"))
		return
	}
	switch w.I6300ESB.Action {
	case "", WatchdogActionPoweroff, WatchdogActionReset, WatchdogActionShutdown:
	default:
		v.add(field.NotSupported(p.Child("i6300esb", "action"), w.I6300ESB.Action,
			[]WatchdogAction{WatchdogActionPoweroff, WatchdogActionReset, WatchdogActionShutdown}))
	}
}
