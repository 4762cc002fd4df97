package libvirt

import "log/slog"

// DefaultURI is the connection [New] opens when [Options.URI] is empty.
const DefaultURI = "qemu:///system"

// Options configure [New]. The zero value connects to [DefaultURI].
type Options struct {
	// URI is the libvirt connection URI: "qemu:///system",
	// "qemu+tcp://host:16510/system", "test:///default", ...
	URI string
	// Logger receives debug messages (event-loop errors, late failures of
	// calls that outlived their context). nil discards them.
	Logger *slog.Logger
	// EventBuffer is the capacity of each channel returned by Events; when
	// it is full the oldest event is dropped. 0 means 256.
	EventBuffer int
	// DomainType is the domain type ("kvm", "qemu") whose domain
	// capabilities describe the host CPU in HostCPU; empty is libvirt's
	// default (kvm where usable).
	DomainType string
}

func (o Options) withDefaults() Options {
	if o.URI == "" {
		o.URI = DefaultURI
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.EventBuffer <= 0 {
		o.EventBuffer = 256
	}
	return o
}
