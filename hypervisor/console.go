package hypervisor

import (
	"context"
	"io"
)

// ConsoleOpener opens a running domain's serial console (its first serial
// port) as a byte stream: what the guest writes to the port is read, what
// is written reaches the guest. Closing the stream detaches; the guest keeps
// running. Backends that cannot return an error matching ErrNotSupported.
type ConsoleOpener interface {
	OpenConsole(ctx context.Context, name string) (io.ReadWriteCloser, error)
}

// VNCOpener opens a running domain's VNC display as a byte stream speaking
// RFB (the server side: a VNC client talks to it). Backends without a
// display return an error matching ErrNotSupported that names the call.
type VNCOpener interface {
	OpenVNC(ctx context.Context, name string) (io.ReadWriteCloser, error)
}

// GuestDialer is implemented by backends whose guests are not reached over
// the host's own network stack: the node agent's port-forward dials through
// it instead of dialing the guest's address itself. network is "tcp" or
// "udp", address the guest's HOST:PORT.
type GuestDialer interface {
	DialGuest(ctx context.Context, name, network, address string) (io.ReadWriteCloser, error)
}

// GuestConfig is what the node agent knows of a guest from its VMI that a
// backend modelling the guest's own services needs: the VMI's annotations
// and its cloud-init user-data (inline userData or userDataBase64, decoded).
type GuestConfig struct {
	Annotations map[string]string
	UserData    string
}

// GuestConfigurer is implemented by backends that model the services a
// guest runs (the simulator): before each DialGuest the node agent hands
// them the VMI's GuestConfig. Backends whose guests run real software do
// not implement it.
type GuestConfigurer interface {
	ConfigureGuest(ctx context.Context, name string, cfg GuestConfig) error
}
